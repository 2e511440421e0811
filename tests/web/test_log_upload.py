"""A whole server log attached on the diagnose page: read at its start and end, said so on
the answer's page; refused with a reason when it is too large, not text, or beside a
paste; offered to signed-in users only."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from kb.models import StoredDiagnosis
from tests.kb.test_diagnose_command import DECODE_CRASH

pytestmark = pytest.mark.django_db

REQUEST_LINE = b"[2026-03-02 11:00:00 TP0] Decode batch. #running-req: 3, #token: 1841\n"


def server_log(megabytes: float) -> bytes:
    """Hours of request lines, then the crash."""
    return REQUEST_LINE * int(megabytes * 1_000_000 // len(REQUEST_LINE)) + DECODE_CRASH.encode()


@pytest.fixture
def member() -> Client:
    client = Client()
    client.force_login(User.objects.create_user("carol", password="pw-long-enough-1"))
    return client


def test_a_signed_in_user_attaches_a_log_and_the_page_says_what_was_read(
    starter_kb: None, member: Client
) -> None:
    form = member.get("/diagnose/").content.decode()
    assert 'enctype="multipart/form-data"' in form and 'type="file" name="log"' in form

    log = SimpleUploadedFile("sglang-server.log", server_log(6), content_type="text/plain")
    answered = member.post("/diagnose/", {"log": log, "gpu": "RTX PRO 6000"}, follow=True)

    page = answered.content.decode()
    assert answered.status_code == 200
    assert "From an attached log: sglang-server.log is 6.0 MB: read its first 250 KB" in page
    assert "Fixes, best first" in page and "--kv-cache-dtype bf16" in page
    record = StoredDiagnosis.objects.get()
    assert record.text.endswith(DECODE_CRASH) and len(record.text.encode()) <= 2_000_000


def test_anonymous_users_are_told_to_sign_in_to_attach_a_log(starter_kb: None) -> None:
    client = Client()
    form = client.get("/diagnose/").content.decode()
    assert 'type="file"' not in form and "sign in</a> to attach it" in form

    log = SimpleUploadedFile("server.log", DECODE_CRASH.encode())
    refused = client.post("/diagnose/", {"log": log})
    assert refused.status_code == 400
    assert "Paste the traceback or the error line." in refused.content.decode()
    assert not StoredDiagnosis.objects.exists()


def test_a_log_beside_a_paste_is_refused(starter_kb: None, member: Client) -> None:
    log = SimpleUploadedFile("server.log", DECODE_CRASH.encode())
    refused = member.post("/diagnose/", {"log": log, "text": "RuntimeError: boom"})
    assert refused.status_code == 400
    assert "Paste the error or attach the log, not both." in refused.content.decode()


def test_a_log_over_the_limit_is_refused_and_nothing_is_stored(
    starter_kb: None, member: Client, settings
) -> None:
    settings.FIXGRAPH_MAX_LOG_BYTES = 50_000
    log = SimpleUploadedFile("server.log", server_log(0.2))
    refused = member.post("/diagnose/", {"log": log})
    assert refused.status_code == 413
    assert "The log is larger than 50 KB" in refused.content.decode()
    assert not StoredDiagnosis.objects.exists()


def test_a_binary_file_is_refused_as_not_text(starter_kb: None, member: Client) -> None:
    log = SimpleUploadedFile("core.dump", bytes(range(256)) * 400)
    refused = member.post("/diagnose/", {"log": log})
    assert refused.status_code == 400
    assert "binary" in refused.content.decode()
    assert not StoredDiagnosis.objects.exists()
