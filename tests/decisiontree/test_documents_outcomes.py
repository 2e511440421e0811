"""Reading what a change did from the words around it, both ways."""

import pytest

from decisiontree.documents.outcomes import judge_outcome, split_bracket_outcome
from decisiontree.records import Outcome


@pytest.mark.parametrize(
    "sentence",
    [
        "Lowering --mem-fraction-static from 0.95 to 0.88 fixed the OOM.",
        "Explicitly passing --kv-cache-dtype bf16 and --dsa-decode-backend trtllm finally worked.",
        "After pinning transformers==4.57.1 the server started cleanly.",
        "With --enforce-eager the crash went away.",
        "That did the trick: no more NaNs in decode.",
    ],
)
def test_it_hears_a_fix_that_worked(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


@pytest.mark.parametrize(
    "sentence",
    [
        "Switching to --attention-backend triton did not help.",
        "I added --disable-cuda-graph but it still crashed on the first request.",
        "Setting NCCL_P2P_DISABLE=1 made no difference.",
        "Dropping --enable-dp-attention didn't fix it; same illegal memory access.",
        "Tried --max-model-len 8192, to no avail.",
    ],
)
def test_it_hears_a_fix_that_did_not_help(sentence):
    assert judge_outcome(sentence) is Outcome.NO_EFFECT


@pytest.mark.parametrize(
    "sentence",
    [
        "Raising --cuda-graph-max-bs to 512 made it worse: now it OOMs during capture.",
        "--chunked-prefill-size 512 made things even worse and throughput regressed by half.",
    ],
)
def test_it_hears_a_fix_that_made_it_worse(sentence):
    assert judge_outcome(sentence) is Outcome.WORSE


def test_it_hears_a_partial_fix():
    assert (
        judge_outcome("--max-num-seqs 64 helped a bit, the OOM is less frequent.")
        is Outcome.PARTIAL
    )


@pytest.mark.parametrize(
    "sentence",
    [
        "The model card recommends --kv-cache-dtype fp8_e4m3.",
        "I checked whether --enforce-eager works on this node.",
        "We waited for the weights to load.",
        "The error does not say which rank failed.",
    ],
)
def test_it_hears_no_result_in_a_setup_a_question_or_a_purpose(sentence):
    assert judge_outcome(sentence) is None


@pytest.mark.parametrize(
    "sentence",
    [
        "Next I will try --attention-backend triton, which should fix it.",
        "The obvious next move is --kv-cache-dtype bf16.",
        "A reviewer on the PR advised pinning torch to 2.7.1.",
        "We could fall back to --disable-cuda-graph if nothing else works.",
        "Not tested yet, but reportedly --enforce-eager sidesteps it.",
    ],
)
def test_it_hears_a_plan_or_advice_as_proposed_not_as_a_result(sentence):
    assert judge_outcome(sentence) is Outcome.PROPOSED


def test_a_change_that_only_moves_the_error_made_it_worse_for_that_error():
    # A new error is a new symptom: for the one the change was tried against, it is worse.
    sentence = "--sampling-backend pytorch only changed the error, the assert moved elsewhere."
    assert judge_outcome(sentence) is Outcome.WORSE


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        ("The fix didn't land in time; it never helped.", Outcome.NO_EFFECT),
        ("It didn't hang once over the weekend.", Outcome.RESOLVES),
        ("Nobody has seen the segfault since Monday.", Outcome.RESOLVES),
        ("Neither change made the warning go away.", Outcome.NO_EFFECT),
    ],
)
def test_negation_reaches_the_words_after_it_and_flips_what_they_say(sentence, outcome):
    assert judge_outcome(sentence) is outcome


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        ("Output rose from 700 to 1,650 tok/s.", Outcome.RESOLVES),
        ("p50 TTFT went from 300 ms to 1.2 s.", Outcome.WORSE),
        ("Peak memory dropped from 71 GB to 64 GB.", Outcome.RESOLVES),
        ("Throughput went from 1,000 to 1,005 tok/s.", Outcome.NO_EFFECT),
    ],
)
def test_it_compares_the_figures_before_and_after_by_which_way_is_better(sentence, outcome):
    assert judge_outcome(sentence) is outcome


def test_it_reads_the_bracket_override_of_findings_md():
    assert split_bracket_outcome("--x 1 [partial]") == ("--x 1", Outcome.PARTIAL)
    assert split_bracket_outcome("--x 1 [no effect]") == ("--x 1", Outcome.NO_EFFECT)
    assert split_bracket_outcome("see [docs]") == ("see [docs]", None)


@pytest.mark.parametrize(
    "sentence",
    [
        "Turning on --enforce-eager: identical hang at the first all-reduce.",
        "With the env var set it stalled the same way after loading weights.",
        "Same timeout, same rank.",
    ],
)
def test_it_hears_the_same_hang_or_timeout_as_no_effect(sentence):
    assert judge_outcome(sentence) is Outcome.NO_EFFECT


@pytest.mark.parametrize(
    "sentence",
    [
        "After pointing it at the newer toolkit the kernel compilation passed.",
        "Pod is healthy again and answers requests.",
        "Endpoint back up within two minutes.",
    ],
)
def test_it_hears_a_healthy_server_as_a_fix(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


@pytest.mark.parametrize(
    "sentence",
    [
        "With the triton backend it loads and answers, but decode is about 30% slower.",
        "It comes up now; fine as a stopgap for the weekend, not a real fix.",
        "Starts and serves requests, throughput dropped to half though.",
    ],
)
def test_it_hears_a_change_that_runs_at_a_cost_as_partial(sentence):
    assert judge_outcome(sentence) is Outcome.PARTIAL


@pytest.mark.parametrize(
    "sentence",
    [
        "Run B doubles the TTFT. Worse.",
        "Output tok/s 1,100 vs 1,700 → worse.",
        "Prefill got noticeably slower than the baseline.",
    ],
)
def test_it_hears_a_bare_worse_verdict_and_a_cost_without_a_benefit(sentence):
    assert judge_outcome(sentence) is Outcome.WORSE


def test_a_new_way_it_breaks_still_beats_the_words_for_success():
    assert judge_outcome("The build passed, then every request failed. Made it worse.") is (
        Outcome.WORSE
    )


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        # A comparative under negation: nothing got better.
        ("Sadly nothing got better after the upgrade.", Outcome.NO_EFFECT),
        # An idiom of a failure being over, whatever its name.
        ("The segfault in the tokenizer is a thing of the past.", Outcome.RESOLVES),
        # "kept" + a failure: it goes on.
        ("The worker kept crashing on the second batch.", Outcome.NO_EFFECT),
        # A request from someone else to try something: a proposal.
        ("Upstream told us to pin the older wheel.", Outcome.PROPOSED),
        # Better, but short of what it was.
        ("Decode speed improved, reaching 70% of the old rate.", Outcome.PARTIAL),
        # A trade: better for one thing, worse for another.
        ("Fine for short prompts, worse for long ones.", Outcome.PARTIAL),
    ],
)
def test_it_reads_ordinary_ways_of_saying_a_verdict(sentence, outcome):
    assert judge_outcome(sentence) is outcome


@pytest.mark.parametrize(
    "sentence",
    [
        # How long one waited is not whether it loaded.
        "We gave it five minutes, long enough for the weights to load, then read the log.",
        # The path a call took is not a success.
        "The decode call still went through the old kernel.",
        # An expectation about a crash is not a crash seen.
        "The crash would be the same if the cache stayed in FP8.",
        # A past form before a noun describes it.
        "The assistant reverted its failed patch before the next run.",
    ],
)
def test_it_hears_no_verdict_in_a_purpose_a_route_an_expectation_or_an_adjective(sentence):
    assert judge_outcome(sentence) in (None, Outcome.PROPOSED)


@pytest.mark.parametrize(
    "sentence",
    [
        "It was not an out-of-memory error.",
        "This was a device-side assert and not an OOM, so we looked at the kernels.",
    ],
)
def test_a_kind_of_failure_ruled_out_is_no_verdict(sentence):
    """Saying which failure it was is no report that a change ended it."""
    assert judge_outcome(sentence) is None


@pytest.mark.parametrize(
    "sentence", ["After the change it was not an issue anymore.", "It did not crash again."]
)
def test_a_failure_that_is_over_still_reads_as_fixed(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


@pytest.mark.parametrize(
    "sentence", ["Up and serving.", "After that the server was up and running."]
)
def test_up_and_running_said_without_a_subject_is_a_success(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


def test_a_relaunch_followed_by_up_and_serving_resolves_its_symptom():
    from decisiontree.documents import extract_document

    text = """\
# Qwen on a T4

    python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-3B-Instruct

The first start failed:

    ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (20176).

So we capped the context:

    python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-3B-Instruct --max-model-len 8192

Up and serving.
"""
    (finding,) = extract_document(text, "t4.md").findings
    assert [(f.summary, f.outcome) for f in finding.fixes] == [
        ("Set `--max-model-len` to 8192", Outcome.RESOLVES)
    ]


@pytest.mark.parametrize(
    "sentence",
    [
        "The first start hit an OOM during graph capture; lowering the fraction cured that.",
        "Workers crashed at load time, and a bigger shared memory segment fixed it.",
    ],
)
def test_the_failure_a_cure_points_back_to_is_the_problem_it_ended(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


def test_a_failure_left_after_a_cure_is_still_a_partial_fix():
    sentence = "Eager mode fixed the capture crash, but the server still crashes under load."
    assert judge_outcome(sentence) is Outcome.PARTIAL


def test_a_version_between_to_and_the_verdict_is_no_purpose():
    """ "pinning the wheel to 0.4.2 fixed that": the version is a name, not a gap that makes
    "to fixed" read like "to fix"."""
    assert judge_outcome("Pinning the wheel to 0.4.2 fixed that.") is Outcome.RESOLVES
    assert judge_outcome("We waited for the server to fix itself.") is None
