"""A write-up is read as episodes: each attempt on the symptom it was tried against.

The fixtures in tests/fixtures/incidents are our own retelling of five real incident
write-ups (GLM-5-NVFP4 on RTX PRO 6000 Blackwell, SGLang): same facts, our words.
"""

from pathlib import Path

import pytest

from decisiontree.documents import extract_document
from decisiontree.records import Outcome

INCIDENTS = Path(__file__).resolve().parents[1] / "fixtures" / "incidents"


def episodes(name):
    document = extract_document((INCIDENTS / name).read_text(), name)
    return {finding.extra.get("symptom", ""): finding for finding in document.findings}


def attempts(finding):
    return {
        " ".join(sorted(c.describe() for c in fix.changes)): fix.outcome for fix in finding.fixes
    }


def test_the_oom_cure_stays_on_the_oom_and_the_decode_crash_keeps_what_did_not_help():
    told = episodes("glm5-blackwell-fp8-kv-assert.txt")
    assert attempts(told["oom"]) == {"--mem-fraction-static 0.88": Outcome.RESOLVES}
    assert told["oom"].kind == "oom"
    decode = attempts(told["device_assert"])
    assert decode["--attention-backend triton"] is Outcome.WORSE  # it brought a new error
    assert decode["--sampling-backend pytorch"] is Outcome.WORSE
    assert "--mem-fraction-static 0.88" not in decode


def test_the_assertion_under_triton_gets_the_proposals_and_not_the_memory_fix():
    told = episodes("glm5-blackwell-fp8-kv-assert.txt")
    (assertion,) = [f for key, f in told.items() if "exc:AssertionError" in key]
    found = attempts(assertion)
    assert found["--kv-cache-dtype auto"] is Outcome.PROPOSED
    assert found["--dsa-decode-backend trtllm --dsa-prefill-backend trtllm"] is Outcome.PROPOSED
    assert not any("mem-fraction-static" in key for key in found)
    assert dict(assertion.flags)["attention-backend"] == "triton"  # the launch in force
    assert any("nsa_kv_cache_store_fp8" in sample for sample in assertion.samples)


def test_the_second_telling_has_the_same_two_crashes_and_proposals():
    told = episodes("glm5-blackwell-nsa-pivot.txt")
    decode = next(f for key, f in told.items() if "device_assert" in key)
    assert set(attempts(decode).values()) == {Outcome.WORSE}
    assertion = next(f for key, f in told.items() if "exc:AssertionError" in key)
    found = attempts(assertion)
    assert found["--kv-cache-dtype auto"] is Outcome.PROPOSED
    assert found["--dsa-decode-backend trtllm"] is Outcome.PROPOSED


def test_triton_did_not_change_the_nsa_backends_and_the_oom_was_cured():
    told = episodes("glm5-blackwell-backend-override.txt")
    assert attempts(told["oom"]) == {"--mem-fraction-static 0.88": Outcome.RESOLVES}
    decode = next(f for key, f in told.items() if "device_assert" in key)
    assert attempts(decode)["--attention-backend triton"] is Outcome.NO_EFFECT


def test_slow_decode_a_patch_that_made_it_worse_its_revert_and_the_proposals():
    told = episodes("glm5-blackwell-slow-decode-fp8-cast.txt")
    slow = told["slow"]
    assert slow.kind == "slow"
    found = {fix.summary: fix.outcome for fix in slow.fixes}
    assert found["Patch `flashinfer_mla_backend.py`"] is Outcome.WORSE
    assert found["Gather the active KV entries first and cast only those"] is Outcome.PARTIAL
    assert found["Set `--attention-backend` to trtllm_mla"] is Outcome.PROPOSED
    assert found["Set `--attention-backend` to cutlass_mla"] is Outcome.PROPOSED
    build = next(f for key, f in told.items() if "build" in key)
    assert [(f.summary, f.outcome) for f in build.fixes] == [
        ("Patch `flashinfer_mla_backend.py`", Outcome.WORSE),  # the change that brought it
        ("Revert the patch", Outcome.RESOLVES),
    ]
    # nvcc's "file(line): error:" shape is not a log-line shape yet; the Ninja line is.
    assert build.samples == ("RuntimeError: Ninja build failed",)


def test_the_nan_assert_persists_through_a_dropped_flag_and_another_gemm_backend():
    (finding,) = extract_document(
        (INCIDENTS / "glm5-blackwell-nan-auto-fp8.txt").read_text()
    ).findings
    found = attempts(finding)
    assert found["--fp8-gemm-backend cutlass"] is Outcome.NO_EFFECT
    assert found["--disable-cuda-graph remove --kv-cache-dtype"] is Outcome.NO_EFFECT
    proposal = "--dsa-decode-backend trtllm --dsa-prefill-backend trtllm --kv-cache-dtype auto"
    assert found[proposal] is Outcome.PROPOSED


@pytest.mark.parametrize(
    ("summary", "passage_word"),
    [("Lower `--mem-fraction-static` from 0.95 to 0.88", "lowering")],
)
def test_a_fix_has_a_summary_of_our_own_and_keeps_the_passage(summary, passage_word):
    oom = episodes("glm5-blackwell-fp8-kv-assert.txt")["oom"]
    (fix,) = oom.fixes
    assert fix.summary == summary
    assert passage_word in fix.passage


def test_a_symptom_told_only_in_words_is_the_findings_symptom_not_an_error_sample():
    """No error block shows the OOM: its words are the symptom a paste is matched on,
    never a sample that pretends to be printed output."""
    oom = episodes("glm5-blackwell-fp8-kv-assert.txt")["oom"]
    assert oom.samples == ()
    assert "run out of memory while capturing CUDA graphs" in oom.summary
    # Titled as a log says it, so a paste of the same failure finds it, then in the
    # writer's words; the sentence stays the summary.
    assert oom.title.startswith(
        "Out of memory while capturing CUDA graphs: Before it, the first launch had run out of"
    )
    assert "lowering" not in oom.title  # the clause that tells the failure, not the cure


def test_a_bare_assertion_is_titled_by_the_assert_it_printed():
    told = episodes("glm5-blackwell-fp8-kv-assert.txt")
    (assertion,) = [f for key, f in told.items() if "exc:AssertionError" in key]
    assert assertion.title.startswith("AssertionError: assert not self.nsa_kv_cache_store_fp8 — ")


def told(text):
    return extract_document(text, "notes.md").findings


OPENS_WITH_THE_END = """\
Why the second launch died

```
Traceback (most recent call last):
  File "/srv/vllm/vllm/attention/backends/xformers.py", line 88, in forward
    raise NotImplementedError("sliding window is not supported by this backend")
NotImplementedError: sliding window is not supported by this backend
```

We run Mistral-7B-Instruct on one NVIDIA L4 with vLLM. The first launch died while loading with
CUDA out of memory. Lowering --gpu-memory-utilization from 0.95 to 0.85 fixed the OOM.
Then we set --enforce-eager to save a little more memory.
The server came up again and we waited for the first request.
It then failed with a different error, the NotImplementedError above.
"""


def test_an_error_shown_first_and_told_at_the_end_is_the_end_of_the_story():
    """The block at the top is the result of the last attempt, not the first failure."""
    findings = told(OPENS_WITH_THE_END)
    oom = next(f for f in findings if f.kind == "oom")
    error = next(f for f in findings if "NotImplementedError" in f.title)
    assert attempts(oom)["--gpu-memory-utilization 0.85"] is Outcome.RESOLVES
    # "came up again" was a stage on the way: the new error is what the change led to,
    # worse for the symptom it was tried against and known not to help the new one.
    assert attempts(oom)["--enforce-eager"] is Outcome.WORSE
    assert attempts(error) == {"--enforce-eager": Outcome.WORSE}


CURED_THEN_AGAIN = """\
# Two ValueErrors on a T4

vllm serve Qwen/Qwen2.5-1.5B-Instruct on a Tesla T4:

    ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.

Adding `--dtype half` fixed that one. The next launch stopped at the cache:

    ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (9000).

`--max-model-len 8192` fixed it.
"""


def test_an_error_shown_again_after_its_look_alike_was_cured_is_the_next_failure():
    findings = told(CURED_THEN_AGAIN)
    bf16 = next(f for f in findings if any("Bfloat16" in s for s in f.samples))
    cache = next(f for f in findings if any("max seq len" in s for s in f.samples))
    assert attempts(bf16) == {"--dtype half": Outcome.RESOLVES}
    assert attempts(cache) == {"--max-model-len 8192": Outcome.RESOLVES}


RELAUNCHED = """\
# NCCL timeout on two nodes

The job died at startup:

```
torch.distributed.DistBackendError: NCCL error: remote process exited or there was a network error
```

A guess that went nowhere: perhaps the --dist-timeout of 600 was too short for the slow node.
The launch as it ran:

```
python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --tp 16 --nnodes 2
```

Relaunched on both nodes with the interface pinned:

```
NCCL_SOCKET_IFNAME=ens5 python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --tp 16 --nnodes 2
```

That came up on both nodes and served the benchmark.
"""


def test_a_relaunch_command_is_an_attempt_and_a_guess_about_a_setting_is_not_one():
    (finding,) = told(RELAUNCHED)
    assert attempts(finding) == {"NCCL_SOCKET_IFNAME=ens5": Outcome.RESOLVES}


RULED_OUT = """\
# Two failures on one H100

We serve Llama-3.1-8B-Instruct with SGLang on one NVIDIA H100. The first launch ran out of
memory while loading the weights; lowering --mem-fraction-static from 0.9 to 0.8 fixed that.

The first request then crashed the server with CUDA error: device-side assert triggered.

As this was a device-side assert and not an out-of-memory error, we relaunched with the
sampling backend set by --sampling-backend pytorch. That did not change anything.
"""


def test_a_failure_named_to_rule_it_out_is_not_that_failure():
    """ "not an out-of-memory error" names the OOM to say this is something else: the assert
    stays a crash of its own and the memory cure stays on the OOM."""
    findings = told(RULED_OUT)
    oom = next(f for f in findings if f.kind == "oom")
    crash = next(f for f in findings if "device_assert" in f.extra["symptom"])
    assert crash.extra["symptom"] == "device_assert"
    assert attempts(oom) == {"--mem-fraction-static 0.8": Outcome.RESOLVES}
    assert attempts(crash) == {"--sampling-backend pytorch": Outcome.NO_EFFECT}


BOTH_NAMED = """\
# Memory, then an assert

We serve Llama-3.1-8B-Instruct with SGLang on one NVIDIA H100. The first launch ran out of
memory; lowering --mem-fraction-static from 0.9 to 0.8 fixed that.

The first request then crashed the server with CUDA error: device-side assert triggered.

Unlike the OOM, the device-side assert showed up only under load.
Relaunching with --sampling-backend pytorch did not change anything.
"""


def test_a_sentence_naming_two_known_failures_joins_neither_to_the_other():
    findings = told(BOTH_NAMED)
    oom = next(f for f in findings if f.kind == "oom")
    assert oom.extra["symptom"] == "oom"
    assert attempts(oom) == {"--mem-fraction-static 0.8": Outcome.RESOLVES}
    crash = next(f for f in findings if f.kind == "crash")
    assert "--mem-fraction-static 0.8" not in attempts(crash)


@pytest.mark.parametrize(
    "clause, headline",
    [
        (
            "an out-of-memory condition during CUDA graph capture",
            "Out of memory while capturing CUDA graphs",
        ),
        ("an OOM during weight loading", "Out of memory while loading the model weights"),
        ("the job hung at NCCL init", "Hang while initializing NCCL"),
        (
            "a device-side assert during the warm-up",
            "CUDA device-side assert while warming up the server",
        ),
    ],
)
def test_a_failure_told_in_words_is_titled_with_the_stage_in_a_logs_words(clause, headline):
    from decisiontree.documents.episodes import told_headline

    assert told_headline(clause) == headline


@pytest.mark.parametrize(
    "clause",
    [
        "we sent a warm-up request and it crashed with an OOM",  # a request on the way, no stage
        "the weights were fine",  # no failure
        "an OOM on the first long prompt",  # no stage we know: the clause stays the title
    ],
)
def test_no_stage_title_without_a_failure_at_a_known_stage(clause):
    from decisiontree.documents.episodes import told_headline

    assert told_headline(clause) is None


WEIGHTS_OOM = """# Llama on one L4

We serve Llama-3.1-8B-Instruct with vLLM on one NVIDIA L4. The first start ran out of memory
during weight loading. Setting --max-model-len to 4096 did not help. Lowering
--gpu-memory-utilization from 0.95 to 0.85 fixed it.

Then the first request crashed with CUDA error: an illegal memory access was encountered.
Adding --enforce-eager fixed that.
"""


def test_the_told_failure_is_the_title_and_its_sentence_the_summary():
    oom = next(f for f in told(WEIGHTS_OOM) if f.kind == "oom")
    assert oom.title.startswith(
        "Out of memory while loading the model weights: The first start ran out of memory during"
    )
    assert "ran out of memory during weight loading" in oom.summary
