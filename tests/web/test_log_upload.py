"""A whole server log attached on the diagnose page: read at its start and end, said so on
the answer's page; refused with a reason when it is too large, not text, or beside a
paste; offered to signed-in users only."""

from __future__ import annotations

import gzip

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from kb.models import StoredDiagnosis
from tests.kb.test_diagnose_command import DECODE_CRASH
from tests.questions_kb import MOE_OUT_OF_RESOURCES_ELSEWHERE, gpu_split_kb

pytestmark = pytest.mark.django_db

REQUEST_LINE = b"[2026-03-02 11:00:00 TP0] Decode batch. #running-req: 3, #token: 1841\n"


# SGLang 0.5.9 prints the settings it runs with (every field) once, at start-up.
SERVER_ARGS = (
    b"[2026-03-02 09:58:00] server_args=ServerArgs(model_path='zai-org/GLM-5-NVFP4', "
    b"tokenizer_path='zai-org/GLM-5-NVFP4', trust_remote_code=True, host='0.0.0.0', "
    b"port=30000, tp_size=8, mem_fraction_static=0.87, kv_cache_dtype='fp8_e4m3', "
    b"quantization='modelopt_fp4', attention_backend='nsa', nsa_decode_backend='flashmla_kv', "
    b"nsa_prefill_backend='flashmla_sparse', disable_cuda_graph=False, log_level='info')\n"
)


def server_log(megabytes: float, head: bytes = b"") -> bytes:
    """Hours of request lines, then the crash."""
    lines = REQUEST_LINE * int(megabytes * 1_000_000 // len(REQUEST_LINE))
    return head + lines + DECODE_CRASH.encode()


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


def test_a_gzipd_log_is_unpacked_and_a_cut_one_refused(starter_kb: None, member: Client) -> None:
    packed = gzip.compress(server_log(3))
    page = member.post(
        "/diagnose/",
        {"log": SimpleUploadedFile("sglang.log.gz", packed), "gpu": "RTX PRO 6000"},
        follow=True,
    ).content.decode()
    assert "sglang.log.gz is 3.0 MB unpacked: read its first 250 KB (the launch)" in page
    assert "Fixes, best first" in page and "--kv-cache-dtype bf16" in page

    cut = SimpleUploadedFile("sglang.log.gz", packed[: len(packed) // 2])
    refused = member.post("/diagnose/", {"log": cut})
    assert refused.status_code == 400
    assert "cut short after" in refused.content.decode()
    assert StoredDiagnosis.objects.count() == 1  # the first only


def test_a_binary_file_is_refused_as_not_text(starter_kb: None, member: Client) -> None:
    log = SimpleUploadedFile("core.dump", bytes(range(256)) * 400)
    refused = member.post("/diagnose/", {"log": log})
    assert refused.status_code == 400
    assert "binary" in refused.content.decode()
    assert not StoredDiagnosis.objects.exists()


def test_a_log_that_printed_its_settings_gets_a_corrected_command_rebuilt_from_them(
    starter_kb: None, member: Client
) -> None:
    """No launch command given: the one rebuilt from SGLang's ServerArgs line at the start
    of the log carries the fix, in the flag names that release prints."""
    log = SimpleUploadedFile("sglang-server.log", server_log(3, head=SERVER_ARGS))
    answered = member.post("/diagnose/", {"log": log, "gpu": "RTX PRO 6000"}, follow=True)

    answer = StoredDiagnosis.objects.get().answer
    assert answer["context"]["found_command"]["source"] == "ServerArgs"
    command = answer["corrected_command"]
    assert command.startswith("python3 -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4")
    assert "--tp-size 8" in command and "--kv-cache-dtype bf16" in command
    assert "--nsa-decode-backend trtllm" in command and "dsa" not in command
    page = answered.content.decode()
    assert "rebuilt from the <code>ServerArgs</code> the server logged" in page
    assert "the logged value may be its own choice:" in page and "mem-fraction-static" in page
    assert "0.5.9 or older, by the flag names its launch command or log uses" in page


def test_answering_a_question_about_an_attached_log_keeps_what_was_read_of_it(
    member: Client,
) -> None:
    gpu_split_kb()
    log = SimpleUploadedFile(
        "server.log", REQUEST_LINE * 40_000 + MOE_OUT_OF_RESOURCES_ELSEWHERE.encode()
    )
    member.post("/diagnose/", {"log": log}, follow=True)
    first = StoredDiagnosis.objects.get()
    assert first.answer["questions"] and first.read_from.startswith("server.log is 2.8 MB")

    # The question's form re-posts the excerpt that was diagnosed, not the file.
    answered = member.post(
        "/diagnose/",
        {"text": first.text, "answer": "gpu.arch=sm_120", "refines": first.slug},
        follow=True,
    )

    second = StoredDiagnosis.objects.exclude(pk=first.pk).get()
    assert second.refines == first and second.answers == {"gpu.arch": "sm_120"}
    assert second.read_from == first.read_from
    assert "From an attached log: server.log is 2.8 MB" in answered.content.decode()


def test_the_page_names_a_flag_the_server_ran_otherwise_than_launched(
    starter_kb: None, member: Client
) -> None:
    """The launch said `--kv-cache-dtype auto --attention-backend flashinfer`; SGLang's
    printout shows fp8_e4m3 and nsa: the seeds' silent overrides, said on the page."""
    launch = (
        "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp-size 8 "
        "--kv-cache-dtype auto --attention-backend flashinfer"
    )
    log = SimpleUploadedFile("sglang-server.log", server_log(1, head=SERVER_ARGS))
    answered = member.post(
        "/diagnose/", {"log": log, "gpu": "RTX PRO 6000", "launch_command": launch}, follow=True
    )

    assert StoredDiagnosis.objects.get().answer["not_as_launched"] == [
        {"flag": "--attention-backend", "launched": "flashinfer", "ran": "nsa"},
        {"flag": "--kv-cache-dtype", "launched": "auto", "ran": "fp8_e4m3"},
    ]
    page = answered.content.decode()
    assert "The server did not run what its launch command said." in page
    assert "launched <code>auto</code>, ran <code>fp8_e4m3</code>" in page
