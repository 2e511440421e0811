"""Attempts in the story of a write-up: a suggestion later tried keeps the verdict of the
try, and a setting already in force when a relaunch shows it again is not a new change."""

from decisiontree.documents import extract_document
from decisiontree.documents.episodes import symptom_of


def attempts(text):
    (finding,) = extract_document(text, "notes.md").findings
    return {" ".join(c.describe() for c in fix.changes): fix.outcome.value for fix in finding.fixes}


SUGGESTED_THEN_TRIED = """\
# Hang on the first request

We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on one NVIDIA L4. The server hung on the first request.

A colleague suggested trying --enforce-eager.

Relaunching with --enforce-eager fixed the hang.
"""


def test_a_suggestion_that_was_then_tried_keeps_the_verdict_of_the_try():
    assert attempts(SUGGESTED_THEN_TRIED) == {"--enforce-eager": "resolves"}


ENVIRONMENT_ALREADY_SET = """\
# Hang on two L4s

The launch:

```
vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 2
```

It hung at startup with a watchdog timeout. Setting NCCL_P2P_DISABLE=1 did not help.

Relaunched with:

```
NCCL_P2P_DISABLE=1 vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 2 --disable-custom-all-reduce
```

That came up and served the benchmark.
"""


def test_a_relaunch_that_repeats_an_environment_variable_already_tried_changes_only_the_rest():
    assert attempts(ENVIRONMENT_ALREADY_SET) == {
        "NCCL_P2P_DISABLE=1": "no_effect",
        "--disable-custom-all-reduce": "resolves",
    }


TORCH_OOM_THEN_ASSERT = """\
# Two failures on one H100

We serve Qwen2.5-32B-Instruct with SGLang 0.4.6 on one NVIDIA H100.

The first launch failed while loading the weights:

```
Traceback (most recent call last):
  File "/opt/sglang/python/sglang/srt/model_executor/model_runner.py", line 410, in load_model
    self.model = get_model(config)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.
```

Lowering --mem-fraction-static to 0.80 fixed that.

Under load the next launch then hit a device-side assert in the sampler:

```
RuntimeError: CUDA error: device-side assert triggered
```

Switching to --sampling-backend pytorch made it go away.
"""


def test_a_torch_out_of_memory_error_told_beside_another_failure_is_an_out_of_memory_finding():
    findings = extract_document(TORCH_OOM_THEN_ASSERT, "notes.md").findings
    kinds = {
        " ".join(c.describe() for fix in f.fixes for c in fix.changes): f.kind for f in findings
    }
    assert kinds == {
        "--mem-fraction-static 0.80": "oom",
        "--sampling-backend pytorch": "crash",
    }


def test_two_out_of_memory_errors_in_different_files_are_one_failure():
    first = symptom_of("CUDA out of memory while capturing graphs in cuda_graph_runner.py")
    second = symptom_of("Out of memory again, this time in memory_pool.py during prefill")
    assert first.same_as(second)


def test_the_same_exception_type_raised_in_different_files_is_two_failures():
    first = symptom_of("A ValueError raised in tokenizer_utils.py")
    second = symptom_of("A ValueError from sampling_params.py")
    assert not first.same_as(second)
