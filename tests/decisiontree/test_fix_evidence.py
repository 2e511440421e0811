"""How a fix's evidence reads and weighs: reported outcome, validation runs, votes.

The knowledge base is tests/decisiontree/test_diagnose.py's. With ranking.json's
factors a report that a fix resolved the error weighs 1, a passed run on the user's
GPU 1 (a failed one -1), a passed run on a GPU not known 0.5, a vote 0.1.
"""

from __future__ import annotations

import dataclasses

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.records import Change, ChangeAction, Condition, Evidence, FixRecord, Outcome
from tests.decisiontree.test_diagnose import (
    BF16_ONLY,
    SGLANG_CMD,
    graph_oom_finding,
    knowledge,
    rtx_context,
    sample,
    triton_pool_finding,
)

POOL_ASSERT = sample("dsa_fp8_pool_assert_b.txt")


def evidence_of(fix_id: int, result: object) -> str:
    [ranked] = [f for f in result.fixes if f.fix.id == fix_id]  # type: ignore[attr-defined]
    return str(ranked.why[-1].detail)


def test_runs_on_the_users_gpu_and_votes_both_ways_add_up_in_the_fixs_evidence() -> None:
    tried = dataclasses.replace(
        BF16_ONLY,
        evidence=Evidence(
            validated_passed=(("sm_120", 2),),
            validated_failed=(("sm_120", 1),),
            feedback_helped=3,
            feedback_not_helped=1,
        ),
    )

    result = diagnose(POOL_ASSERT, rtx_context(), knowledge(triton_pool_finding(tried)))

    # 1 reported + (2 - 1) runs here + 0.1 x (3 - 1) votes
    assert evidence_of(tried.id, result) == (
        "reported: resolves; validated on sm_120: 2 passed, 1 failed; "
        "feedback: 3 helped, 1 did not (evidence x2.20)"
    )


def test_one_vote_that_helped_is_told_and_counted() -> None:
    liked = dataclasses.replace(BF16_ONLY, evidence=Evidence(feedback_helped=1))

    result = diagnose(POOL_ASSERT, rtx_context(), knowledge(triton_pool_finding(liked)))

    assert evidence_of(liked.id, result) == (
        "reported: resolves; feedback: 1 helped, 0 did not (evidence x1.10)"
    )


def test_new_votes_and_runs_reach_the_answer_on_the_same_built_graph() -> None:
    built = knowledge(triton_pool_finding(BF16_ONLY))
    before = diagnose(POOL_ASSERT, rtx_context(), built)

    voted = built.with_evidence(
        {BF16_ONLY.id: Evidence(validated_passed=(("sm_120", 1),), feedback_helped=2)}
    )
    after = diagnose(POOL_ASSERT, rtx_context(), voted)

    assert evidence_of(BF16_ONLY.id, before) == "reported: resolves (evidence x1.00)"
    assert evidence_of(BF16_ONLY.id, after) == (
        "reported: resolves; validated on sm_120: 1 passed, 0 failed; "
        "feedback: 2 helped, 0 did not (evidence x2.20)"
    )
    assert voted.index is built.index  # nothing was parsed or indexed again
    assert evidence_of(BF16_ONLY.id, diagnose(POOL_ASSERT, rtx_context(), built)) == (
        "reported: resolves (evidence x1.00)"
    )  # the graph it came from still answers as before


def test_with_the_gpu_unknown_every_passed_run_counts_half_and_no_failed_one_counts() -> None:
    validated = dataclasses.replace(
        BF16_ONLY,
        evidence=Evidence(validated_passed=(("sm_120", 2),), validated_failed=(("sm_120", 1),)),
    )
    gpu_unknown = build_context(launch_command=SGLANG_CMD, framework="sglang")

    result = diagnose(POOL_ASSERT, gpu_unknown, knowledge(triton_pool_finding(validated)))

    assert evidence_of(validated.id, result) == (
        "reported: resolves; validated elsewhere: 2 passed (evidence x2.00)"
    )


def test_a_vllm_fix_for_an_sglang_user_is_translated_or_withheld_with_the_reason() -> None:
    eager = FixRecord(
        17,
        "Run eagerly with one scheduler step",
        (
            Change(ChangeAction.SET_FLAG, "num-scheduler-steps", "1"),
            Change(ChangeAction.SET_FLAG, "enforce-eager", None),
        ),
        Outcome.RESOLVES,
    )
    from_vllm = dataclasses.replace(
        graph_oom_finding(), conditions=(Condition("framework", "vllm"),), fixes=(eager,)
    )
    sglang_user = build_context(
        launch_command="python -m sglang.launch_server --model-path Qwen/Qwen3-8B",
        framework="sglang",
    )

    result = diagnose(sample("graph_capture_oom.txt"), sglang_user, knowledge(from_vllm))

    [fix] = result.fixes
    assert fix.command_changes == ("--disable-cuda-graph",)
    [withheld] = fix.withheld
    assert (withheld.command_change, withheld.reason) == (
        "--num-scheduler-steps 1",
        "sglang has no --num-scheduler-steps",
    )


def test_runs_on_the_users_gpu_and_elsewhere_are_counted_apart() -> None:
    validated = dataclasses.replace(
        BF16_ONLY, evidence=Evidence(validated_passed=(("sm_120", 3), ("sm_90", 2)))
    )

    result = diagnose(POOL_ASSERT, rtx_context(), knowledge(triton_pool_finding(validated)))

    # 1 reported + 3 runs here + 0.25 x 2 runs on another architecture
    assert evidence_of(validated.id, result) == (
        "reported: resolves; validated on sm_120: 3 passed, 0 failed; "
        "validated elsewhere: 2 passed (evidence x4.50)"
    )


def test_fixes_that_change_no_flag_are_each_listed_and_none_is_already_applied() -> None:
    driver = FixRecord(42, "Update the NVIDIA driver to the 580 branch", (), Outcome.RESOLVES)
    reboot = FixRecord(43, "Reboot the host once the driver is in", (), Outcome.RESOLVES)

    result = diagnose(POOL_ASSERT, rtx_context(), knowledge(triton_pool_finding(driver, reboot)))

    assert [(f.fix.id, f.already_applied) for f in result.fixes] == [(42, False), (43, False)]
