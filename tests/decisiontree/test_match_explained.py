"""The first step of every fix's `why`: how the paste matched its finding, in words."""

from __future__ import annotations

from decisiontree.match import Candidate, Query, SignatureIndex
from tests.decisiontree.test_fingerprint_version import OTHER_BUG, SCHEDULER_CRASH, sign
from tests.decisiontree.test_reviewer_decisions import SCHEDULER_CRASH_ELSEWHERE


def best_match(paste: str) -> Candidate:
    index = SignatureIndex()
    index.add(1, sign(OTHER_BUG))
    index.add(2, sign(SCHEDULER_CRASH))
    index.link(sign(OTHER_BUG).fingerprint, 1)
    index.finish()
    return index.lookup([Query.of(sign(paste))])[0]


def test_a_reviewers_link_is_told_as_the_reviewers() -> None:
    match = best_match(OTHER_BUG)

    assert (match.finding_id, match.layer) == (1, "linked")
    assert match.explain() == "a reviewer linked this fingerprint to the finding"


def test_the_same_error_from_the_same_code_is_told_with_the_five_most_telling_shared_words() -> (
    None
):
    match = best_match(SCHEDULER_CRASH)

    assert (match.finding_id, match.layer) == (2, "fingerprint")
    assert len(match.matched_terms) > 5
    shared = ", ".join(match.matched_terms[:5])
    assert match.explain() == f"same error fingerprint as a known sample (shares {shared})"
    assert match.known_fingerprint == sign(SCHEDULER_CRASH).fingerprint


def test_the_same_message_from_other_code_is_told_as_other_frames() -> None:
    match = best_match(SCHEDULER_CRASH_ELSEWHERE)

    assert (match.finding_id, match.layer) == (2, "template")
    shared = ", ".join(match.matched_terms[:5])
    assert match.explain() == (
        f"same error message as a known sample, other frames (shares {shared})"
    )


def test_a_match_on_words_alone_is_told_with_its_score() -> None:
    match = best_match("Not enough memory for KV cache while starting the scheduler")

    assert (match.finding_id, match.layer) == (2, "terms")
    shared = ", ".join(match.matched_terms[:5])
    assert match.explain() == (
        f"similar to a known sample: shares {shared} (score {match.score:.2f})"
    )
