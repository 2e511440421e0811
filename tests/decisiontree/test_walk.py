"""The graph decides: fixes ranked by a walk from the paste's matched findings.

Two findings below share one root cause (an FP8 sparse-attention KV pool that
only the DSA path may write) and show it as two symptoms: the NaN decode
assert and the pool assertion under triton attention.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from decisiontree.answer import Diagnosis
from decisiontree.context import Context, build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import (
    Change,
    ChangeAction,
    Condition,
    Evidence,
    FindingRecord,
    FixRecord,
    Outcome,
)

FIXTURES = Path(__file__).parent / "fixtures" / "diagnose"
NAN_ASSERT = (FIXTURES / "decode_assert_rtx_host_a.txt").read_text()
NAN_ASSERT_ELSEWHERE = (FIXTURES / "decode_assert_rtx_host_b.txt").read_text()
POOL_ASSERT = (FIXTURES / "dsa_fp8_pool_assert_a.txt").read_text()
SHARED_CAUSE = "the FP8 sparse-attention KV pool is written by a kernel that cannot read FP8"


def set_flag(name: str, value: str) -> Change:
    return Change(ChangeAction.SET_FLAG, name, value)


def finding(
    finding_id: int,
    sample: str,
    fixes: tuple[FixRecord, ...],
    *,
    cause: str = SHARED_CAUSE,
    conditions: tuple[Condition, ...] = (Condition("framework", "sglang"),),
) -> FindingRecord:
    return FindingRecord(
        id=finding_id,
        title=f"symptom {finding_id}",
        kind="crash",
        cause=cause,
        samples=(sample,),
        conditions=conditions,
        fixes=fixes,
    )


def on_sm120() -> Context:
    return build_context(gpu="RTX PRO 6000 Blackwell", framework="sglang")


BF16_VALIDATED = FixRecord(
    1,
    "Store the KV cache in BF16",
    (set_flag("kv-cache-dtype", "bf16"),),
    Outcome.RESOLVES,
    Evidence(validated_passed=(("sm_120", 3),)),
)
UNSET_BACKEND = FixRecord(
    2,
    "Leave the attention backend to the model",
    (Change(ChangeAction.REMOVE_FLAG, "attention-backend"),),
    Outcome.RESOLVES,
)
BF16_REPORTED = FixRecord(
    3, "Use a BF16 KV cache", (set_flag("kv-cache-dtype", "bf16"),), Outcome.RESOLVES
)
TRITON_SAMPLING = FixRecord(
    4, "Sample with pytorch", (set_flag("sampling-backend", "pytorch"),), Outcome.NO_EFFECT
)


def test_a_fix_validated_on_one_symptom_ranks_first_for_another_symptom_of_its_cause() -> None:
    pool = finding(10, POOL_ASSERT, (BF16_VALIDATED,))
    nan = finding(20, NAN_ASSERT, (UNSET_BACKEND, BF16_REPORTED))
    graph = build_graph([pool, nan])

    walked = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph)
    plain = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph, plain=True)

    # The three runs on sm_120 were made against the pool assert; they count here too.
    assert walked.fixes[0].changes == (set_flag("kv-cache-dtype", "bf16"),)
    assert "validated on sm_120: 3 passed" in walked.fixes[0].why[-1].detail
    # A lookup table knows only this symptom's own reports: a tie, broken by id.
    assert plain.fixes[0].fix.id == UNSET_BACKEND.id


def test_it_reaches_the_fix_of_another_symptom_and_draws_that_path() -> None:
    pool = finding(10, POOL_ASSERT, (BF16_VALIDATED,))
    nan = finding(20, NAN_ASSERT, (TRITON_SAMPLING,))
    graph = build_graph([pool, nan])

    walked = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph)

    first = walked.fixes[0]
    assert first.fix.id == BF16_VALIDATED.id
    assert [(s.kind, s.id) for s in first.path] == [
        ("signature", None),
        ("finding", 20),
        ("cause", None),
        ("finding", 10),
        ("fix", BF16_VALIDATED.id),
    ]
    assert any(s.step == "shared" and "finding 10" in s.detail for s in first.why)
    assert [e.fix.id for e in walked.not_helpful] == [TRITON_SAMPLING.id]


def test_the_plain_ranking_stops_at_the_matched_finding() -> None:
    graph = build_graph(
        [finding(10, POOL_ASSERT, (BF16_VALIDATED,)), finding(20, NAN_ASSERT, (TRITON_SAMPLING,))]
    )

    plain = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph, plain=True)

    assert plain.fixes == ()


def test_findings_with_different_causes_do_not_lend_each_other_fixes() -> None:
    pool = finding(10, POOL_ASSERT, (BF16_VALIDATED,), cause="a different cause altogether here")
    nan = finding(20, NAN_ASSERT, (UNSET_BACKEND,))
    graph = build_graph([pool, nan])

    walked = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph)

    assert [f.fix.id for f in walked.fixes] == [UNSET_BACKEND.id]


def test_a_fix_reported_for_this_symptom_beats_a_siblings_fix_with_equal_evidence() -> None:
    pool = finding(10, POOL_ASSERT, (BF16_REPORTED,))
    nan = finding(20, NAN_ASSERT, (UNSET_BACKEND,))
    graph = build_graph([pool, nan])

    walked = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph)

    assert [f.fix.id for f in walked.fixes] == [UNSET_BACKEND.id, BF16_REPORTED.id]


def test_a_close_match_on_a_contradicted_setup_stays_in_view_below_the_one_that_fits() -> None:
    hopper = finding(
        10,
        NAN_ASSERT,
        (UNSET_BACKEND,),
        cause="one cause of the hopper crash, written out",
        conditions=(Condition("gpu.arch", "sm_90"),),
    )
    blackwell = finding(
        20,
        NAN_ASSERT,
        (BF16_REPORTED,),
        cause="another cause of the blackwell crash, written out",
        conditions=(Condition("gpu.arch", "sm_120"),),
    )

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([hopper, blackwell]))

    assert [f.fix.id for f in result.fixes] == [BF16_REPORTED.id, UNSET_BACKEND.id]
    assert result.verdict == "known"


# --- proposed fixes: below anything with evidence, above nothing ----------------------

KV_AUTO_PROPOSED = FixRecord(
    5, "Try --kv-cache-dtype auto", (set_flag("kv-cache-dtype", "auto"),), Outcome.PROPOSED
)


def proposal_here_and_evidence_elsewhere(
    *, derived: bool = True, only_the_gpu: bool = False
) -> Diagnosis:
    """The finding that fits this setup has only a proposal; the fix with evidence comes
    from a finding on Hopper with vLLM: seen there (`derived`), or stated to need it."""
    fits = finding(10, NAN_ASSERT, (KV_AUTO_PROPOSED,), cause="one cause written in full")
    elsewhere = finding(
        20,
        NAN_ASSERT,
        (UNSET_BACKEND,),
        cause="another cause written in full",
        conditions=(
            Condition("gpu.arch", "sm_90", derived=derived),
            *(() if only_the_gpu else (Condition("framework", "vllm", derived=derived),)),
        ),
    )
    return diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([fits, elsewhere]))


def test_a_proposed_fix_ranks_below_every_fix_with_evidence_and_says_validate_it() -> None:
    # The reported fix's finding was only seen on another setup: its evidence counts.
    result = proposal_here_and_evidence_elsewhere()

    assert [f.fix.id for f in result.fixes] == [UNSET_BACKEND.id, KV_AUTO_PROPOSED.id]
    assert result.fixes[1].proposed and not result.fixes[0].proposed
    assert result.not_helpful == ()


def test_evidence_from_a_setup_its_finding_says_is_not_this_one_does_not_outrank_a_proposal() -> (
    None
):
    """A fix confirmed for vLLM on Hopper, by a finding that says it needs them, tells an
    SGLang user on Blackwell little: the proposal of the finding that fits comes first."""
    result = proposal_here_and_evidence_elsewhere(derived=False)

    assert [f.fix.id for f in result.fixes] == [KV_AUTO_PROPOSED.id, UNSET_BACKEND.id]
    assert result.fixes[1].for_other_setup == (
        "GPU architecture is sm_90 (yours: sm_120)",
        "framework is vllm (yours: sglang)",
    )
    assert result.fixes[0].for_other_setup == ()
    assert result.verdict == "known"


def test_a_fix_for_another_setup_comes_after_a_fitting_proposal_whatever_the_scores() -> None:
    """One contradicted condition (x0.2) leaves the reported fix a higher score than the
    proposal (x0.1); its finding still says it is for another GPU."""
    result = proposal_here_and_evidence_elsewhere(derived=False, only_the_gpu=True)

    assert [f.fix.id for f in result.fixes] == [KV_AUTO_PROPOSED.id, UNSET_BACKEND.id]
    assert result.fixes[1].score > result.fixes[0].score
    assert result.fixes[1].for_other_setup == ("GPU architecture is sm_90 (yours: sm_120)",)


def test_a_proposal_is_still_offered_when_nothing_else_is_known() -> None:
    graph = build_graph([finding(10, NAN_ASSERT, (KV_AUTO_PROPOSED,))])

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph)

    assert [(f.fix.id, f.proposed) for f in result.fixes] == [(KV_AUTO_PROPOSED.id, True)]


def test_a_proposal_that_passed_a_validation_run_ranks_on_its_evidence() -> None:
    validated = FixRecord(
        5,
        "Try --kv-cache-dtype auto",
        (set_flag("kv-cache-dtype", "auto"),),
        Outcome.PROPOSED,
        Evidence(validated_passed=(("sm_120", 2),)),
    )
    graph = build_graph([finding(10, NAN_ASSERT, (validated, UNSET_BACKEND))])

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph)

    assert [(f.fix.id, f.proposed) for f in result.fixes] == [(5, False), (UNSET_BACKEND.id, False)]


def test_a_fix_that_undoes_a_siblings_own_trigger_stays_with_that_symptom() -> None:
    # Another symptom of the cause needed a high memory fraction to show up; lowering it
    # cured that symptom, and says nothing about this one.
    lower_fraction = FixRecord(
        6, "Lower the memory fraction", (set_flag("mem-fraction-static", "0.88"),), Outcome.RESOLVES
    )
    oom = finding(
        10,
        POOL_ASSERT,
        (lower_fraction, BF16_VALIDATED),
        conditions=(Condition("flag.mem-fraction-static", "0.95"),),
    )
    nan = finding(20, NAN_ASSERT, (TRITON_SAMPLING,))

    walked = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([oom, nan]))

    assert [f.fix.id for f in walked.fixes] == [BF16_VALIDATED.id]


def test_the_plain_ranking_asks_only_about_the_findings_it_ranks() -> None:
    # The pool assert's fix holds on one model only; the walk reaches it, so which
    # model it is decides the walked answer's first fix. The plain ranking never
    # reaches it: the model changes nothing there, and it is not asked.
    pool = finding(
        10,
        POOL_ASSERT,
        (BF16_VALIDATED,),
        conditions=(
            Condition("framework", "sglang"),
            Condition("model.arch", "GlmMoeDsaForCausalLM"),
        ),
    )
    nan = finding(20, NAN_ASSERT, (UNSET_BACKEND,))
    graph = build_graph([pool, nan])

    walked = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph)
    plain = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph, plain=True)

    assert [q.text for q in walked.questions] == [
        "Which model architecture (model_type in its config.json)? On another model the first fix differs."
    ]
    assert [f.fix.id for f in plain.fixes] == [UNSET_BACKEND.id]
    assert plain.questions == ()


def test_the_drawn_path_names_the_cause_as_the_finding_it_leads_to_states_it() -> None:
    # The same cause in other case and spacing is one cause node; the step before the
    # sibling shows the sibling's own words.
    pool_words = "The FP8 sparse-attention KV pool is written by a kernel that  cannot read FP8"
    pool = finding(10, POOL_ASSERT, (BF16_VALIDATED,), cause=pool_words)
    nan = finding(20, NAN_ASSERT, (TRITON_SAMPLING,))

    walked = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([pool, nan]))

    first = walked.fixes[0]
    assert first.fix.id == BF16_VALIDATED.id
    assert [s.label for s in first.path if s.kind == "cause"] == [pool_words]


def test_the_plain_ranking_weighs_an_answer_by_the_plain_ranking_too() -> None:
    # The matched finding holds on one model only. Whichever the model, the plain
    # ranking has that finding's one fix to offer, so the model is not asked; weighed
    # by the walk instead, an answer would bring the other symptom's validated fix first.
    pool = finding(10, POOL_ASSERT, (BF16_VALIDATED,))
    nan = finding(
        20,
        NAN_ASSERT,
        (UNSET_BACKEND,),
        conditions=(
            Condition("framework", "sglang"),
            Condition("model.arch", "GlmMoeDsaForCausalLM"),
        ),
    )

    plain = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([pool, nan]), plain=True)

    assert [f.fix.id for f in plain.fixes] == [UNSET_BACKEND.id]
    assert plain.questions == ()


def test_a_fix_that_did_not_help_another_symptom_says_where_it_was_tried() -> None:
    pool = finding(10, POOL_ASSERT, (BF16_VALIDATED, TRITON_SAMPLING))
    nan = finding(20, NAN_ASSERT, ())

    walked = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([pool, nan]))

    assert [(e.fix.id, e.reason) for e in walked.not_helpful] == [
        (
            TRITON_SAMPLING.id,
            "did not help in finding 10 (symptom 10), another symptom of the same cause",
        )
    ]


def test_a_fix_that_did_not_help_this_symptom_names_only_its_finding() -> None:
    pool = finding(10, POOL_ASSERT, (BF16_VALIDATED,))
    nan = finding(20, NAN_ASSERT, (TRITON_SAMPLING,))

    walked = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([pool, nan]))

    assert [(e.fix.id, e.reason) for e in walked.not_helpful] == [
        (TRITON_SAMPLING.id, "did not help in finding 20 (symptom 20)")
    ]


def test_a_fix_that_made_it_worse_says_so() -> None:
    worse = dataclasses.replace(TRITON_SAMPLING, outcome=Outcome.WORSE)
    nan = finding(20, NAN_ASSERT, (UNSET_BACKEND, worse))

    walked = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([nan]))

    assert [(e.fix.id, e.reason) for e in walked.not_helpful] == [
        (worse.id, "made it worse in finding 20 (symptom 20)")
    ]
