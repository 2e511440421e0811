"""POST /api/v1/diagnose/ answers with the diagnosis object, or Slack blocks; bad input is a 4xx."""

from __future__ import annotations

import json
import time

import pytest
from rest_framework.test import APIClient

from api.slack import HELPED, NOT_HELPED, VALIDATE
from kb.models import Finding, FixFeedback
from tests.api.conftest import DSA_ASSERT, assert_error

pytestmark = pytest.mark.django_db

DIAGNOSE = "/api/v1/diagnose/"


def diagnose(client: APIClient, body: object, **extra: str):
    return client.post(DIAGNOSE, body, format="json", **extra)


def test_it_answers_with_the_diagnosis_object(reader: APIClient, dsa_finding: Finding) -> None:
    from kb.services.diagnosis import diagnose as service

    response = diagnose(reader, {"traceback": DSA_ASSERT, "gpu": "RTX PRO 6000"})
    assert response.status_code == 200, response.content[:500]
    body = response.json()
    assert body == json.loads(json.dumps(service(DSA_ASSERT, gpu="RTX PRO 6000").to_dict()))
    assert {"match", "fixes", "not_helpful", "questions"} <= set(body)
    assert body["fixes"][0]["fix"]["summary"] == "Use a bf16 KV cache"


def test_it_answers_with_slack_blocks_on_request(reader: APIClient, dsa_finding: Finding) -> None:
    by_query = reader.post(f"{DIAGNOSE}?format=slack", {"traceback": DSA_ASSERT}, format="json")
    by_accept = diagnose(
        reader, {"traceback": DSA_ASSERT}, HTTP_ACCEPT="application/vnd.slack.blocks+json"
    )
    for response in (by_query, by_accept):
        assert response.status_code == 200, response.content[:300]
        blocks = response.json()["blocks"]
        buttons = [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
        assert buttons[:3] == [HELPED, NOT_HELPED, VALIDATE]
        assert "bf16" in json.dumps(blocks)


def test_it_says_so_when_nothing_matches(reader: APIClient, dsa_finding: Finding) -> None:
    body = diagnose(reader, {"traceback": "OSError: [Errno 98] Address already in use"}).json()
    assert body["match"] == "none" and body["fixes"] == []


def test_it_needs_a_traceback(reader: APIClient) -> None:
    error = assert_error(diagnose(reader, {"gpu": "H100"}), 400, "invalid")
    assert error["message"] == "traceback: This field is required."


@pytest.mark.parametrize(
    "body",
    [
        {"traceback": ""},
        {"traceback": "   \n  "},
        {"traceback": None},
        {"traceback": {"text": "x"}},
        {"traceback": "x", "answers": ["gpu.arch", "sm_120"]},
        {"traceback": "x", "gpu": {"name": "H100"}},
        {"traceback": "x", "launch_command": ["python", "-m", "sglang"]},
        ["traceback"],
        "just a string",
    ],
)
def test_it_explains_a_malformed_body(reader: APIClient, body: object) -> None:
    assert_error(diagnose(reader, body), 400)


def test_it_refuses_binary_garbage(reader: APIClient) -> None:
    garbage = bytes(range(256)) * 64
    response = reader.post(DIAGNOSE, garbage, content_type="application/json")
    assert_error(response, 400)
    response = reader.post(DIAGNOSE, garbage, content_type="application/octet-stream")
    assert_error(response, 415)
    text = garbage.decode("latin-1").replace("\x00", "")
    assert_error(diagnose(reader, {"traceback": text}), 400)


def test_it_refuses_nul_bytes(reader: APIClient) -> None:
    assert_error(diagnose(reader, {"traceback": "Traceback\x00\x00"}), 400)


def test_it_refuses_a_50_mb_traceback_quickly(reader: APIClient) -> None:
    started = time.monotonic()
    response = diagnose(reader, {"traceback": "x" * 50_000_000})
    assert_error(response, 413, "payload_too_large")
    assert time.monotonic() - started < 10


def test_it_refuses_a_paste_over_the_limit(reader: APIClient, settings) -> None:
    settings.FIXGRAPH_MAX_PASTE_BYTES = 1_000
    error = assert_error(diagnose(reader, {"traceback": "RuntimeError: x\n" * 200}), 413)
    assert "1,000 bytes" in error["message"]


def test_feedback_becomes_evidence(reader: APIClient, dsa_finding: Finding) -> None:
    fix = dsa_finding.fixes.first()
    response = reader.post(
        "/api/v1/feedback/",
        {
            "fix_id": fix.pk,
            "helped": True,
            "fingerprint": "abc",
            "comment": "worked on 8 GPUs",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    feedback = FixFeedback.objects.get()
    assert (feedback.fix, feedback.helped, feedback.channel) == (fix, True, "api")
    assert feedback.created_by is not None


@pytest.mark.parametrize(
    "body",
    [
        {"fix_id": 999999, "helped": True},
        {"fix_id": "one", "helped": True},
        {"helped": True},
        {"fix_id": 1, "helped": "perhaps"},
        {"fix_id": 1, "helped": True, "context": "not an object"},
    ],
)
def test_feedback_explains_a_bad_body(reader: APIClient, body: dict, dsa_finding) -> None:
    assert_error(reader.post("/api/v1/feedback/", body, format="json"), 400, "invalid")
