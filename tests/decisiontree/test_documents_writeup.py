"""Free-form incident write-ups become one finding: each field, read as a reviewer would."""

from pathlib import Path

import pytest

from decisiontree.documents import extract_document
from decisiontree.records import Change, ChangeAction, Condition, Outcome
from tests.decisiontree.conftest import shared_by_the_module

FIXTURES = Path(__file__).parent / "fixtures" / "documents"


def extract(name):
    document = extract_document((FIXTURES / name).read_text(), name)
    assert document.format == "writeup"
    (finding,) = document.findings
    return finding


@pytest.fixture(scope=shared_by_the_module)
def vllm_oom():
    return extract("vllm_h100_oom.md")


@pytest.fixture(scope=shared_by_the_module)
def sglang_b200():
    return extract("sglang_b200_writeup.txt")


def outcomes(finding):
    return {change.describe(): fix.outcome for fix in finding.fixes for change in fix.changes}


def test_it_takes_the_title_and_the_first_real_paragraph(vllm_oom, sglang_b200):
    assert vllm_oom.title == "vLLM OOM while profiling Qwen3-235B-A22B-FP8 on 4x H100"
    assert vllm_oom.summary.startswith("TL;DR: on vLLM 0.10.2 the engine died with a CUDA OOM")
    assert (
        sglang_b200.title == "DeepSeek-V3 on a B200 node: illegal memory access in the MoE kernel"
    )
    assert sglang_b200.summary.startswith("Notes from Tuesday's on-call.")


def test_it_finds_gpus_with_counts_and_architecture(vllm_oom, sglang_b200):
    assert [(g.name, g.arch, g.count) for g in vllm_oom.gpus] == [
        ("NVIDIA H100 80GB HBM3", "sm_90", 4)
    ]
    assert [(g.name, g.arch, g.count) for g in sglang_b200.gpus] == [("NVIDIA B200", "sm_100", 8)]


def test_it_finds_the_model_its_architecture_and_quantization(vllm_oom, sglang_b200):
    assert vllm_oom.model == "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8"
    assert vllm_oom.quantization == "fp8"
    assert sglang_b200.model == "deepseek-ai/DeepSeek-V3-0324"
    assert sglang_b200.model_arch == "deepseek_v3"


def test_it_finds_framework_and_package_versions(vllm_oom, sglang_b200):
    assert (vllm_oom.framework, vllm_oom.framework_version) == ("vllm", "0.10.2")
    assert vllm_oom.versions["torch"] == "2.8.0"
    assert vllm_oom.versions["cuda"] == "12.8"
    assert (sglang_b200.framework, sglang_b200.framework_version) == ("sglang", "0.5.2")
    assert sglang_b200.versions["flashinfer"] == "0.3.1"


def test_it_reads_launch_flags_from_a_fenced_command(vllm_oom):
    assert dict(vllm_oom.flags) == {
        "tensor-parallel-size": "4",
        "gpu-memory-utilization": "0.95",
        "max-model-len": "32768",
        "max-num-seqs": "512",
        "enable-expert-parallel": "true",
        "port": "8000",
    }


def test_it_reads_launch_flags_through_an_ssh_wrapper_and_redirections(sglang_b200):
    flags = dict(sglang_b200.flags)
    assert flags["tp-size"] == "8"
    assert flags["mem-fraction-static"] == "0.85"
    assert flags["enable-dp-attention"] == "true"
    assert flags["port"] == "30000"
    assert "model-path" not in flags  # the model is its own field


def test_it_judges_each_fix_from_the_sentences_around_it(vllm_oom):
    assert outcomes(vllm_oom)["--enforce-eager"] is Outcome.NO_EFFECT
    resolving = [f for f in vllm_oom.fixes if f.outcome is Outcome.RESOLVES]
    assert [f.changes for f in resolving] == [
        (
            Change(ChangeAction.SET_FLAG, "gpu-memory-utilization", "0.88"),  # "from 0.95 to 0.88"
            Change(ChangeAction.SET_FLAG, "max-num-seqs", "128"),
        )
    ]


def test_it_reads_a_verdict_given_in_the_next_sentence(vllm_oom):
    alone = next(
        f
        for f in vllm_oom.fixes
        if f.changes == (Change(ChangeAction.SET_FLAG, "max-num-seqs", "128"),)
    )
    assert alone.outcome is Outcome.NO_EFFECT  # "...128 alone. ... but it still OOMed"


def test_it_reads_removals_env_vars_pins_and_worse(sglang_b200):
    judged = outcomes(sglang_b200)
    assert judged["remove --enable-dp-attention"] is Outcome.NO_EFFECT
    assert judged["remove --dp-size"] is Outcome.NO_EFFECT  # "(and --dp)"
    assert judged["SGLANG_ENABLE_JIT_DEEPGEMM=0"] is Outcome.NO_EFFECT
    assert judged["flashinfer-python==0.3.2"] is Outcome.RESOLVES
    assert judged["--moe-runner-backend flashinfer_cutlass"] is Outcome.RESOLVES
    assert [o for d, o in judged.items() if d.startswith("--cuda-graph-max-bs")] == [Outcome.WORSE]


def test_it_infers_kind_status_cause_and_conditions(vllm_oom, sglang_b200):
    assert (vllm_oom.kind, vllm_oom.status) == ("oom", "resolved")
    assert (sglang_b200.kind, sglang_b200.status) == ("crash", "resolved")
    assert vllm_oom.cause.startswith("The root cause is that the sampler warmup")
    assert Condition("gpu.arch", "sm_90", derived=True) in vllm_oom.conditions
    assert Condition("framework", "vllm", derived=True) in vllm_oom.conditions
    assert Condition("model.arch", "qwen3_moe", derived=True) in vllm_oom.conditions
    assert Condition("flag.gpu-memory-utilization", "0.95", derived=True) in vllm_oom.conditions


def test_it_reads_performance_figures(vllm_oom, sglang_b200):
    assert (vllm_oom.metrics.throughput_tok_s, vllm_oom.metrics.concurrency) == (1450.0, 64)
    assert vllm_oom.metrics.ttft_ms == 410.0
    assert sglang_b200.metrics.throughput_tok_s == 2100.0  # "2.1k tok/s"


def test_it_keeps_a_prefixed_log_traceback_verbatim(vllm_oom):
    (sample,) = vllm_oom.samples
    lines = sample.splitlines()
    assert lines[0].endswith("WorkerProc hit an exception.")
    assert lines[-1].endswith(
        "GPU 2 has a total capacity of 79.19 GiB of which 842.00 MiB is free."
    )
    assert all(line.startswith("(VllmWorker rank=2 pid=48211) ERROR") for line in lines)


def test_it_extracts_an_unfenced_traceback_with_its_message_tail(sglang_b200):
    (sample,) = sglang_b200.samples
    assert sample.startswith("[2025-09-02 10:14:55 DP3 TP3] Scheduler hit an exception: Traceback")
    assert sample.endswith("For debugging consider passing CUDA_LAUNCH_BLOCKING=1")
    assert "What we tried" not in sample


SEED_LIKE = """Checking on the server a few minutes later:

[bash] sleep 90 && ssh 10.0.0.5 'tail -8 ~/serve.log'
    return self.forward_decode(
           ^^^^^^^^^^^^^^^^^^^^
  File "/home/dev/sglang/python/sglang/srt/layers/attention/triton_backend.py", line 1020, in forward_decode
    forward_batch.token_to_kv_pool.set_kv_buffer(
  File "/home/dev/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 1498, in set_kv_buffer
    assert not self.nsa_kv_cache_store_fp8
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
AssertionError

[2026-02-19 00:08:10] Received sigquit from a child process. It usually means the child failed.

So the triton backend refuses FP8 KV for sparse attention. Earlier the crash read
Assertion 'probability tensor contains either inf, nan or element < 0' failed. instead.
"""


def test_it_extracts_a_tail_of_log_traceback_that_starts_mid_frame():
    # Two failures are told (the assert now, the NaN assert earlier): two episodes.
    finding = extract_document(SEED_LIKE).findings[0]
    assert finding.samples[0] == "\n".join(SEED_LIKE.splitlines()[3:11])
    assert finding.samples[0].startswith("    return self.forward_decode(")
    assert finding.samples[0].endswith("AssertionError")


def test_it_extracts_a_kernel_assertion_quoted_in_prose():
    told = extract_document(SEED_LIKE).findings
    assert [f.samples for f in told][1] == (
        "Assertion 'probability tensor contains either inf, nan or element < 0' failed.",
    )


def test_unframed_file_lines_of_a_pasted_fragment_are_kept():
    text = (
        "The result arrived:\n\nreturn self.forward_decode(\n"
        'File ".../triton_backend.py", line 1020, in forward_decode\n'
        "    forward_batch.token_to_kv_pool.set_kv_buffer(\n"
        'File ".../memory_pool.py", line 1498, in set_kv_buffer\n'
        "    assert not self.nsa_kv_cache_store_fp8\nAssertionError\n\nThis was a different failure mode.\n"
    )
    (finding,) = extract_document(text).findings
    assert finding.samples == ("\n".join(text.splitlines()[2:8]),)


def test_a_document_without_errors_or_fixes_says_so():
    document = extract_document(
        "Quick note\n\nWe served Llama 3 on one A100 and it was fine, nothing to report here.\n"
    )
    assert document.findings[0].samples == ()
    assert "no error sample (traceback or error log) found" in document.problems
    assert "no fix with a stated outcome found" in document.problems


def test_it_keeps_the_failing_launch_as_the_flags_and_the_last_one_as_working():
    text = (
        "# Llama on 2x A100\n\nFirst try:\n\n"
        "```\nvllm serve meta-llama/Llama-3.1-70B-Instruct -tp 2 --max-model-len 131072\n```\n\n"
        "It failed with ValueError about the KV cache being too small.\n\n"
        "```\nvllm serve meta-llama/Llama-3.1-70B-Instruct -tp 2 --max-model-len 32768\n```\n\n"
        "That worked and has been stable since.\n"
    )
    (finding,) = extract_document(text).findings
    assert (
        finding.works_command
        == "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 2 --max-model-len 32768"
    )
    assert outcomes(finding)["--max-model-len 32768"] is Outcome.RESOLVES
    # The finding's flags are the configuration the error appeared with.
    assert dict(finding.flags)["max-model-len"] == "131072"


def test_a_write_up_with_an_empty_heading_is_named_after_its_file():
    document = extract_document("# \n\nRuntimeError: x\n", "incidents/2026/h100-oom.txt")
    assert document.title == "h100-oom.txt"


def test_a_release_tagged_image_gives_the_framework_release():
    text = (
        "# Qwen3 on one L40S\n\nWe run the docker.io/vllm/vllm-openai:v0.6.3 image, and the "
        "server died at start:\n\n```\nRuntimeError: CUDA error: out of memory\n```\n\n"
        "Lowering --gpu-memory-utilization to 0.8 fixed it.\n"
    )
    (finding,) = extract_document(text).findings
    assert (finding.framework, finding.framework_version) == ("vllm", "0.6.3")
