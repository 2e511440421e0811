"""Votes on one remedy add up over every symptom of its cause, those against it too."""

from __future__ import annotations

import dataclasses

from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, Evidence, FixRecord, Outcome
from tests.decisiontree.test_walk import (
    BF16_REPORTED,
    BF16_VALIDATED,
    NAN_ASSERT,
    NAN_ASSERT_ELSEWHERE,
    POOL_ASSERT,
    finding,
    on_sm120,
)


def test_votes_for_and_against_a_remedy_count_from_each_symptom() -> None:
    votes = Evidence(feedback_helped=2, feedback_not_helped=1)
    pool = finding(10, POOL_ASSERT, (dataclasses.replace(BF16_VALIDATED, evidence=votes),))
    nan = finding(20, NAN_ASSERT, (dataclasses.replace(BF16_REPORTED, evidence=votes),))

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([pool, nan]))

    first = result.fixes[0]
    assert first.fix.id == BF16_REPORTED.id
    assert "feedback: 4 helped, 2 did not" in first.why[-1].detail


def test_one_remedy_written_with_two_names_of_a_flag_is_listed_once() -> None:
    # SGLang reads --tensor-parallel-size as --tp-size: both findings give one remedy.
    eight = "Run on eight GPUs"
    short = FixRecord(5, eight, (Change(ChangeAction.SET_FLAG, "tp-size", "8"),), Outcome.RESOLVES)
    long = FixRecord(
        6, eight, (Change(ChangeAction.SET_FLAG, "tensor-parallel-size", "8"),), Outcome.RESOLVES
    )
    graph = build_graph([finding(10, POOL_ASSERT, (short,)), finding(20, NAN_ASSERT, (long,))])

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), graph)

    assert [f.command_changes for f in result.fixes] == [("--tp-size 8",)]
