"""BM25F retrieval over findings: the best few of many, however the index was folded."""

from __future__ import annotations

import pytest

from decisiontree import retrieval
from decisiontree.retrieval import Bm25fIndex

Fields = dict[str, list[str]]


def index_of(documents: dict[int, Fields]) -> Bm25fIndex:
    index = Bm25fIndex()
    for finding_id, fields in documents.items():
        for field, words in fields.items():
            index.add(finding_id, field, words)
    index.finish()
    return index


def findings(index: Bm25fIndex, query: dict[str, float], limit: int) -> list[int]:
    return [hit.doc for hit in index.search(query, limit, budget=100_000) if hit.doc >= 0]


def test_of_more_findings_sharing_a_word_than_asked_for_the_best_come_back() -> None:
    # More findings reached than the limit and the background documents together.
    documents: dict[int, Fields] = {
        i: {"errors": ["gizmofault", f"shard{i}"]} for i in range(1, 400)
    }
    documents[77]["errors"] += ["widgetcrash", "gizmofault"]

    best = findings(index_of(documents), {"gizmofault": 1.0, "widgetcrash": 1.0}, limit=3)

    assert best[0] == 77
    assert len(best) == 3


def several_fields(i: int) -> Fields:
    return {
        "errors": [f"fault{i % 7}", "enginestall", f"unit{i}"],
        "title": [f"unit{i}", "stall"],
        "cause": ["allocator", f"fault{i % 5}"],
    }


@pytest.mark.parametrize("fold_words", [1, 5, 12])
def test_an_index_folded_in_pieces_answers_as_one_folded_at_once(
    monkeypatch: pytest.MonkeyPatch, fold_words: int
) -> None:
    documents = {i: several_fields(i) for i in range(1, 60)}
    query = {"fault3": 1.0, "enginestall": 0.5, "unit12": 1.0, "allocator": 0.3}
    at_once = index_of(documents).search(query, 10, budget=100_000)

    # A rebuild of a large knowledge base folds its words a slice of whole documents at a
    # time (FOLD_WORDS of them); a few words a slice folds this small one the same way.
    monkeypatch.setattr(retrieval, "FOLD_WORDS", fold_words)
    in_pieces = index_of(documents).search(query, 10, budget=100_000)

    assert in_pieces == at_once
    assert at_once[0].doc == 12


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA out of memory while allocating the cache blocks",
        "NCCL WARN socket connect failed, retrying",
        "KeyboardInterrupt at torch.cuda set_device _lazy_init",
    ],
)
def test_the_closest_ordinary_document_of_a_query_is_the_one_search_ranks_first(line: str) -> None:
    index = index_of({i: several_fields(i) for i in range(1, 30)})
    query = dict.fromkeys(retrieval.words_of(line), 1.0)
    hits = index.search(query, limit=5, budget=100_000)

    assert index.closest_background(query) == next(h.doc for h in hits if h.doc < 0)


def test_a_query_no_ordinary_document_has_a_word_of_has_no_closest_one() -> None:
    index = index_of({1: {"errors": ["gizmofault", "widgetcrash"]}})

    assert index.closest_background({"gizmofault": 1.0, "widgetcrash": 1.0}) is None
