"""`manage.py diagnose` on the starter knowledge base, as an engineer mid-incident uses it."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from kb.models import Fix
from kb.services.diagnosis import decide_signature, diagnose, record_feedback

pytestmark = pytest.mark.django_db

# The decode crash as one rank printed it on another machine: other paths, line numbers, prefixes.
DECODE_CRASH = """\
[2026-03-02 11:41:07 TP5] Scheduler hit an exception: Traceback (most recent call last):
[2026-03-02 11:41:07 TP5]   File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2711, in run_scheduler_process
[2026-03-02 11:41:07 TP5]     scheduler.event_loop_overlap()
[2026-03-02 11:41:07 TP5]   File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler_output_processor_mixin.py", line 301, in process_batch_result_decode
[2026-03-02 11:41:07 TP5]     next_token_ids = next_token_ids.tolist()
[2026-03-02 11:41:07 TP5] RuntimeError: CUDA error: device-side assert triggered
/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:112: _assert_async_cuda_kernel: block: [0,0,0], thread: [0,0,0] Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed.
"""

TRITON_ASSERT = """\
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/attention/triton_backend.py", line 1187, in forward_decode
    forward_batch.token_to_kv_pool.set_kv_buffer(
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/mem_cache/memory_pool.py", line 1544, in set_kv_buffer
    assert not self.nsa_kv_cache_store_fp8
AssertionError
"""

LAUNCH = (
    "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp-size 8 "
    "--quantization modelopt_fp4 --kv-cache-dtype fp8_e4m3 --attention-backend flashinfer"
)


def run(*args: str, stdin: str | None = None) -> str:
    out = StringIO()
    call_command("diagnose", *args, stdout=out)
    return out.getvalue()


def changes_of(fix: dict) -> dict[str, str | None]:
    return {c["name"]: c["value"] for c in fix["fix"]["changes"] if c["action"] == "set_flag"}


def test_it_puts_the_explicit_kv_dtype_override_first_for_the_decode_crash(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "crash.txt"
    paste.write_text(DECODE_CRASH)
    result = json.loads(run(str(paste), "--json", "--gpu", "RTX PRO 6000", "--launch-cmd", LAUNCH))
    assert result["match"] in ("known", "similar")
    first = changes_of(result["fixes"][0])
    assert first.get("kv-cache-dtype") == "bf16"
    assert first.get("dsa-decode-backend") not in (None, "flashmla_kv", "flashmla_auto")
    unhelpful = [changes_of(item) for item in result["not_helpful"]]
    assert any(c.get("attention-backend") == "triton" for c in unhelpful)


def test_it_matches_the_triton_assertion_from_another_install(starter_kb: None) -> None:
    result = diagnose(TRITON_ASSERT).to_dict()
    assert result["match"] == "known"
    assert "nsa_kv_cache_store_fp8" in json.dumps(result["signature"])
    assert result["fixes"]


def test_the_human_readable_output_names_the_fix_and_what_not_to_try(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "crash.txt"
    paste.write_text(DECODE_CRASH)
    text = run(str(paste), "--gpu", "RTX PRO 6000", "--launch-cmd", LAUNCH)
    assert "--kv-cache-dtype bf16" in text
    assert "triton" in text


def test_it_says_no_known_match_for_an_unrelated_error(starter_kb: None, tmp_path: Path) -> None:
    paste = tmp_path / "other.txt"
    paste.write_text(
        'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n'
        "    import yaml\nModuleNotFoundError: No module named 'yaml'\n"
    )
    result = json.loads(run(str(paste), "--json"))
    assert result["match"] == "none"
    assert result["fixes"] == []


def test_it_refuses_binary_garbage_with_a_clear_message(starter_kb: None, tmp_path: Path) -> None:
    paste = tmp_path / "garbage.bin"
    paste.write_bytes(bytes(range(256)) * 100)
    with pytest.raises(CommandError) as error:
        run(str(paste))
    assert "binary" in str(error.value).lower() or "not text" in str(error.value).lower()


def test_it_refuses_a_50_mb_paste(starter_kb: None, tmp_path: Path) -> None:
    paste = tmp_path / "huge.log"
    paste.write_bytes(b"INFO all good\n" * (50 * 1024 * 1024 // 14))
    with pytest.raises(CommandError, match="larger than"):
        run(str(paste))


def test_feedback_that_a_fix_did_not_help_moves_it_down(starter_kb: None) -> None:
    before = diagnose(DECODE_CRASH, gpu="RTX PRO 6000", launch_command=LAUNCH).to_dict()
    assert len(before["fixes"]) >= 2
    first_id = before["fixes"][0]["fix"]["id"]
    for _ in range(5):
        record_feedback(Fix.objects.get(pk=first_id), helped=False, channel="cli")
    after = diagnose(DECODE_CRASH, gpu="RTX PRO 6000", launch_command=LAUNCH).to_dict()
    ranks = {item["fix"]["id"]: item["rank"] for item in after["fixes"]}
    assert ranks.get(first_id, 99) > 1


def test_a_reviewer_split_stops_a_fingerprint_matching_that_finding(starter_kb: None) -> None:
    before = diagnose(TRITON_ASSERT).to_dict()
    finding_id = before["fixes"][0]["finding"]["id"]
    fingerprint = before["signature"]["fingerprint"]
    from kb.models import Finding

    decide_signature(fingerprint, Finding.objects.get(pk=finding_id), decision="split")
    after = diagnose(TRITON_ASSERT).to_dict()
    assert finding_id not in {item["finding"]["id"] for item in after["fixes"]}
