"""The user's own incidents, end to end through `manage.py ingest` and `manage.py diagnose`.

tests/fixtures/incidents holds our own retelling of the five GLM-5-NVFP4 / RTX PRO 6000
Blackwell write-ups (same facts, our words). Ingested, they make one finding per symptom,
each attempt on the symptom it was tried against; published, they answer the two crashes
the way the write-ups taught.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from kb.models import Finding

pytestmark = pytest.mark.django_db

INCIDENTS = Path(__file__).resolve().parents[1] / "fixtures" / "incidents"
BLACKWELL = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
TRITON_LAUNCH = (
    "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8 "
    "--quantization modelopt_fp4 --attention-backend triton --sampling-backend pytorch "
    "--kv-cache-dtype fp8_e4m3 --mem-fraction-static 0.88"
)
# The assertion as another machine printed it: other install path and line numbers.
NSA_ASSERT = """\
[2026-03-04 09:12:44 TP2] Scheduler hit an exception: Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/layers/attention/triton_backend.py", line 1033, in forward_decode
    forward_batch.token_to_kv_pool.set_kv_buffer(
  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/mem_cache/memory_pool.py", line 1510, in set_kv_buffer
    assert not self.nsa_kv_cache_store_fp8
AssertionError
"""


def ingest() -> str:
    out = StringIO()
    call_command("load_vocabulary", verbosity=0)
    call_command("ingest", str(INCIDENTS), stdout=out)
    return out.getvalue()


def publish_all() -> None:
    """What a reviewer does after reading each draft against its source."""
    for finding in Finding.objects.filter(status=Finding.Status.DRAFT):
        finding.status = Finding.Status.PUBLISHED
        finding.save()


def diagnose(paste: str, *args: str, tmp_path: Path) -> str:
    path = tmp_path / "paste.txt"
    path.write_text(paste)
    out = StringIO()
    call_command("diagnose", str(path), *args, stdout=out)
    return out.getvalue()


def attempts(finding: Finding) -> dict[str, str]:
    return {fix.summary: fix.outcome for fix in finding.fixes.all()}


def finding_with_sample(word: str) -> Finding:
    return Finding.objects.filter(samples__text__contains=word).distinct().get()


def test_the_five_write_ups_make_one_finding_per_symptom_with_several_sources() -> None:
    report = ingest()

    assert "5 drafts wait at /review/" in report
    oom = Finding.objects.get(kind="oom")
    assertion = finding_with_sample("nsa_kv_cache_store_fp8")
    decode = Finding.objects.get(title__icontains="device-side assert")
    assert oom.sources.count() == 2
    assert assertion.sources.count() == 2
    assert decode.sources.count() >= 3
    assert Finding.objects.count() == 5


def test_each_attempt_sits_on_the_symptom_it_was_tried_against() -> None:
    ingest()

    oom = Finding.objects.get(kind="oom")
    assert set(attempts(oom).values()) == {"resolves"}
    assert all("mem-fraction-static" in summary for summary in attempts(oom))
    assertion = attempts(finding_with_sample("nsa_kv_cache_store_fp8"))
    assert assertion["Switch `--kv-cache-dtype` from fp8_e4m3 to auto"] == "proposed"
    assert not any("mem-fraction-static" in summary for summary in assertion)
    slow = Finding.objects.get(kind="slow")
    assert attempts(slow)["Patch `flashinfer_mla_backend.py`"] == "worse"
    assert attempts(slow)["Set `--attention-backend` to trtllm_mla"] == "proposed"
    build = finding_with_sample("Ninja build failed")
    assert attempts(build)["Revert the patch"] == "resolves"


def test_the_nsa_assert_gets_the_kv_dtype_change_first_and_triton_known_not_to_help(
    tmp_path: Path,
) -> None:
    ingest()
    publish_all()

    answer = diagnose(
        NSA_ASSERT, "--gpu", BLACKWELL, "--launch-cmd", TRITON_LAUNCH, tmp_path=tmp_path
    )

    fixes, _, not_helpful = answer.partition("Known NOT to help:")
    first = fixes.split("\n2. ", 1)[0]
    assert answer.startswith("Known issue: AssertionError")
    assert "--kv-cache-dtype" in first or "--dsa-decode-backend trtllm" in first
    assert "--attention-backend triton" in not_helpful
    # (The corrected command above the fixes keeps the user's own --mem-fraction-static.)
    assert "mem-fraction-static" not in fixes.partition("\n1. ")[2]


def test_an_oom_while_capturing_cuda_graphs_gets_the_memory_fraction_first(
    tmp_path: Path,
) -> None:
    ingest()
    publish_all()

    answer = diagnose(
        "torch.OutOfMemoryError: CUDA out of memory while capturing CUDA graphs\n",
        "--gpu", BLACKWELL,
        tmp_path=tmp_path,
    )  # fmt: skip

    assert "\n1. Lower `--mem-fraction-static` from 0.95 to 0.88" in answer


# How the real write-ups tell it, in our words: the OOM only as a noun phrase, and a sentence
# that names the OOM to rule it out beside the crash it is about.
TOLD_IN_WORDS = """\
# Mixtral on two L40S

We serve Mixtral-8x7B-Instruct with SGLang on two NVIDIA L40S. The first start hit an OOM
during CUDA graph capture; lowering --mem-fraction-static from 0.9 to 0.8 cured that.

The first request then crashed the server:

```
RuntimeError: CUDA error: device-side assert triggered
```

This was a device-side assert rather than an out-of-memory error, so we relaunched with the
sampling backend set by --sampling-backend pytorch. That did not change anything.
"""


def test_a_failure_told_only_in_words_and_one_ruled_out_answer_as_the_write_up_taught(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "mixtral-l40s.md").write_text(TOLD_IN_WORDS)
    call_command("load_vocabulary", verbosity=0)
    call_command("ingest", str(folder), stdout=StringIO())
    publish_all()

    oom = Finding.objects.get(kind="oom")
    assert oom.title.startswith("Out of memory while capturing CUDA graphs: ")
    crash = finding_with_sample("device-side assert")
    assert not any("mem-fraction-static" in summary for summary in attempts(crash))

    answer = diagnose(
        "torch.OutOfMemoryError: CUDA out of memory while capturing CUDA graphs\n",
        tmp_path=tmp_path,
    )
    assert "\n1. Lower `--mem-fraction-static` from 0.9 to 0.8" in answer
