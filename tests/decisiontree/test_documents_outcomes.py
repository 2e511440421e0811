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
        "--sampling-backend pytorch only changed the error, the assert moved to memory_pool.py.",
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
        "Next I will try --attention-backend triton, which should fix it.",
        "The model card recommends --kv-cache-dtype fp8_e4m3.",
        "I checked whether --enforce-eager works on this node.",
    ],
)
def test_it_does_not_mistake_plans_for_results(sentence):
    assert judge_outcome(sentence) is None


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
