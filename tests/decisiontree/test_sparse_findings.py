"""Findings with little or no text of their own still leave the others found.

The paste is the NaN decode assert of tests/decisiontree/test_questions.py.
"""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import FindingRecord
from tests.decisiontree.test_questions import BF16, NAN_ASSERT, NAN_ASSERT_ELSEWHERE

NAN_DECODE = FindingRecord(
    id=1,
    title="NaN in decode sampling",
    kind="crash",
    cause="the sparse decode kernel yields NaN",
    samples=(NAN_ASSERT,),
    conditions=(),
    fixes=(BF16,),
)


def test_a_draft_titled_only_with_punctuation_and_added_last_leaves_the_others_found() -> None:
    # Its title gives the index no word at all, and it has no sample yet.
    draft = FindingRecord(
        id=2, title="???", kind="crash", cause="", samples=(), conditions=(), fixes=()
    )

    result = diagnose(NAN_ASSERT_ELSEWHERE, build_context(), build_graph([NAN_DECODE, draft]))

    assert result.verdict == "known"
    assert [fix.fix.id for fix in result.fixes] == [BF16.id]
