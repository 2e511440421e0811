"""A finding's own words are read once and kept: a graph build reads them back, and reads
again only a text edited since or words kept by older code.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from decisiontree import finding_words
from decisiontree.finding_words import own_texts, stored_words, words_from_stored
from decisiontree.graph import build_graph
from decisiontree.records import FindingRecord, FixRecord, Outcome
from decisiontree.terms import words_of

SAMPLE = "RuntimeError: Failed to allocate the radix cache pool on every rank"
TITLE = "Radix cache pool allocation fails on Blackwell workstation GPUs"


def finding(title: str = TITLE) -> FindingRecord:
    return FindingRecord(
        id=7,
        title=title,
        kind="crash",
        summary="The scheduler dies while sizing the KV cache",
        cause="mem-fraction-static leaves no room for the CUDA graphs",
        samples=(SAMPLE,),
        conditions=(),
        fixes=(FixRecord(70, "Lower --mem-fraction-static to 0.80", (), Outcome.RESOLVES),),
    )


def kept(record: FindingRecord) -> dict[str, Any]:
    """As the knowledge base keeps it: through JSON."""
    fixes = (fix.summary for fix in record.fixes)
    texts = own_texts(record.title, record.summary, record.cause, fixes)
    return dict(json.loads(json.dumps(stored_words(text for _, text in texts))))


def streamed(
    records: list[FindingRecord], stored: list[dict[str, Any]], words: dict[str, Sequence[str]]
) -> Iterator[FindingRecord]:
    # As the service reads storage: the stored words arrive with their chunk, after the
    # build has started.
    for record, found in zip(records, stored, strict=True):
        words.update(words_from_stored(found))
        yield record


def test_a_build_reads_the_kept_words_and_not_the_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    record = finding()
    stored = [kept(record)]
    words: dict[str, Sequence[str]] = {}

    def read_again(text: str) -> list[str]:
        raise AssertionError(f"read again: {text!r}")

    monkeypatch.setattr(finding_words, "words_of", read_again)
    graph = build_graph(streamed([record], stored, words), words=words)

    terms = graph.index.retrieval.terms_of(record.id)
    assert {"blackwell", "workstation", "scheduler", "mem-fraction-static"} <= terms


def test_a_title_edited_since_its_words_were_kept_is_read_as_it_is_now() -> None:
    stored = words_from_stored(kept(finding()))
    edited = finding(title="Speculative decoding overruns the padded vocabulary")

    graph = build_graph([edited], words=stored)

    terms = graph.index.retrieval.terms_of(edited.id)
    assert {"speculative", "overruns"} <= terms
    assert "blackwell" not in terms
    # The fields not edited still come from what was kept, and are the same words.
    assert set(words_of(edited.cause)) <= terms


def test_words_kept_by_older_code_are_not_used() -> None:
    stored = kept(finding())
    assert words_from_stored(stored)
    assert words_from_stored({**stored, "scheme": "0" * 16}) == {}
    assert words_from_stored({}) == {}
    assert words_from_stored(None) == {}
