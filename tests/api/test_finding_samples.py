"""A finding written over the API carries its error text: samples given with it, added
later, read back; the next paste of that error is answered by it."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from kb.models import ErrorSample, Finding
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

FINDINGS = "/api/v1/findings/"
PASTE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/layers/moe.py", '
    "line 88, in create_weights\n"
    "    check_block(block)\n"
    "ValueError: Unsupported FP8 block size 64 for the marlin MoE kernel on sm_86\n"
)
BOT_FINDING = {
    "title": "Marlin MoE refuses FP8 blocks of 64 on Ampere",
    "cause": "The Marlin MoE kernel takes only 128-wide FP8 blocks on sm_86.",
    "conditions": [{"key": "framework", "value": "vllm"}],
    "samples": [PASTE],
    "fixes": [
        {
            "summary": "Serve the MoE layers with Triton",
            "outcome": "resolves",
            "changes": [{"action": "set_env", "name": "VLLM_USE_TRITON_MOE", "value": "1"}],
        }
    ],
}


def test_a_bots_finding_keeps_its_paste_and_fixes_and_then_answers_that_paste(
    publisher: APIClient,
) -> None:
    created = publisher.post(FINDINGS, {**BOT_FINDING, "status": "published"}, format="json")

    assert created.status_code == 201, created.content
    body = created.json()
    assert "samples" not in body  # write-only: read them at /samples/
    assert [fix["summary"] for fix in body["fixes"]] == ["Serve the MoE layers with Triton"]
    samples = publisher.get(f"{FINDINGS}{body['id']}/samples/").json()
    assert [(s["text"], s["exception_type"]) for s in samples] == [(PASTE, "ValueError")]

    answer = publisher.post("/api/v1/diagnose/", {"traceback": PASTE}, format="json").json()
    assert answer["match"] == "known"
    assert answer["fixes"][0]["finding"]["id"] == body["id"]


def test_a_sample_is_added_once_and_a_published_findings_needs_the_publish_scope(
    writer: APIClient, publisher: APIClient
) -> None:
    draft = writer.post(FINDINGS, {"title": "Marlin refuses the block size"}, format="json")
    samples_url = f"{FINDINGS}{draft.json()['id']}/samples/"

    first = writer.post(samples_url, {"text": PASTE}, format="json")
    again = writer.post(samples_url, {"text": PASTE}, format="json")

    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert ErrorSample.objects.filter(text=PASTE).count() == 1
    Finding.objects.filter(pk=draft.json()["id"]).update(status=Finding.Status.PUBLISHED)
    other = PASTE.replace("64", "32")
    assert_error(writer.post(samples_url, {"text": other}, format="json"), 403)
    finding_url = f"{FINDINGS}{draft.json()['id']}/"
    assert_error(writer.patch(finding_url, {"samples": [other]}, format="json"), 403)
    assert publisher.post(samples_url, {"text": other}, format="json").status_code == 201
    assert ErrorSample.objects.filter(text=other).count() == 1


@pytest.mark.parametrize(
    ("field", "value", "status"),
    [
        ("sample", [PASTE], 400),  # a misspelt field is refused, not dropped
        ("samples", ["\x00\x01\x02 binary"], 400),
        ("samples", ["   "], 400),
    ],
)
def test_it_refuses_what_it_cannot_keep_and_stores_nothing(
    writer: APIClient, field: str, value: object, status: int
) -> None:
    response = writer.post(FINDINGS, {"title": "Anything", field: value}, format="json")

    error = assert_error(response, status, "invalid")
    assert field in error["fields"]
    assert not Finding.objects.exists() and not ErrorSample.objects.exists()


def test_a_sample_over_the_paste_limit_is_413(writer: APIClient, settings) -> None:
    settings.FIXGRAPH_MAX_PASTE_BYTES = 1_000
    response = writer.post(FINDINGS, {"title": "Big", "samples": ["x" * 2_000]}, format="json")

    assert_error(response, 413, "payload_too_large")
    assert not Finding.objects.exists()


def test_fixes_are_changed_through_their_own_endpoint_once_a_finding_exists(
    writer: APIClient,
) -> None:
    draft = writer.post(FINDINGS, BOT_FINDING, format="json").json()

    response = writer.patch(
        f"{FINDINGS}{draft['id']}/", {"fixes": BOT_FINDING["fixes"]}, format="json"
    )

    error = assert_error(response, 400, "invalid")
    assert f"/findings/{draft['id']}/fixes/" in error["fields"]["fixes"][0]
    assert Finding.objects.get(pk=draft["id"]).fixes.count() == 1
