"""One error, two known causes, and nothing in the paste or the setup to tell them apart:
the answer says so, above its fixes, rather than crowning whichever finding came first.

The paste is the seeds' NaN decode assert on another host; the findings hold the same
error with causes of their own.
"""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Condition, FixRecord, Outcome
from tests.decisiontree.test_walk import (
    BF16_REPORTED,
    NAN_ASSERT,
    NAN_ASSERT_ELSEWHERE,
    SHARED_CAUSE,
    UNSET_BACKEND,
    finding,
    on_sm120,
)

OTHER_CAUSE = "the sampler reads logits of a draft model whose vocabulary is padded differently"
SAMPLE_WITH_PYTORCH = FixRecord(
    5,
    "Sample with the PyTorch backend",
    (),
    Outcome.RESOLVES,
)


def test_two_causes_of_one_error_that_nothing_tells_apart_are_named_with_their_fixes() -> None:
    kv_pool = finding(10, NAN_ASSERT, (BF16_REPORTED,))
    sampler = finding(20, NAN_ASSERT, (SAMPLE_WITH_PYTORCH,), cause=OTHER_CAUSE)

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([kv_pool, sampler]))

    assert result.match == "known"
    tied = {t.finding.id: t.ranks for t in result.tied_causes}
    ranks = {f.finding.id: f.rank for f in result.fixes}
    assert tied == {10: (ranks[10],), 20: (ranks[20],)}
    assert result.tied_note.startswith("2 known causes give this error")
    assert OTHER_CAUSE in " ".join(t.text for t in result.tied_causes)


def test_a_setup_that_rules_one_cause_out_leaves_no_tie() -> None:
    on_vllm = (Condition("framework", "vllm"),)
    kv_pool = finding(10, NAN_ASSERT, (BF16_REPORTED,))
    sampler = finding(20, NAN_ASSERT, (SAMPLE_WITH_PYTORCH,), cause=OTHER_CAUSE, conditions=on_vllm)

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([kv_pool, sampler]))

    assert result.fixes[0].finding.id == 10
    assert result.tied_causes == ()
    assert result.tied_note == ""


def test_two_symptoms_of_one_stated_cause_are_no_tie() -> None:
    first = finding(10, NAN_ASSERT, (BF16_REPORTED,), cause=SHARED_CAUSE)
    second = finding(20, NAN_ASSERT, (UNSET_BACKEND,), cause=SHARED_CAUSE)

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([first, second]))

    assert {f.finding.id for f in result.fixes} == {10, 20}
    assert result.tied_causes == ()


def test_an_unknown_setup_that_would_tell_them_apart_is_asked_beside_the_tie() -> None:
    on_blackwell = (Condition("gpu.arch", "sm_120"),)
    on_hopper = (Condition("gpu.arch", "sm_90"),)
    kv_pool = finding(10, NAN_ASSERT, (BF16_REPORTED,), conditions=on_blackwell)
    sampler = finding(
        20, NAN_ASSERT, (SAMPLE_WITH_PYTORCH,), cause=OTHER_CAUSE, conditions=on_hopper
    )

    result = diagnose(NAN_ASSERT_ELSEWHERE, build_context(), build_graph([kv_pool, sampler]))

    assert {t.finding.id for t in result.tied_causes} == {10, 20}
    assert "gpu.arch" in {q.key for q in result.questions}


def test_a_tie_on_another_setup_is_told_as_a_likeness_not_as_the_known_causes() -> None:
    on_blackwell = (Condition("gpu.arch", "sm_120"),)
    kv_pool = finding(10, NAN_ASSERT, (BF16_REPORTED,), conditions=on_blackwell)
    sampler = finding(
        20, NAN_ASSERT, (SAMPLE_WITH_PYTORCH,), cause=OTHER_CAUSE, conditions=on_blackwell
    )

    on_hopper = build_context(gpu="H100")
    result = diagnose(NAN_ASSERT_ELSEWHERE, on_hopper, build_graph([kv_pool, sampler]))

    assert result.verdict == "different_setup"
    assert {t.finding.id for t in result.tied_causes} == {10, 20}
    assert result.tied_note.startswith("The paste is as much like findings of 2 causes")
