"""A condition derived from where a finding was seen is not one its writer stated.

Contradicted by the user's setup, a stated condition says the fix is for another
setup; a derived one only that the finding was seen on another. The walk weighs the
second less (`contradicted_derived` in data/ranking.json), and the verdict still says
"different setup" for both.
"""

from __future__ import annotations

import pytest

from decisiontree.conditions import (
    ConditionError,
    as_dict,
    as_line,
    canonical,
    checked,
    parse_line,
)
from decisiontree.diagnose import diagnose
from decisiontree.documents.derive import derived_conditions
from decisiontree.documents.model import ExtractedFix
from decisiontree.graph import build_graph
from decisiontree.match import Candidate
from decisiontree.records import Change, ChangeAction, Condition, FindingRecord, Outcome
from decisiontree.vocabulary import load
from decisiontree.walk import walk
from tests.decisiontree.test_walk import (
    BF16_REPORTED,
    NAN_ASSERT,
    NAN_ASSERT_ELSEWHERE,
    POOL_ASSERT,
    UNSET_BACKEND,
    finding,
    on_sm120,
)

SEEN_ON_HOPPER = Condition("gpu.arch", "sm_90", derived=True)
NEEDS_HOPPER = Condition("gpu.arch", "sm_90")
NEEDS_BLACKWELL = Condition("gpu.arch", "sm_120")


def strong_and_weaker(strong: tuple[Condition, ...]) -> tuple[FindingRecord, FindingRecord]:
    """Finding 10 matches the paste far better; finding 20 fits the user's sm_120 GPU."""
    matched_well = finding(
        10, NAN_ASSERT, (UNSET_BACKEND,), cause="the cause of the first", conditions=strong
    )
    fits = finding(
        20,
        POOL_ASSERT,
        (BF16_REPORTED,),
        cause="the cause of the second",
        conditions=(NEEDS_BLACKWELL,),
    )
    return matched_well, fits


def ranked_fix_ids(findings: tuple[FindingRecord, ...], scores: dict[int, float]) -> list[int]:
    candidates = [Candidate(i, score, "terms", ("assert",), None) for i, score in scores.items()]
    result = walk(candidates, on_sm120(), build_graph(findings), load())
    return [ranked.fix.id for ranked in result.fixes]


# A match 1.6 times as strong as the other's, the fitting one still within view.
CLEARLY_STRONGER = {10: 0.95, 20: 0.58}


def test_a_finding_only_seen_on_another_gpu_still_leads_when_it_matches_clearly_better() -> None:
    findings = strong_and_weaker((SEEN_ON_HOPPER,))

    assert ranked_fix_ids(findings, CLEARLY_STRONGER) == [UNSET_BACKEND.id, BF16_REPORTED.id]


def test_a_finding_that_states_another_gpu_stays_below_the_one_that_fits() -> None:
    findings = strong_and_weaker((NEEDS_HOPPER,))

    assert ranked_fix_ids(findings, CLEARLY_STRONGER) == [BF16_REPORTED.id, UNSET_BACKEND.id]


def test_a_gpu_both_stated_and_derived_counts_as_stated() -> None:
    findings = strong_and_weaker((SEEN_ON_HOPPER, NEEDS_HOPPER))

    assert ranked_fix_ids(findings, CLEARLY_STRONGER) == [BF16_REPORTED.id, UNSET_BACKEND.id]


def test_a_derived_condition_the_setup_meets_lifts_its_finding_as_a_stated_one_does() -> None:
    # The same error twice; the lower id would win a tie.
    no_setup = finding(
        10, NAN_ASSERT, (UNSET_BACKEND,), cause="the cause of the first", conditions=()
    )
    seen_here = finding(
        20,
        NAN_ASSERT,
        (BF16_REPORTED,),
        cause="the cause of the second",
        conditions=(Condition("gpu.arch", "sm_120", derived=True),),
    )

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([no_setup, seen_here]))

    assert [f.fix.id for f in result.fixes] == [BF16_REPORTED.id, UNSET_BACKEND.id]


def test_the_answer_still_says_the_finding_was_seen_on_another_setup() -> None:
    seen_elsewhere = finding(10, NAN_ASSERT, (UNSET_BACKEND,), conditions=(SEEN_ON_HOPPER,))

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([seen_elsewhere]))

    assert result.verdict == "different_setup"
    assert [d.describe() for d in result.different_setup] == [
        "GPU sm_120 here, sm_90 in the finding"
    ]
    (step,) = [s for s in result.fixes[0].why if s.step == "condition"]
    assert (step.key, step.value, str(step.state)) == ("gpu.arch", "sm_90", "contradicted")
    assert step.detail == (
        "seen where GPU architecture is sm_90 (not stated as needed); here sm_120 (contradicted)"
    )


def test_a_stated_condition_says_what_the_cause_needs() -> None:
    stated = finding(10, NAN_ASSERT, (UNSET_BACKEND,), conditions=(NEEDS_HOPPER,))

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([stated]))

    assert result.verdict == "different_setup"
    (step,) = [s for s in result.fixes[0].why if s.step == "condition"]
    assert step.detail == "applies when GPU architecture is sm_90; here sm_120 (contradicted)"


# --- the mark, wherever a condition is written or stored ------------------------------


def test_a_reviewer_marks_a_derived_condition_with_seen_and_reads_it_back() -> None:
    derived = parse_line("arch = SM90 (seen)")

    assert derived == SEEN_ON_HOPPER
    assert as_line(derived) == "gpu.arch = sm_90 (seen)"
    assert as_line(as_dict(derived)) == "gpu.arch = sm_90 (seen)"
    assert parse_line("gpu.arch = sm_90 (Seen) ") == derived
    assert parse_line(as_line(derived)) == derived
    assert parse_line("gpu.arch = sm_90") == NEEDS_HOPPER
    assert as_line(as_dict(NEEDS_HOPPER)) == "gpu.arch = sm_90"


def test_the_seen_mark_is_no_part_of_the_value_it_follows() -> None:
    assert parse_line("framework = sglang (seen)") == Condition("framework", "sglang", derived=True)
    assert parse_line("flag.kv-cache-dtype != fp8_e4m3 (seen)") == Condition(
        "flag.kv-cache-dtype", "fp8_e4m3", negate=True, derived=True
    )


def test_stored_conditions_keep_the_mark_and_old_ones_read_as_stated() -> None:
    stored = [as_dict(SEEN_ON_HOPPER), as_dict(NEEDS_BLACKWELL)]

    assert stored == [
        {"key": "gpu.arch", "value": "sm_90", "negate": False, "derived": True},
        {"key": "gpu.arch", "value": "sm_120", "negate": False},
    ]
    assert checked(stored) == stored
    assert checked([{"key": "arch", "value": "SM90", "derived": True}]) == [stored[0]]
    assert checked([{"key": "gpu.arch", "value": "sm_90"}]) == [as_dict(NEEDS_HOPPER)]


def test_a_derived_mark_that_is_not_true_or_false_is_refused() -> None:
    with pytest.raises(ConditionError) as refused:
        checked([{"key": "gpu.arch", "value": "sm_90", "derived": "yes"}])

    assert str(refused.value) == '"derived" is true or false.'


def test_a_renamed_flag_keeps_its_derived_mark() -> None:
    old = Condition("flag.nsa-decode-backend", "flashmla_kv", derived=True)

    assert canonical(old, "sglang") == Condition(
        "flag.dsa-decode-backend", "flashmla_kv", derived=True
    )


def tried(outcome: Outcome, *changes: Change) -> ExtractedFix:
    return ExtractedFix(text="", changes=changes, outcome=outcome)


def seen_with(*fixes: ExtractedFix) -> tuple[Condition, ...]:
    launched = {"gpu-memory-utilization": "0.95", "enable-prefix-caching": "true"}
    return derived_conditions(gpus=(), model_arch=None, framework=None, flags=launched, fixes=fixes)


def test_only_a_fix_that_helped_by_changing_a_launched_flag_ties_the_finding_to_that_value() -> (
    None
):
    derived = seen_with(
        # It did not help, so the launched value it changed says nothing.
        tried(Outcome.NO_EFFECT, Change(ChangeAction.SET_FLAG, "enable-prefix-caching", "false")),
        tried(
            Outcome.RESOLVES,
            Change(ChangeAction.SET_ENV, "NCCL_P2P_DISABLE", "1"),
            Change(ChangeAction.SET_FLAG, "gpu-memory-utilization", "0.85"),
        ),
        # Turning on what was already on changes nothing; a flag not launched neither.
        tried(Outcome.RESOLVES, Change(ChangeAction.SET_FLAG, "enable-prefix-caching", None)),
        tried(Outcome.PARTIAL, Change(ChangeAction.SET_FLAG, "max-num-seqs", "64")),
    )

    assert derived == (Condition("flag.gpu-memory-utilization", "0.95", derived=True),)


def test_a_fix_that_helped_by_removing_a_launched_flag_ties_the_finding_to_it() -> None:
    derived = seen_with(
        tried(Outcome.RESOLVES, Change(ChangeAction.REMOVE_FLAG, "enable-prefix-caching", None))
    )

    assert derived == (Condition("flag.enable-prefix-caching", "true", derived=True),)
