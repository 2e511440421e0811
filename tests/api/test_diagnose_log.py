"""POST /api/v1/diagnose/ with a whole log (multipart `log`) instead of `traceback`: with a
token, within the limit, one or the other; the answer says what was read."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.api.conftest import TokenFactory, client_with
from tests.kb.test_diagnose_command import DECODE_CRASH
from tests.web.test_log_upload import server_log

pytestmark = pytest.mark.django_db


def test_a_token_sends_a_log_and_the_answer_says_what_was_read(
    starter_kb: None, make_token: TokenFactory
) -> None:
    log = SimpleUploadedFile("vllm.log", server_log(3))
    answer = client_with(make_token("read")).post(
        "/api/v1/diagnose/", {"log": log, "gpu": "RTX PRO 6000"}, format="multipart"
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["read_from"].startswith("vllm.log is 3.0 MB: read its first 250 KB (the launch)")
    assert body["fixes"]


def test_a_file_sent_as_traceback_is_read_as_the_log(starter_kb: None, reader: APIClient) -> None:
    """`curl -F traceback=@server.log` is the common slip for `-F log=@server.log`."""
    log = SimpleUploadedFile("server.log", server_log(3))
    answer = reader.post(
        "/api/v1/diagnose/", {"traceback": log, "gpu": "RTX PRO 6000"}, format="multipart"
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["read_from"].startswith("server.log is 3.0 MB: read its first 250 KB")
    assert body["fixes"]
    both = reader.post(
        "/api/v1/diagnose/",
        {"traceback": SimpleUploadedFile("a.log", b"x"), "log": SimpleUploadedFile("b.log", b"y")},
        format="multipart",
    )
    assert both.status_code == 400 and "not both" in both.content.decode()


def test_a_paste_says_nothing_was_read_from_a_log(starter_kb: None, reader: APIClient) -> None:
    answer = reader.post("/api/v1/diagnose/", {"traceback": "RuntimeError: boom"}, format="json")
    assert answer.status_code == 200 and answer.json()["read_from"] == ""


def test_without_a_token_a_log_is_refused(starter_kb: None, settings) -> None:
    settings.FIXGRAPH_ALLOW_ANONYMOUS_API = True
    log = SimpleUploadedFile("vllm.log", server_log(0.1))
    refused = APIClient().post("/api/v1/diagnose/", {"log": log}, format="multipart")
    assert refused.status_code == 403
    assert "needs an API token" in refused.json()["error"]["message"]


def test_a_log_and_a_traceback_together_are_refused(starter_kb: None, reader: APIClient) -> None:
    log = SimpleUploadedFile("vllm.log", server_log(0.1))
    refused = reader.post(
        "/api/v1/diagnose/", {"log": log, "traceback": "RuntimeError: boom"}, format="multipart"
    )
    assert refused.status_code == 400
    assert "not both" in refused.content.decode()


def test_a_log_over_the_limit_is_413(starter_kb: None, reader: APIClient, settings) -> None:
    settings.FIXGRAPH_MAX_LOG_BYTES = 50_000
    log = SimpleUploadedFile("vllm.log", server_log(0.2))
    refused = reader.post("/api/v1/diagnose/", {"log": log}, format="multipart")
    assert refused.status_code == 413
    assert "larger than 50 KB" in refused.json()["error"]["message"]


def test_a_launch_command_inside_the_paste_is_the_one_corrected(
    starter_kb: None, reader: APIClient
) -> None:
    pasted = (
        "$ python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8 "
        "--kv-cache-dtype fp8_e4m3 --dsa-decode-backend flashmla_kv\n" + DECODE_CRASH
    )
    answer = reader.post(
        "/api/v1/diagnose/", {"traceback": pasted, "gpu": "RTX PRO 6000"}, format="json"
    ).json()

    found = answer["context"]["found_command"]
    assert found["source"] == "paste" and found["text"].startswith("python -m sglang")
    assert answer["corrected_command"] == (
        "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8 "
        "--kv-cache-dtype bf16 --dsa-decode-backend trtllm --dsa-prefill-backend trtllm"
    )
    typed = reader.post(
        "/api/v1/diagnose/",
        {"traceback": pasted, "launch_command": "sglang serve --model-path m"},
        format="json",
    ).json()
    assert typed["context"]["found_command"] is None
    assert typed["corrected_command"].startswith("sglang serve --model-path m ")


def test_a_damaged_archive_is_a_400_that_says_why(starter_kb: None, reader: APIClient) -> None:
    damaged = SimpleUploadedFile("vllm.log.gz", b"\x1f\x8b" + b"not deflate data" * 10)
    answer = reader.post("/api/v1/diagnose/", {"log": damaged}, format="multipart")
    assert answer.status_code == 400
    assert "cannot be unpacked" in answer.content.decode()
