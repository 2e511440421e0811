"""What a reader of a write-up gets back: its summary, status, quantization, conditions, the
verdict of each attempt, one finding per failure with its title and symptom key."""

from decisiontree.documents import extract_document


def findings(text):
    return extract_document(text, "notes.md").findings


def only_finding(text):
    (finding,) = findings(text)
    return finding


def attempts(finding):
    return {" ".join(c.describe() for c in fix.changes): fix.outcome.value for fix in finding.fixes}


UNFENCED_TRACEBACK = """\
# Illegal memory access on the first request

We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on one NVIDIA L4, and the first long request crashed the server.
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/vllm/worker/model_runner.py", line 1450, in execute_model
    output = self.model(input_ids)
RuntimeError: CUDA error: an illegal memory access was encountered
Relaunching with --enforce-eager fixed the crash.
"""


def test_a_traceback_pasted_inside_a_paragraph_splits_it():
    finding = only_finding(UNFENCED_TRACEBACK)
    assert finding.summary == (
        "We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on one NVIDIA L4, "
        "and the first long request crashed the server."
    )
    (fix,) = finding.fixes
    assert fix.text == "Relaunching with --enforce-eager fixed the crash."


COMMAND_INSIDE_A_PARAGRAPH = """\
# OOM while loading

Our first launch on a single NVIDIA L4 used the plain command from the quick start page of the docs:
vllm serve Qwen/Qwen2.5-7B-Instruct --gpu-memory-utilization 0.95
It ran out of memory while loading the weights, every single time we tried it.

Lowering --gpu-memory-utilization to 0.85 fixed the OOM.
"""


def test_a_launch_command_inside_a_paragraph_ends_the_summary_before_it():
    finding = only_finding(COMMAND_INSIDE_A_PARAGRAPH)
    assert finding.summary == (
        "Our first launch on a single NVIDIA L4 used the plain command from the quick start "
        "page of the docs:"
    )


TWO_TRACEBACKS = """\
# Two crashes on an H100

The first launch died while loading:

```
Traceback (most recent call last):
  File "/srv/sglang/python/sglang/srt/model_executor/model_runner.py", line 210, in load_model
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
```

Lowering --mem-fraction-static from 0.9 to 0.8 fixed that.

The first request then crashed:

```
Traceback (most recent call last):
  File "/srv/sglang/python/sglang/srt/layers/sampler.py", line 88, in forward
RuntimeError: CUDA error: device-side assert triggered
```

--sampling-backend pytorch fixed the assert.
"""


def test_two_tracebacks_that_open_alike_are_two_failures_each_with_its_fix():
    oom, crash = findings(TWO_TRACEBACKS)
    assert oom.title.startswith("torch.OutOfMemoryError: CUDA out of memory.")
    assert attempts(oom) == {"--mem-fraction-static 0.8": "resolves"}
    assert crash.title.startswith("RuntimeError: CUDA error: device-side assert triggered")
    assert attempts(crash) == {"--sampling-backend pytorch": "resolves"}


def test_the_symptom_key_names_every_failure_class_the_error_shows():
    """Findings of other documents join on these words: the torch OOM is both an
    out-of-memory failure and an OutOfMemoryError."""
    oom, crash = findings(TWO_TRACEBACKS)
    assert oom.extra["symptom"].split() == ["exc:OutOfMemoryError", "oom"]
    assert crash.extra["symptom"].split() == ["device_assert"]


BARE_ASSERT_FIRST = """\
# Two failures on an H100

The first launch died while loading:

```
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
```

Lowering --mem-fraction-static from 0.9 to 0.8 fixed that.

The first request then stopped the scheduler:

```
AssertionError
scheduler process exited with code 1
```

--disable-overlap-schedule fixed the assert.
"""


def test_a_bare_assertion_with_nothing_printed_above_it_is_titled_by_itself():
    _, assertion = findings(BARE_ASSERT_FIRST)
    assert assertion.title == "AssertionError — Two failures on an H100"


OPENS_WITH_THE_ANSWER = """\
--enforce-eager fixed the hang on our L4.

We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on one NVIDIA L4. The server hung on the first request, and the watchdog killed it after ten minutes.

We looked at the logs for a long time before trying anything.
"""


def test_a_one_sentence_answer_on_the_first_line_is_read_not_taken_for_a_title():
    finding = only_finding(OPENS_WITH_THE_ANSWER)
    assert attempts(finding) == {"--enforce-eager": "resolves"}
    assert finding.status == "resolved"


QUANTIZED_LAUNCH = """\
# OOM with FP8 weights

We launched Llama-3.1-8B-Instruct on one NVIDIA L4:

```
vllm serve meta-llama/Llama-3.1-8B-Instruct --quantization fp8 --gpu-memory-utilization 0.95
```

It ran out of memory while capturing CUDA graphs. Lowering --gpu-memory-utilization to 0.85 fixed the OOM.
"""


def test_the_quantization_comes_from_the_launch_when_the_model_name_has_none():
    assert only_finding(QUANTIZED_LAUNCH).quantization == "fp8"


NOT_SOLVED = """\
# Hang on the first request

We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on one NVIDIA L4. The server hangs on the first request and never answers.

Nothing we tried has solved it yet.
"""


def test_saying_nothing_has_solved_it_leaves_the_finding_open():
    assert only_finding(NOT_SOLVED).status == "open"


VERDICT_IN_THE_NEXT_SENTENCE = """\
# Crash in decode

We serve Qwen2.5-7B-Instruct with SGLang 0.4.1 on one NVIDIA H100, and decode crashed with an illegal memory access.

I switched to --attention-backend triton. The crash went away.
"""


def test_a_verdict_in_the_next_sentence_resolves_the_finding():
    finding = only_finding(VERDICT_IN_THE_NEXT_SENTENCE)
    assert finding.status == "resolved"
    assert attempts(finding) == {"--attention-backend triton": "resolves"}


OTHER_FRAMEWORKS_FLAG_AFTER = """\
# Hang on the first request

We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on one NVIDIA L4. The server hung on the first request.

I relaunched with --enforce-eager. Unlike SGLang's --disable-cuda-graph it kept the prefix cache, and the hang went away.
"""


def test_a_flag_of_another_framework_in_the_next_sentence_is_no_new_attempt():
    finding = only_finding(OTHER_FRAMEWORKS_FLAG_AFTER)
    assert finding.status == "resolved"
    assert attempts(finding) == {"--enforce-eager": "resolves"}


ALIAS_IN_THE_FIX = """\
# OOM on two H100s

```
python -m sglang.launch_server --model-path Qwen/Qwen2.5-72B-Instruct --tp 2
```

It ran out of memory while loading the weights. Raising --tensor-parallel-size to 4 fixed the OOM.
"""


def test_a_fix_that_names_a_launched_flag_by_its_alias_makes_the_launched_value_a_condition():
    finding = only_finding(ALIAS_IN_THE_FIX)
    assert attempts(finding) == {"--tp-size 4": "resolves"}
    assert "flag.tp-size = 2" in [c.describe() for c in finding.conditions]


LEAD_IN_PARAGRAPH = """\
# Hang after an upgrade

We upgraded to SGLang 0.4.1 and the server hung on the first request with a watchdog timeout.

What finally worked:

--disable-cuda-graph --mem-fraction-static 0.8
"""


def test_the_commands_under_a_what_worked_lead_in_take_its_verdict():
    finding = only_finding(LEAD_IN_PARAGRAPH)
    assert attempts(finding) == {"--disable-cuda-graph --mem-fraction-static 0.8": "resolves"}


LONG_FIRST_PARAGRAPH = """\
# Slow decode on the L4

We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on a single NVIDIA L4 card in our lab and the decode speed fell by half after the upgrade last week. The drop shows on every prompt length we tried, from short chat turns to long documents, and on both of the cards we have. It is not the network and not the client, since the same benchmark from the box itself shows the same numbers as the remote one does, run after run.

Lowering --max-num-seqs to 64 fixed the slowdown.
"""


def test_a_long_summary_is_cut_after_its_last_whole_sentence_that_fits():
    summary = only_finding(LONG_FIRST_PARAGRAPH).summary
    assert summary.endswith("on both of the cards we have.")
    assert summary.count(". ") == 1
    assert len(summary) <= 400


TWO_ALTERNATIVES = """\
# Gibberish output with an FP8 cache

We serve Qwen2.5-7B-Instruct with vLLM 0.6.3 on one NVIDIA L4 and the answers came back as gibberish with NaN in the logits.

Upstream suggests trying --kv-cache-dtype auto, or just removing it.
"""


def test_or_removing_it_is_a_second_proposal_that_takes_the_flag_away():
    finding = only_finding(TWO_ALTERNATIVES)
    assert attempts(finding) == {
        "--kv-cache-dtype auto": "proposed",
        "remove --kv-cache-dtype": "proposed",
    }
