"""BM25F retrieval over findings: their samples, title, symptom and cause, by field.

Each finding is one document with fields (`errors`: the error lines of its
samples; `text`: the rest of its samples; `title`; `summary`: the symptom in
words; `cause`: the cause and the fixes' own words). A query is the terms of a
paste, each weighted by where it stood (an error line counts more than a
start-up log line). Scoring is BM25F: per-field term frequencies, length
normalised per field and weighted, then saturated once per term.

How much a shared word is worth is its inverse document frequency over the
findings *plus* a background of ordinary output written for this purpose
(`decisiontree/data/background.txt`): in a small knowledge base "cuda" is
not rare just because few findings say it. The background documents are
indexed beside the findings (with negative ids, never returned as findings),
so a search also says how well the paste matches *ordinary* output: an error
that any background document explains as well as a finding does is not
evidence for that finding.

The postings are packed arrays; a lookup opens the rarest query terms first
and stops opening posting lists after a fixed budget, so a lookup costs the
same at 100k findings as at 100.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from decisiontree.terms import words_of
from decisiontree.tuning import tuning

FIELDS = ("errors", "text", "title", "summary", "cause")
BACKGROUND = Path(__file__).parent / "data" / "background.txt"
MAX_DOC_WORDS_PER_FIELD = 4_000  # a finding with a huge sample: its first words say enough
MAX_QUERY_TERMS = 64  # the heaviest query terms searched; see search()


@dataclass(frozen=True)
class Hit:
    doc: int
    score: float


@cache
def background_documents() -> tuple[tuple[str, ...], ...]:
    """The background documents' words."""
    return tuple(tuple(words_of(text)) for text in background_texts())


@cache
def background_texts() -> tuple[str, ...]:
    """The background documents as written."""
    docs: list[list[str]] = [[]]
    for line in BACKGROUND.read_text().splitlines():
        if line.startswith("#"):
            continue
        if line.strip() == "---":
            docs.append([])
        else:
            docs[-1].append(line)
    return tuple("\n".join(doc) for doc in docs if any(s.strip() for s in doc))


class Bm25fIndex:
    """Findings as BM25F documents; `search` returns the best by score."""

    def __init__(self) -> None:
        params = tuning()["bm25f"]
        self.k1: float = params["k1"]
        self.weights: dict[str, float] = params["field_weights"]
        self.b: dict[str, float] = params["field_b"]
        self._term_ids: dict[str, int] = {}
        self._terms: list[str] = []
        self._doc_ids: list[int] = []  # document number -> finding id
        self._doc_numbers: dict[int, int] = {}
        # Per document and field, the term ids with repeats; folded into postings by finish().
        self._pending: list[dict[str, array[int]]] = []
        self._postings: list[array[int]] = []
        self._values: list[array[float]] = []  # saturated, weighted tf per posting
        self._doc_terms: list[array[int]] = []  # distinct term ids per document
        self._idf: list[float] = []
        self._max_idf = 0.0
        self._stale = False
        for number, words in enumerate(background_documents(), start=1):
            self.add(-number, "errors", words)

    def __len__(self) -> int:
        """Findings held (background documents not counted)."""
        return len(self._doc_ids) - len(background_documents())

    # --- building -------------------------------------------------------

    def add(self, finding_id: int, field: str, words: Sequence[str]) -> None:
        """Add words to one field of a finding's document (fields accumulate until finish();
        a document cannot grow after it)."""
        number = self._doc_numbers.get(finding_id)
        if number is not None and self._doc_terms[number]:
            raise ValueError(f"document {finding_id} was already folded into the postings")
        if number is None:
            number = len(self._doc_ids)
            self._doc_numbers[finding_id] = number
            self._doc_ids.append(finding_id)
            self._pending.append({})
            self._doc_terms.append(array("i"))
        fields = self._pending[number]
        held = fields.setdefault(field, array("i"))
        room = MAX_DOC_WORDS_PER_FIELD - len(held)
        if room > 0:
            known = self._term_ids
            ids = [known.get(w) for w in words[:room]]
            if None in ids:  # words seen for the first time get their ids
                ids = [
                    self._term_id(w) if i is None else i
                    for w, i in zip(words[:room], ids, strict=True)
                ]
            held.extend(ids)  # type: ignore[arg-type]  # no None is left
        self._stale = True

    def _term_id(self, term: str) -> int:
        found = self._term_ids.get(term)
        if found is None:
            found = len(self._terms)
            self._term_ids[term] = found
            self._terms.append(term)
            self._postings.append(array("i"))
            self._values.append(array("f"))
        return found

    @property
    def stale(self) -> bool:
        return self._stale

    def finish(self) -> None:
        """Fold the pending fields into postings and compute the weights."""
        if not self._stale:
            return
        lengths: dict[str, list[int]] = defaultdict(list)
        for fields in self._pending:
            for name in FIELDS:
                held = fields.get(name)
                if held is not None:
                    lengths[name].append(len(held))
        average = {name: (sum(v) / len(v) if v else 1.0) or 1.0 for name, v in lengths.items()}
        postings, values, k1 = self._postings, self._values, self.k1
        for number, fields in enumerate(self._pending):
            if not fields:
                continue
            pseudo: dict[int, float] = {}
            for name, held in fields.items():
                norm = 1 - self.b[name] + self.b[name] * len(held) / average[name]
                weight = self.weights[name] / norm
                for term_id, count in Counter(held).items():
                    pseudo[term_id] = pseudo.get(term_id, 0.0) + weight * count
            for term_id, tf in pseudo.items():
                postings[term_id].append(number)
                values[term_id].append(tf / (k1 + tf))
            self._doc_terms[number] = array("i", sorted(pseudo))
            self._pending[number] = {}
        self._refresh_idf()
        self._stale = False

    def _refresh_idf(self) -> None:
        n = len(self._doc_ids)
        self._max_idf = _idf(n, 1)
        self._idf = [
            _idf(n, len(postings)) if postings else self._max_idf for postings in self._postings
        ]

    # --- weights ----------------------------------------------------------

    def idf(self, term: str) -> float:
        """How specific a term is; unseen terms count as seen once."""
        term_id = self._term_ids.get(term)
        return self._idf[term_id] if term_id is not None else self._max_idf

    def idf_of(self, terms: Iterable[str]) -> dict[str, float]:
        """`idf` of many terms at once."""
        ids, idf, most = self._term_ids, self._idf, self._max_idf
        return {t: (idf[i] if (i := ids.get(t)) is not None else most) for t in terms}

    def max_idf(self) -> float:
        return self._max_idf

    def terms_of(self, finding_id: int) -> frozenset[str]:
        number = self._doc_numbers.get(finding_id)
        if number is None:
            return frozenset()
        return frozenset(self._terms[i] for i in self._doc_terms[number])

    # --- search -----------------------------------------------------------

    def search(self, query: Mapping[str, float], limit: int, budget: int) -> list[Hit]:
        """Best documents for weighted query terms, opening at most `budget` postings.

        Background documents come back too (negative ids), among the best `limit`
        findings, so the caller can tell an ordinary error from a known one.
        """
        if self._stale:
            self.finish()
        weighted = []
        for term, weight in query.items():
            term_id = self._term_ids.get(term)
            if term_id is not None and weight > 0:
                weighted.append((self._idf[term_id] * weight, term_id))
        # The heaviest terms decide the ranking; the rest are common words whose long
        # posting lists would cost most of the time and move little.
        weighted = heapq.nlargest(MAX_QUERY_TERMS, weighted)
        scores: dict[int, float] = defaultdict(float)
        for factor, term_id in weighted:
            postings = self._postings[term_id]
            if len(postings) > budget:
                continue  # common: a shorter list of a rarer term may still fit
            budget -= len(postings)
            values = self._values[term_id]
            for number, value in zip(postings, values, strict=True):
                scores[number] += factor * value
        best = heapq.nlargest(limit + len(background_texts()), scores, key=scores.__getitem__)
        hits: list[Hit] = []
        findings = 0
        for number in best:
            score = scores[number]
            doc = self._doc_ids[number]
            findings += doc >= 0
            hits.append(Hit(doc, score))
            if findings >= limit:
                break
        return hits


def _idf(documents: int, frequency: int) -> float:
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))


def query_weights(
    error_words: Sequence[str], context_words: Sequence[str], context_weight: float
) -> dict[str, float]:
    """Each term once, weighted by the most telling place it stood in."""
    weights = dict.fromkeys(context_words, context_weight)
    weights.update(dict.fromkeys(error_words, 1.0))
    return weights
