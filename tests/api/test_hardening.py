"""The API as an attacker would use it: what each token scope may change, bad input, abuse."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from kb.models import Finding, Host, ValidationRun
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

FINDINGS = "/api/v1/findings/"
RUNS = "/api/v1/validation-runs/"


@pytest.mark.parametrize(
    "name, value",
    [
        ("LD_PRELOAD", "/tmp/evil.so"),
        ("PYTHONPATH", "/tmp/evil"),
        ("PYTHONWARNINGS", "ignore::antigravity.Warning"),
        ("BROWSER", "perlthanks"),
        ("PERL5OPT", "-Mbase;exit"),
    ],
)
def test_a_fix_cannot_set_a_variable_that_runs_code_on_a_host(
    publisher: APIClient, dsa_finding: Finding, name: str, value: str
) -> None:
    response = publisher.post(
        f"{FINDINGS}{dsa_finding.pk}/fixes/",
        {
            "summary": "x",
            "outcome": "resolves",
            "changes": [{"action": "set_env", "name": name, "value": value}],
        },
        format="json",
    )
    error = assert_error(response, 400, "invalid")
    assert f"{name} is not a vetted serving knob" in error["message"]
    assert dsa_finding.fixes.count() == 2


def test_a_validation_run_of_a_draft_finding_is_refused_and_nothing_is_queued(
    validator: APIClient, dsa_finding: Finding
) -> None:
    Finding.objects.filter(pk=dsa_finding.pk).update(status=Finding.Status.DRAFT)
    Host.objects.create(name="box", address="10.200.0.9", username="gpu")
    fix = dsa_finding.fixes.first()
    response = validator.post(RUNS, {"fix_id": fix.pk, "host": "box"}, format="json")
    error = assert_error(response, 400, "input_rejected")
    assert "a reviewer must publish it" in error["message"]
    assert not ValidationRun.objects.exists()


def test_the_run_request_shows_the_command_that_will_run(
    validator: APIClient, dsa_finding: Finding, django_capture_on_commit_callbacks, monkeypatch
) -> None:
    from config.celery import app

    monkeypatch.setattr(app, "send_task", lambda *a, **k: type("R", (), {"id": "t"})())
    Host.objects.create(name="box", address="10.200.0.9", username="gpu", env={"PATH": "/bin"})
    fix = dsa_finding.fixes.first()
    with django_capture_on_commit_callbacks(execute=True):
        response = validator.post(RUNS, {"fix_id": fix.pk, "host": "box"}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["command"] == (
        "python3 -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --host 127.0.0.1 "
        "--port '<free port>' --kv-cache-dtype bf16\n"
        "# after exporting box's own environment: PATH"
    )


# ---------------------------------------------------------------- bad input gets a 4xx


@pytest.mark.parametrize("param", ["q", "gpu", "arch", "model", "framework", "flag"])
def test_a_nul_in_a_search_filter_is_a_clear_400(reader: APIClient, param: str) -> None:
    response = reader.get(FINDINGS, {param: "sm\x00120"})
    assert response.status_code == 400, response.content[:300]


def test_a_limit_beyond_any_integer_is_refused_or_bounded(
    reader: APIClient, dsa_finding: Finding
) -> None:
    huge = "99999999999999999999"
    # The findings list (cursor pages) says which limits it takes.
    refused = assert_error(reader.get(FINDINGS, {"limit": huge}), 400, "invalid")
    assert "limit" in refused["fields"]
    # Lists with offset pages give at most 200 rows, and nothing past the end.
    hardware = reader.get("/api/v1/hardware/", {"limit": huge})
    assert hardware.status_code == 200 and len(hardware.json()["results"]) == 1
    past = reader.get("/api/v1/hardware/", {"offset": huge})
    assert past.status_code == 200 and past.json()["results"] == []


def test_an_answer_to_a_question_never_asked_is_a_400(reader: APIClient) -> None:
    response = reader.post(
        "/api/v1/diagnose/",
        {"traceback": "AssertionError: boom", "answers": {"gpu.colour": "green"}},
        format="json",
    )
    assert "answers" in assert_error(response, 400, "invalid")["fields"]


def test_json_nested_a_hundred_thousand_deep_is_a_400(reader: APIClient) -> None:
    body = "[" * 100_000 + "]" * 100_000
    response = reader.post("/api/v1/diagnose/", body, content_type="application/json")
    assert "nested too deeply" in assert_error(response, 400, "parse_error")["message"]


def test_feedback_context_is_bounded(reader: APIClient, dsa_finding: Finding) -> None:
    fix = dsa_finding.fixes.first()
    response = reader.post(
        "/api/v1/feedback/",
        {"fix_id": fix.pk, "helped": True, "context": {"blob": "x" * 20_000}},
        format="json",
    )
    assert "context" in assert_error(response, 400, "invalid")["fields"]


def test_a_non_ascii_slack_signature_is_refused_not_a_crash(settings) -> None:
    settings.SLACK_SIGNING_SECRET = "s3cret"
    import time

    response = APIClient().post(
        "/api/v1/slack/commands/",
        "text=boom",
        content_type="application/x-www-form-urlencoded",
        HTTP_X_SLACK_REQUEST_TIMESTAMP=str(int(time.time())),
        HTTP_X_SLACK_SIGNATURE="v0=\u00e9\u00e9\u00e9",
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "bad_signature"


# ---------------------------------------------------------------- what `write` may change


def test_a_write_token_creates_drafts_and_cannot_publish(
    writer: APIClient, publisher: APIClient, dsa_finding: Finding
) -> None:
    created = writer.post(FINDINGS, {"title": "Fresh finding"}, format="json")
    assert created.status_code == 201 and created.json()["status"] == "draft"
    url = f"{FINDINGS}{created.json()['id']}/"
    assert_error(writer.patch(url, {"status": "published"}, format="json"), 403)
    assert_error(writer.post(FINDINGS, {"title": "y", "status": "published"}, format="json"), 403)
    assert Finding.objects.get(pk=created.json()["id"]).status == "draft"
    fixes = f"{FINDINGS}{dsa_finding.pk}/fixes/"
    body = {"summary": "x", "outcome": "resolves", "changes": []}
    assert_error(writer.post(fixes, body, format="json"), 403)
    assert publisher.patch(url, {"status": "published"}, format="json").status_code == 200
    assert publisher.post(fixes, body, format="json").status_code == 201
