"""Attempts in the story of a write-up: a suggestion later tried keeps the verdict of the
try, and a setting already in force when a relaunch shows it again is not a new change."""

from decisiontree.documents import extract_document


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
