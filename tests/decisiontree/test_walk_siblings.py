"""What another symptom of the same cause lends to a paste, and at what rank.

The findings below come from tests/decisiontree/test_walk.py's incident: the NaN
decode assert and the FP8 pool assert, two symptoms of one cause.
"""

from __future__ import annotations

from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Condition, Evidence, FixRecord, Outcome
from tests.decisiontree.test_walk import (
    BF16_REPORTED,
    KV_AUTO_PROPOSED,
    NAN_ASSERT,
    NAN_ASSERT_ELSEWHERE,
    POOL_ASSERT,
    SHARED_CAUSE,
    UNSET_BACKEND,
    finding,
    on_sm120,
)


def test_a_siblings_fix_seen_only_on_another_gpu_ranks_below_this_symptoms_own() -> None:
    own = finding(20, NAN_ASSERT, (UNSET_BACKEND,))
    on_hopper = finding(
        10,
        POOL_ASSERT,
        (BF16_REPORTED,),
        conditions=(Condition("framework", "sglang"), Condition("gpu.arch", "sm_90")),
    )

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([own, on_hopper]))

    assert [f.fix.id for f in result.fixes] == [UNSET_BACKEND.id, BF16_REPORTED.id]
    lent = result.fixes[1]
    assert [(s.key, s.state) for s in lent.why if s.step == "condition"][-1] == (
        "gpu.arch",
        "contradicted",
    )


def test_the_drawn_path_names_the_shared_cause_and_the_other_symptom() -> None:
    own = finding(20, NAN_ASSERT, ())
    pool = finding(10, POOL_ASSERT, (BF16_REPORTED,))

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([own, pool]))

    [lent] = result.fixes
    assert [(s.kind, s.label) for s in lent.path[2:]] == [
        ("cause", SHARED_CAUSE),
        ("finding", "symptom 10"),
        ("fix", BF16_REPORTED.summary),
    ]


def test_one_vote_that_a_proposal_helped_is_evidence_enough_to_stop_calling_it_a_proposal() -> None:
    voted = FixRecord(
        KV_AUTO_PROPOSED.id,
        KV_AUTO_PROPOSED.summary,
        KV_AUTO_PROPOSED.changes,
        Outcome.PROPOSED,
        Evidence(feedback_helped=1),
    )
    graph = build_graph([finding(10, NAN_ASSERT, (voted, UNSET_BACKEND))])

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph)

    # One vote weighs less than a report that a fix resolved it, so it ranks second.
    assert [(f.fix.id, f.proposed) for f in result.fixes] == [
        (UNSET_BACKEND.id, False),
        (KV_AUTO_PROPOSED.id, False),
    ]
