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
    writer: APIClient, dsa_finding: Finding, name: str, value: str
) -> None:
    response = writer.post(
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
