"""Fenced blocks of a write-up, as people write them: a language tag after the fence, a fence
indented under a list item, triple backticks used as inline code at the start of a line."""

from decisiontree.documents import extract_document


def only_finding(text):
    (finding,) = extract_document(text, "notes.md").findings
    return finding


def attempts(finding):
    return {" ".join(c.describe() for c in fix.changes): fix.outcome.value for fix in finding.fixes}


TAGGED_FENCE = """\
# Crash on the first request

We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on one NVIDIA L4.

```text
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/vllm/worker/model_runner.py", line 1450, in execute_model
RuntimeError: CUDA error: an illegal memory access was encountered
```

Relaunching with --enforce-eager fixed the crash.
"""


def test_a_fence_with_a_language_tag_closes_and_the_prose_after_it_is_read():
    finding = only_finding(TAGGED_FENCE)
    assert attempts(finding) == {"--enforce-eager": "resolves"}
    assert finding.status == "resolved"
    (sample,) = finding.samples
    assert sample.startswith("Traceback (most recent call last):")
    assert sample.endswith("an illegal memory access was encountered")


FENCE_IN_A_LIST_ITEM = """\
# Crash on the first request

1. We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on one NVIDIA L4. The first request crashed:
   ```
   Traceback (most recent call last):
     File "/opt/venv/lib/python3.11/site-packages/vllm/worker/model_runner.py", line 1450, in execute_model
   RuntimeError: CUDA error: an illegal memory access was encountered
   ```
2. Relaunching with --enforce-eager fixed the crash.
"""


def test_a_fence_indented_under_a_list_item_is_no_part_of_the_prose():
    finding = only_finding(FENCE_IN_A_LIST_ITEM)
    assert finding.summary == (
        "We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on one NVIDIA L4. The first request crashed:"
    )
    assert attempts(finding) == {"--enforce-eager": "resolves"}


INLINE_TRIPLE_BACKTICKS = """\
# Hang on the first request

We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on one NVIDIA L4, and the server hung on the first request.

```--enforce-eager``` fixed the hang.

Later we also tried --max-num-seqs 32 on its own, which did not help.
"""


def test_triple_backticks_around_a_flag_on_one_line_are_inline_code_not_a_fence():
    finding = only_finding(INLINE_TRIPLE_BACKTICKS)
    assert finding.status == "resolved"
    assert attempts(finding)["--enforce-eager"] == "resolves"
