"""How the walk orders what it reaches: one remedy listed once with the evidence of every
symptom of its cause, the best path to each finding, runner-ups after the first match,
and fixes that cannot be a next step last.

The findings are tests/decisiontree/test_walk.py's: the NaN decode assert and the FP8
pool assert, two symptoms of one cause.
"""

from __future__ import annotations

from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.match import Candidate
from decisiontree.records import (
    Change,
    ChangeAction,
    Condition,
    Evidence,
    FindingRecord,
    FixRecord,
    Outcome,
)
from decisiontree.vocabulary import load
from decisiontree.walk import walk
from tests.decisiontree.test_walk import (
    BF16_REPORTED,
    BF16_VALIDATED,
    NAN_ASSERT,
    NAN_ASSERT_ELSEWHERE,
    POOL_ASSERT,
    TRITON_SAMPLING,
    UNSET_BACKEND,
    finding,
    on_sm120,
)


def match(finding_id: int, score: float, *, runner_up: bool = False) -> Candidate:
    return Candidate(finding_id, score, "terms", (), None, runner_up=runner_up)


def fix_ids(candidates: list[Candidate], findings: list[FindingRecord]) -> list[int]:
    result = walk(candidates, on_sm120(), build_graph(findings), load())
    return [f.fix.id for f in result.fixes]


def test_one_remedy_is_listed_once_as_this_symptoms_own_fix_with_the_runs_of_the_other() -> None:
    pool = finding(10, POOL_ASSERT, (BF16_VALIDATED,))
    nan = finding(20, NAN_ASSERT, (UNSET_BACKEND, BF16_REPORTED))

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([pool, nan]))

    # The runs made against the pool assert count for the NaN assert's own BF16 fix,
    # which the paste reaches directly: it leads, once, on its own path.
    assert [f.fix.id for f in result.fixes] == [BF16_REPORTED.id, UNSET_BACKEND.id]
    first = result.fixes[0]
    assert "validated on sm_120: 3 passed" in first.why[-1].detail
    assert [step.id for step in first.path if step.kind == "finding"] == [20]


def test_a_finding_matched_directly_keeps_that_path_over_a_worse_one_through_its_sibling() -> None:
    pool = finding(10, POOL_ASSERT, (BF16_REPORTED,))
    nan = finding(20, NAN_ASSERT, (UNSET_BACKEND,))

    # The pool assert is the better match; reached from the NaN assert it would count
    # half, after the NaN assert's own fix.
    assert fix_ids([match(10, 0.9), match(20, 0.8)], [pool, nan]) == [
        BF16_REPORTED.id,
        UNSET_BACKEND.id,
    ]


def test_of_two_equal_paths_to_a_finding_the_one_from_the_better_match_is_kept() -> None:
    pool = finding(10, POOL_ASSERT, (BF16_REPORTED,))
    nan = finding(20, NAN_ASSERT, (UNSET_BACKEND,))
    graph = build_graph([pool, nan])

    # Reached from the pool assert (0.8, halved for the step to another symptom) the NaN
    # assert scores what its own match of 0.5 gives it: the path found first stays.
    result = walk([match(10, 0.8), match(20, 0.5)], on_sm120(), graph, load())

    assert [f.fix.id for f in result.fixes] == [BF16_REPORTED.id, UNSET_BACKEND.id]
    assert [step.id for step in result.fixes[1].path if step.kind == "finding"] == [10, 20]


def test_a_finding_matched_at_exactly_the_share_of_the_best_that_is_shown_is_shown() -> None:
    # ranking.json's relative cut-off is 0.6: 0.3 is exactly 0.6 of 0.5.
    own = finding(10, POOL_ASSERT, (BF16_REPORTED,), cause="one cause")
    other = finding(20, NAN_ASSERT, (UNSET_BACKEND,), cause="another cause")

    assert fix_ids([match(10, 0.5), match(20, 0.3)], [own, other]) == [
        BF16_REPORTED.id,
        UNSET_BACKEND.id,
    ]


def test_every_runner_up_is_walked_after_the_first_match() -> None:
    first = finding(10, POOL_ASSERT, (BF16_REPORTED,), cause="one cause")
    second = finding(20, NAN_ASSERT, (UNSET_BACKEND,), cause="a second cause")
    third_fix = FixRecord(
        5, "Pin flashinfer", (Change(ChangeAction.PIN_VERSION, "flashinfer", "0.7.2"),),
        Outcome.RESOLVES,
    )  # fmt: skip
    third = finding(30, NAN_ASSERT, (third_fix,), cause="a third cause")
    candidates = [match(10, 0.5), match(20, 0.1, runner_up=True), match(30, 0.08, runner_up=True)]

    result = walk(candidates, on_sm120(), build_graph([first, second, third]), load())

    assert [(f.fix.id, f.runner_up) for f in result.fixes] == [
        (BF16_REPORTED.id, False),
        (UNSET_BACKEND.id, True),
        (third_fix.id, True),
    ]


def test_a_fix_told_only_in_words_ranks_by_its_evidence_like_any_other() -> None:
    rebuilt = FixRecord(
        6,
        "Clear the JIT kernel cache and restart",
        (),
        Outcome.RESOLVES,
        Evidence(validated_passed=(("sm_120", 2),)),
    )
    nan = finding(20, NAN_ASSERT, (UNSET_BACKEND, rebuilt))

    assert fix_ids([match(20, 0.9)], [nan]) == [rebuilt.id, UNSET_BACKEND.id]


def test_a_fix_whose_every_change_is_withheld_here_comes_after_one_that_fits() -> None:
    # The sparse decode kernel flag acts only on DSA models; this one is a Llama.
    sparse = FixRecord(
        7,
        "Use the trtllm sparse decode kernel",
        (Change(ChangeAction.SET_FLAG, "dsa-decode-backend", "trtllm"),),
        Outcome.RESOLVES,
        Evidence(validated_passed=(("sm_120", 3),)),
    )
    nan = finding(20, NAN_ASSERT, (sparse, UNSET_BACKEND))
    llama = on_sm120().with_answer("model.arch", "llama")

    result = walk([match(20, 0.9)], llama, build_graph([nan]), load())

    assert [f.fix.id for f in result.fixes] == [UNSET_BACKEND.id, sparse.id]
    assert result.fixes[1].changes == ()
    assert result.fixes[0].score < result.fixes[1].score
    assert [f.fits_nothing for f in result.fixes] == [False, True]


def test_with_no_fix_that_helps_the_verdict_speaks_of_the_finding_that_fits_best() -> None:
    # The same error seen under vLLM (its one fix did not help) and under SGLang (no fix
    # yet): on SGLang the second is the known issue, not "the same error elsewhere".
    under_vllm = finding(
        10,
        NAN_ASSERT,
        (TRITON_SAMPLING,),
        cause="one",
        conditions=(Condition("framework", "vllm"),),
    )
    under_sglang = finding(20, NAN_ASSERT, (), cause="another")

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([under_vllm, under_sglang]))

    assert result.fixes == ()
    assert [entry.fix.id for entry in result.not_helpful] == [TRITON_SAMPLING.id]
    assert result.verdict == "known"
    assert result.different_setup == ()


def test_scores_equal_to_the_four_places_go_first_to_the_finding_that_holds_the_error_as_printed() -> (
    None
):
    """Two findings whose samples print the same wrapper (a compiler's CalledProcessError)
    tie on their proposals' scores; the one with the paste's own fingerprint is the error."""
    older = finding(10, POOL_ASSERT, (BF16_REPORTED,), cause="one cause", conditions=())
    printed = finding(20, NAN_ASSERT, (UNSET_BACKEND,), cause="another", conditions=())
    same_print = Candidate(20, 0.6251, "fingerprint", (), None)

    result = walk(
        [same_print, match(10, 0.6251)], on_sm120(), build_graph([older, printed]), load()
    )

    assert [f.fix.id for f in result.fixes] == [UNSET_BACKEND.id, BF16_REPORTED.id]
    assert [f.as_printed for f in result.fixes] == [True, False]


def test_scores_equal_to_the_four_places_an_answer_shows_go_to_the_older_finding() -> None:
    # 0.5001 on a met condition (x1.25) is 0.625125: 0.6251 as shown, as is 0.6251.
    on_sglang = finding(20, NAN_ASSERT, (UNSET_BACKEND,), cause="one cause")
    no_conditions = finding(10, POOL_ASSERT, (BF16_REPORTED,), cause="another", conditions=())

    result = walk(
        [match(20, 0.5001), match(10, 0.6251)],
        on_sm120(),
        build_graph([on_sglang, no_conditions]),
        load(),
    )

    assert [(f.fix.id, f.score) for f in result.fixes] == [
        (BF16_REPORTED.id, 0.6251),
        (UNSET_BACKEND.id, 0.6251),
    ]
