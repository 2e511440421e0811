"""Secrets in a paste or a launch command never reach the database: the stored paste, its
answer (corrected commands included), the API's reply and a draft made from it hold
[redacted] instead, and the page says what was removed."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from api.models import ApiToken
from kb.models import StoredDiagnosis
from kb.services.diagnosis import start_finding_from_paste
from tests.api.conftest import client_with
from tests.kb.test_diagnose_command import DECODE_CRASH, LAUNCH

pytestmark = pytest.mark.django_db

HF = "hf_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB"
API_KEY = "team-serving-key-4242"
PASTE = f"HF_TOKEN={HF}\n" + DECODE_CRASH
LAUNCH_WITH_KEY = f"{LAUNCH} --api-key {API_KEY}"


def test_the_api_stores_and_answers_without_the_secrets(starter_kb: None) -> None:
    _, raw = ApiToken.issue(User.objects.create_user("bot-owner"), ["read"])
    request = {"traceback": PASTE, "launch_command": LAUNCH_WITH_KEY, "gpu": "RTX PRO 6000"}
    reply = client_with(raw).post("/api/v1/diagnose/", request, format="json")

    assert reply.status_code == 200
    body = reply.json()
    assert body["scrubbed"] == ["a Hugging Face token", "an --api-key value"]
    assert body["fixes"] and "--api-key [redacted]" in body["corrected_command"]
    record = StoredDiagnosis.objects.get()
    stored = json.dumps([record.text, record.launch_command, record.answer])
    for secret in (HF, API_KEY):
        assert secret not in reply.content.decode() and secret not in stored


def test_the_page_says_what_was_removed_and_a_draft_holds_no_secret(starter_kb: None) -> None:
    member = Client()
    author = User.objects.create_user("dana", password="pw-long-enough-1")
    member.force_login(author)
    page = member.post(
        "/diagnose/", {"text": PASTE, "launch_command": LAUNCH_WITH_KEY}, follow=True
    ).content.decode()

    assert "before storing: a Hugging Face token, an --api-key value." in page
    assert HF not in page and API_KEY not in page
    record = StoredDiagnosis.objects.get()
    draft = start_finding_from_paste(record.text, user=author, started_from=record)
    samples = [sample.text for sample in draft.samples.all()]
    assert samples and all(HF not in text and "[redacted]" in text for text in samples)


def test_a_paste_without_secrets_is_stored_as_pasted(starter_kb: None) -> None:
    Client().post("/diagnose/", {"text": DECODE_CRASH, "launch_command": LAUNCH})
    record = StoredDiagnosis.objects.get()
    assert record.text == DECODE_CRASH and record.launch_command == LAUNCH
    assert record.scrubbed == []
