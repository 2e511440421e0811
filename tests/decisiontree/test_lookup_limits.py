"""What one lookup weighs and lists: a reviewer's split keeps only its own finding out,
a reviewer's link leaves other close matches in view, and at most ten findings.

The paste is tests/decisiontree/test_fingerprint_version.py's scheduler crash (not
enough memory for the KV cache); the same message raised from other code is
tests/decisiontree/test_reviewer_decisions.py's.
"""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose, matched
from decisiontree.graph import build_graph
from decisiontree.match import Candidate
from decisiontree.records import Change, ChangeAction, FindingRecord, FixRecord, Outcome
from tests.decisiontree.test_fingerprint_version import SCHEDULER_CRASH, sign
from tests.decisiontree.test_reviewer_decisions import SCHEDULER_CRASH_ELSEWHERE

CRASH_PRINT = sign(SCHEDULER_CRASH).fingerprint


def fraction_fix(fix_id: int) -> FixRecord:
    value = f"0.{fix_id + 60}"
    return FixRecord(
        fix_id,
        f"Set --mem-fraction-static {value}",
        (Change(ChangeAction.SET_FLAG, "mem-fraction-static", value),),
        Outcome.RESOLVES,
    )


def crash_finding(finding_id: int, *samples: str, **decisions: tuple[str, ...]) -> FindingRecord:
    return FindingRecord(
        id=finding_id,
        title="Scheduler dies at start-up: no memory left for the KV cache",
        kind="crash",
        cause=f"cause {finding_id}",
        samples=samples,
        conditions=(),
        fixes=(fraction_fix(finding_id),),
        **decisions,
    )


def test_a_finding_a_reviewer_split_from_the_paste_leaves_the_next_finding_matched() -> None:
    # Both hold the same message from other code; a reviewer said the paste's own
    # fingerprint is not the first one's issue.
    split_away = crash_finding(
        1, SCHEDULER_CRASH, SCHEDULER_CRASH_ELSEWHERE, split_fingerprints=(CRASH_PRINT,)
    )
    other = crash_finding(2, SCHEDULER_CRASH_ELSEWHERE)

    result = diagnose(SCHEDULER_CRASH, build_context(), build_graph([split_away, other]))

    assert result.verdict == "known"
    assert [c.finding_id for c in result.candidates] == [2]
    assert [f.fix.id for f in result.fixes] == [2]


def test_a_reviewers_link_leaves_a_close_match_of_the_same_error_in_view() -> None:
    linked = crash_finding(3, linked_fingerprints=(CRASH_PRINT,))
    same_error = crash_finding(4, SCHEDULER_CRASH)

    result = diagnose(SCHEDULER_CRASH, build_context(), build_graph([linked, same_error]))

    assert [(c.finding_id, c.score, c.layer) for c in result.candidates][0] == (3, 1.0, "linked")
    assert [f.fix.id for f in result.fixes] == [3, 4]
    assert result.fixes[0].score == 1.0


def test_of_eleven_findings_of_one_error_the_answer_weighs_ten() -> None:
    findings = [crash_finding(number, SCHEDULER_CRASH) for number in range(1, 12)]

    result = diagnose(SCHEDULER_CRASH, build_context(), build_graph(findings))

    assert [c.finding_id for c in result.candidates] == list(range(1, 11))
    assert len(result.fixes) == 10


def test_a_similar_match_far_below_the_first_is_listed_as_a_runner_up_after_it() -> None:
    # ranking.json shows a finding beside the first when it scores at least 0.6 of it;
    # 0.3 is "similar" but half of 0.6.
    first = Candidate(1, 0.6, "terms", ("page_size",), None)
    far_below = Candidate(2, 0.3, "terms", ("page_size",), None)

    listed = matched([first, far_below])

    assert [(c.finding_id, c.runner_up) for c in listed] == [(1, False), (2, True)]
    assert listed[1].explain().startswith("less likely than the first match")
