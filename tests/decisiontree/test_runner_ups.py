"""Runner-ups: weaker matches listed after a confident first one, never alone.

A near miss of the same framework often comes first and the right finding second, far
below it; listing up to `runner_ups` more candidates above a low cut-off after a first
one at or above "similar" puts it in view, and costs no false match, because nothing is
listed from a runner-up alone.
"""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.graph import build_graph
from decisiontree.match import (
    Candidate,
    MatchLevel,
    runner_up_threshold,
    shortlist,
    similar_threshold,
)
from decisiontree.records import Condition
from decisiontree.vocabulary import load
from decisiontree.walk import walk
from tests.decisiontree.test_walk import (
    BF16_REPORTED,
    NAN_ASSERT,
    POOL_ASSERT,
    UNSET_BACKEND,
    finding,
)


def candidate(finding_id: int, score: float, layer: str = "terms") -> Candidate:
    return Candidate(finding_id, score, layer, ("shared",), None)


def between_cutoffs() -> float:
    return (runner_up_threshold() + similar_threshold()) / 2


def test_weaker_matches_are_listed_after_a_confident_first_one() -> None:
    first = candidate(1, similar_threshold() + 0.05)
    weaker = [candidate(n, between_cutoffs()) for n in (2, 3, 4)]
    too_weak = candidate(5, runner_up_threshold() / 2)

    listed = shortlist([first, *weaker, too_weak])

    assert [c.finding_id for c in listed] == [1, 2, 3]  # two runner-ups at most
    assert [c.runner_up for c in listed] == [False, True, True]
    assert listed[1].level is MatchLevel.NONE  # its score is not raised to look similar
    assert "less likely than the first match" in listed[1].explain()


def test_weak_matches_alone_list_nothing() -> None:
    weak = [candidate(n, between_cutoffs()) for n in (1, 2)]

    assert shortlist(weak) == ()


def test_the_same_error_as_printed_lists_no_guesses_beside_it() -> None:
    exact = candidate(1, 0.99, layer="fingerprint")
    weaker = candidate(2, between_cutoffs())

    assert [c.finding_id for c in shortlist([exact, weaker])] == [1]


def test_a_reviewers_link_lists_no_guesses_beside_it() -> None:
    linked = candidate(1, 0.99, layer="linked")
    weaker = candidate(2, between_cutoffs())

    assert [c.finding_id for c in shortlist([linked, weaker])] == [1]


def test_words_without_a_phrase_beside_the_pastes_own_message_are_a_runner_up() -> None:
    """A first match that holds the paste's message template is the error; a finding that
    shares its words but no phrase of its message is a guess, however close its score."""
    exact = candidate(1, 0.98, layer="template")
    words_only = Candidate(2, 0.56, "terms", ("mem-fraction-static",), None, phrase_shared=False)
    phrased = Candidate(3, 0.56, "terms", ("not enough memory",), None, phrase_shared=True)

    listed = shortlist([exact, words_only, phrased], relative=0.55)

    assert [(c.finding_id, c.runner_up) for c in listed] == [(1, False), (3, False), (2, True)]
    # Behind a first match on words alone, the same candidate is listed as a peer.
    words_first = shortlist([candidate(1, 0.98), words_only], relative=0.55)
    assert [(c.finding_id, c.runner_up) for c in words_first] == [(1, False), (2, False)]


def test_a_match_at_the_runner_up_cut_off_is_listed() -> None:
    first = candidate(1, similar_threshold() + 0.05)
    at_cutoff = candidate(2, runner_up_threshold())

    assert [(c.finding_id, c.runner_up) for c in shortlist([first, at_cutoff])] == [
        (1, False),
        (2, True),
    ]


def test_a_similar_match_far_below_the_first_is_listed_as_a_runner_up() -> None:
    # Both at or above "similar", the second under 60 % of the first: the answer's
    # relative cut-off would hide it, so it comes after the first as a runner-up.
    first = candidate(1, 0.95)
    far_below = candidate(2, similar_threshold())
    close = candidate(3, 0.9)

    listed = shortlist([first, close, far_below], relative=0.6)

    assert [(c.finding_id, c.runner_up) for c in listed] == [(1, False), (3, False), (2, True)]
    assert [c.runner_up for c in shortlist([first, close, far_below])] == [False] * 3


def test_a_similar_match_exactly_at_the_relative_cut_off_is_listed_as_a_match() -> None:
    # Exactly half the first score with a relative cut-off of a half: shown beside the
    # first as a match, not moved down among the runner-ups.
    first = candidate(1, 0.8)
    at_half = candidate(2, 0.4)

    listed = shortlist([first, at_half], relative=0.5)

    assert [(c.finding_id, c.runner_up) for c in listed] == [(1, False), (2, False)]


def test_nothing_found_lists_nothing() -> None:
    assert shortlist([]) == ()


def test_a_runner_ups_fix_comes_after_the_first_matchs_even_when_it_scores_higher() -> None:
    # The first match's only fix was seen on another GPU architecture, so the context
    # scores it down below the runner-up's; the runner-up is still the weaker match.
    on_hopper = finding(
        10,
        NAN_ASSERT,
        (UNSET_BACKEND,),
        cause="the decode kernel reads an FP8 cache it cannot read",
        conditions=(Condition("gpu.arch", "sm_90"),),
    )
    near = finding(20, POOL_ASSERT, (BF16_REPORTED,), cause="the pool stores FP8 by default")
    graph = build_graph([on_hopper, near])
    first = candidate(10, similar_threshold() + 0.01)
    # Far below the first: the walk's cut-off relative to the best match would drop it.
    runner_up = shortlist([first, candidate(20, between_cutoffs())])[1]
    context = build_context(gpu="RTX PRO 6000 Blackwell", framework="sglang")

    result = walk([first, runner_up], context, graph, load())

    assert [f.fix.id for f in result.fixes] == [UNSET_BACKEND.id, BF16_REPORTED.id]
    assert result.fixes[0].score < result.fixes[1].score
