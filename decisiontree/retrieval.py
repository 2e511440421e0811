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

import math
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from decisiontree.terms import words_of
from decisiontree.tuning import tuning

FIELDS = ("errors", "text", "title", "summary", "cause")
BACKGROUND = Path(__file__).parent / "data" / "background.txt"
MAX_DOC_WORDS_PER_FIELD = 4_000  # a finding with a huge sample: its first words say enough
MAX_QUERY_TERMS = 64  # the heaviest query terms searched; see search()
# Words folded into postings at once: the fold's sort keys and counts stay tens of MiB
# where a 100k-finding rebuild at once would need most of a GiB for them.
FOLD_WORDS = 1 << 21
# A word's sort key in finish(): document | term id (31 bits) | field place (3 bits).
_PLACE_BITS = 3
_PLACE_MASK = (1 << _PLACE_BITS) - 1
_TERM_MASK = (1 << 31) - 1
_DOC_SHIFT = 31 + _PLACE_BITS


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
        self._term_ids = _TermIds()
        self._terms: list[str] = []  # term id -> term, brought up to date by term_of()
        self._doc_ids: list[int] = []  # document number -> finding id
        self._doc_numbers: dict[int, int] = {}
        # Words added since the last finish(): their term ids in one flat array, and per
        # document its fields (in the order first written) with the words each holds.
        self._pending_terms: array[int] = array("i")
        self._pending_runs: list[tuple[int, int, int]] = []  # (document, field, words)
        self._pending_fields: dict[int, dict[int, int]] = {}  # document -> field -> words
        # Folded by finish(), compressed sparse rows (numpy arrays):
        # term -> (document, saturated weighted tf) postings, and document -> term ids.
        self._folded = 0  # documents folded
        self._post_start = np.zeros(1, dtype=np.int64)
        self._post_docs = np.zeros(0, dtype=np.int32)
        self._post_values = np.zeros(0, dtype=np.float32)
        self._doc_start = np.zeros(1, dtype=np.int64)
        self._doc_terms = np.zeros(0, dtype=np.int32)
        self._idf = np.zeros(0, dtype=np.float64)
        self._max_idf = 0.0
        self._stale = False
        self._background: dict[int, list[tuple[int, float]]] = {}
        for number, words in enumerate(background_documents(), start=1):
            self.add(-number, "errors", words)

    def __len__(self) -> int:
        """Findings held (background documents not counted)."""
        return len(self._doc_ids) - len(background_documents())

    # --- building -------------------------------------------------------

    def add(self, finding_id: int, field: str, words: Sequence[str]) -> list[int]:
        """Add words to one field of a finding's document (fields accumulate until finish();
        a document cannot grow after it). Returns the ids of the words it took: the first
        ones, up to the field's cap."""
        number = self._doc_numbers.get(finding_id)
        if number is not None and number < self._folded:
            raise ValueError(f"document {finding_id} was already folded into the postings")
        if number is None:
            number = len(self._doc_ids)
            self._doc_numbers[finding_id] = number
            self._doc_ids.append(finding_id)
            self._pending_fields[number] = {}
        fields = self._pending_fields[number]
        slot = FIELDS.index(field)
        held = fields.setdefault(slot, 0)
        room = MAX_DOC_WORDS_PER_FIELD - held
        ids: list[int] = []
        if room > 0:
            kept = words[:room]
            ids = self.term_ids(kept)
            self._pending_terms.extend(ids)
            self._pending_runs.append((number, slot, len(kept)))
            fields[slot] = held + len(kept)
        self._stale = True
        return ids

    def term_ids(self, terms: Iterable[str]) -> list[int]:
        """The ids of terms, each given one the first time it is seen."""
        # One C-level lookup a word (a rebuild looks up tens of millions); `_TermIds`
        # gives a new term the next id in the same pass.
        return list(map(self._term_ids.__getitem__, terms))

    def term_id(self, term: str) -> int | None:
        return self._term_ids.get(term)

    def term_of(self, term_id: int) -> str:
        if term_id >= len(self._terms):  # terms seen since: ids are insertion order
            self._terms = list(self._term_ids)
        return self._terms[term_id]

    @property
    def stale(self) -> bool:
        return self._stale

    def finish(self) -> None:
        """Fold the pending fields into postings and compute the weights."""
        if not self._stale:
            return
        docs, terms, values = self._fold_pending()
        if self._folded:  # documents added after an earlier finish: merge with the folded
            old_terms = np.repeat(
                np.arange(len(self._post_start) - 1, dtype=np.int32), np.diff(self._post_start)
            )
            docs = np.concatenate([self._post_docs, docs])
            terms = np.concatenate([old_terms, terms])
            values = np.concatenate([self._post_values, values])
        vocabulary = len(self._term_ids)
        self._terms = list(self._term_ids)
        # Postings in term order, each list in document order.
        by_term = np.lexsort((docs, terms))
        self._post_docs = docs[by_term]
        self._post_values = values[by_term]
        counts = np.bincount(terms, minlength=vocabulary)
        self._post_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        # A document's distinct terms, in term order: as the fold leaves them when documents
        # were added in order and none were folded before (the usual rebuild), no sort.
        if _in_order(docs, terms):
            self._doc_terms = terms.astype(np.int32)
        else:
            self._doc_terms = terms[np.lexsort((terms, docs))].astype(np.int32)
        per_doc = np.bincount(docs, minlength=len(self._doc_ids))
        self._doc_start = np.concatenate([[0], np.cumsum(per_doc)]).astype(np.int64)
        self._folded = len(self._doc_ids)
        self._pending_terms = array("i")
        self._pending_runs = []
        self._pending_fields = {}
        self._refresh_idf(counts)
        self._read_background()
        self._stale = False

    def _read_background(self) -> None:
        """Each term's background postings, (document number, saturated tf): a few
        thousand, read by `closest_background` once per error of every paste."""
        count = len(background_texts())  # documents 0..count-1, added before any finding
        at = np.flatnonzero(self._post_docs < count)
        terms = np.searchsorted(self._post_start, at, side="right") - 1
        table: dict[int, list[tuple[int, float]]] = defaultdict(list)
        for term_id, doc, value in zip(
            terms.tolist(),
            self._post_docs[at].tolist(),
            self._post_values[at].tolist(),
            strict=True,
        ):
            table[term_id].append((doc, value))
        self._background = dict(table)

    def _fold_pending(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(document, term, saturated tf) of every distinct term of the pending documents.

        A term's pseudo frequency sums, over the fields in the order the document first
        wrote them, the field's weight over its length norm times the term's count there
        (BM25F); the same sums, in the same order, as one document at a time would make.
        """
        lengths: dict[int, list[int]] = defaultdict(list)
        for fields in self._pending_fields.values():
            for slot, held in fields.items():
                lengths[slot].append(held)
        average = {slot: (sum(v) / len(v) if v else 1.0) or 1.0 for slot, v in lengths.items()}
        # Per document and field place (the order the document first wrote its fields):
        # the field's weight over its length norm.
        weight_of = np.zeros(len(self._doc_ids) * len(FIELDS), dtype=np.float64)
        for number, fields in self._pending_fields.items():
            for place, (slot, held) in enumerate(fields.items()):
                name = FIELDS[slot]
                norm = 1 - self.b[name] + self.b[name] * held / average[slot]
                weight_of[number * len(FIELDS) + place] = self.weights[name] / norm
        places = {n: {slot: p for p, slot in enumerate(f)} for n, f in self._pending_fields.items()}
        words = np.array([w for _, _, w in self._pending_runs], dtype=np.int64)
        if not words.sum():
            empty = np.zeros(0, dtype=np.int32)
            return empty, empty, np.zeros(0, dtype=np.float32)
        # One int64 key per word: document, term, field place. Sorting the keys alone keeps
        # the fold at a few bytes per word (a 100k-finding rebuild folds tens of millions).
        head = np.array(
            [(n << _DOC_SHIFT) | places[n][slot] for n, slot, _ in self._pending_runs],
            dtype=np.int64,
        )
        terms = np.frombuffer(self._pending_terms, dtype=np.int32)
        folded = [
            self._fold_words(head[runs], words[runs], terms[at], weight_of)
            for runs, at in _whole_documents(self._pending_runs, words)
        ]
        return (
            np.concatenate([f[0] for f in folded]),
            np.concatenate([f[1] for f in folded]),
            np.concatenate([f[2] for f in folded]),
        )

    def _fold_words(
        self, head: np.ndarray, words: np.ndarray, terms: np.ndarray, weight_of: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`_fold_pending` of the words of whole documents: runs' keys, their words' terms."""
        keys = np.repeat(head, words)
        if not len(keys):
            empty = np.zeros(0, dtype=np.int32)
            return empty, empty, np.zeros(0, dtype=np.float32)
        shifted = terms.astype(np.int64)
        shifted <<= _PLACE_BITS
        keys |= shifted
        del shifted
        keys.sort()
        # Count each (document, term, field) once: weight times count.
        new = np.empty(len(keys), dtype=bool)
        new[0] = True
        np.not_equal(keys[1:], keys[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        del new
        counts = np.diff(np.append(starts, len(keys)))
        keys = keys[starts]
        docs = keys >> _DOC_SHIFT
        part = weight_of[docs * len(FIELDS) + (keys & _PLACE_MASK)] * counts
        # Sum the fields' parts per (document, term), in field order.
        pairs = keys >> _PLACE_BITS
        first = np.empty(len(pairs), dtype=bool)
        first[0] = True
        np.not_equal(pairs[1:], pairs[:-1], out=first[1:])
        heads = np.flatnonzero(first)
        parts = np.diff(np.append(heads, len(pairs)))
        pseudo = part[heads]  # left to right, as a running sum adds them (at most 5 fields)
        for later in range(1, int(parts.max())):
            more = parts > later
            pseudo[more] += part[heads[more] + later]
        saturated = (pseudo / (self.k1 + pseudo)).astype(np.float32)
        terms = (pairs[heads] & _TERM_MASK).astype(np.int32)
        return docs[heads].astype(np.int32), terms, saturated

    def _refresh_idf(self, frequencies: np.ndarray) -> None:
        n = len(self._doc_ids)
        self._max_idf = _idf(n, 1)
        # One log per distinct frequency, by the same function a single term would use.
        distinct, where = np.unique(frequencies, return_inverse=True)
        table = np.array(
            [_idf(n, int(f)) if f else self._max_idf for f in distinct], dtype=np.float64
        )
        self._idf = table[where.reshape(-1)] if len(distinct) else np.zeros(0)

    # --- weights ----------------------------------------------------------

    def idf(self, term: str) -> float:
        """How specific a term is; unseen terms count as seen once."""
        term_id = self._term_ids.get(term)
        return self.idf_by_id(term_id) if term_id is not None else self._max_idf

    def idf_by_id(self, term_id: int) -> float:
        """`idf` of a term by its id (terms given an id after the last finish: unseen)."""
        return float(self._idf[term_id]) if term_id < len(self._idf) else self._max_idf

    def idf_of(self, terms: Iterable[str]) -> dict[str, float]:
        """`idf` of many terms at once."""
        ids, most, known = self._term_ids, self._max_idf, len(self._idf)
        terms = list(terms)
        numbers = [ids.get(t) for t in terms]
        found = [n for n in numbers if n is not None and n < known]
        weights = iter(self._idf[found].tolist())
        return {
            t: (next(weights) if n is not None and n < known else most)
            for t, n in zip(terms, numbers, strict=True)
        }

    def idf_by_ids(self, term_ids: Sequence[int]) -> list[float]:
        """`idf_by_id` of many ids at once."""
        known = len(self._idf)
        if all(i < known for i in term_ids):
            found: list[float] = self._idf[list(term_ids)].tolist()
            return found
        return [self.idf_by_id(i) for i in term_ids]

    def max_idf(self) -> float:
        return self._max_idf

    def doc_term_ids(self, finding_id: int) -> list[int]:
        """The distinct term ids of a finding's document, in id order."""
        number = self._doc_numbers.get(finding_id)
        if number is None or number >= self._folded:
            return []
        ids: list[int] = self._doc_terms[
            self._doc_start[number] : self._doc_start[number + 1]
        ].tolist()
        return ids

    def terms_of(self, finding_id: int) -> frozenset[str]:
        terms = self._terms
        return frozenset(terms[i] for i in self.doc_term_ids(finding_id))

    # --- search -----------------------------------------------------------

    def closest_background(self, query: Mapping[str, float]) -> int | None:
        """The background document (its negative id) that scores best for weighted query
        terms, as `search` scores it; None when no background document holds any of them."""
        if self._stale:
            self.finish()
        scores = [0.0] * len(background_texts())
        known, postings, idf = self._term_ids, self._background, self._idf
        for term, weight in query.items():
            term_id = known.get(term)
            held = postings.get(term_id) if term_id is not None and weight > 0 else None
            if held:
                factor = float(idf[term_id]) * weight
                for doc, value in held:
                    scores[doc] += value * factor
        best = max(range(len(scores)), key=scores.__getitem__, default=None)
        if best is None or not scores[best]:
            return None
        return self._doc_ids[best]

    def search(self, query: Mapping[str, float], limit: int, budget: int) -> list[Hit]:
        """Best documents for weighted query terms, opening at most `budget` postings.

        Background documents come back too (negative ids), among the best `limit`
        findings, so the caller can tell an ordinary error from a known one.
        """
        if self._stale:
            self.finish()
        known = self._term_ids
        ids, weights = [], []
        for term, weight in query.items():
            term_id = known.get(term)
            if term_id is not None and weight > 0:
                ids.append(term_id)
                weights.append(weight)
        starts = self._post_start
        term_ids = np.array(ids, dtype=np.int64)
        folded = term_ids < len(starts) - 1  # not an id given after the last finish
        term_ids = term_ids[folded]
        lengths = starts[term_ids + 1] - starts[term_ids]
        factors = self._idf[term_ids] * np.array(weights, dtype=np.float64)[folded]
        has = lengths > 0  # an id with no postings (a word past a field's cap) is no word here
        term_ids, lengths, factors = term_ids[has], lengths[has], factors[has]
        # The heaviest terms decide the ranking (ties: the later term first); the rest are
        # common words whose long posting lists would cost most of the time and move little.
        heaviest = np.lexsort((-term_ids, -factors))[:MAX_QUERY_TERMS]
        slices, chosen, sizes = [], [], []
        for term_id, size, factor in zip(
            term_ids[heaviest].tolist(),
            lengths[heaviest].tolist(),
            factors[heaviest].tolist(),
            strict=True,
        ):
            if size > budget:
                continue  # common: a shorter list of a rarer term may still fit
            budget -= size
            start = int(starts[term_id])
            slices.append(slice(start, start + size))
            chosen.append(factor)
            sizes.append(size)
        if not sum(sizes):
            return []
        docs = np.concatenate([self._post_docs[s] for s in slices])
        values = np.concatenate([self._post_values[s] for s in slices]).astype(np.float64)
        values *= np.repeat(np.array(chosen, dtype=np.float64), sizes)
        # Each document's score sums its terms' parts in the order the terms were opened
        # (every document reached scores above 0: idf and tf are positive). Over the
        # documents reached, not every document: a bincount and a scan of 100k documents
        # cost more than sorting the few thousand postings opened.
        found, first, inverse = np.unique(docs, return_index=True, return_inverse=True)
        scores = np.bincount(inverse.reshape(-1), weights=values, minlength=len(found))
        wanted = limit + len(background_texts())
        if len(found) > wanted:  # the best, and every document tied with the last of them
            kept = scores >= np.partition(scores, len(scores) - wanted)[len(scores) - wanted]
            found, scores, first = found[kept], scores[kept], first[kept]
        # Ties go to the document reached first, as a running tally would have it.
        order = np.lexsort((first, -scores))[:wanted]
        hits: list[Hit] = []
        findings = 0
        doc_ids = self._doc_ids
        for number, score in zip(found[order].tolist(), scores[order].tolist(), strict=True):
            doc = doc_ids[number]
            findings += doc >= 0
            hits.append(Hit(doc, score))
            if findings >= limit:
                break
        return hits


def _in_order(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether the (first, second) pairs are in increasing order, none repeated."""
    if len(first) < 2:
        return True
    later, earlier = first[1:], first[:-1]
    ahead = later > earlier
    ahead |= (later == earlier) & (second[1:] > second[:-1])
    return bool(ahead.all())


class _TermIds(dict[str, int]):
    """Term -> id; looking up a term not seen before gives it the next id (the number of
    terms known before it), so ids follow the order terms were first seen in."""

    def __missing__(self, term: str) -> int:
        term_id = self[term] = len(self)
        return term_id


def _whole_documents(
    runs: Sequence[tuple[int, int, int]], words: np.ndarray
) -> Iterator[tuple[slice, slice]]:
    """The pending runs in slices of whole documents, about `FOLD_WORDS` words each: (runs,
    their words). A document's words are folded together, so a slice must hold all its runs;
    runs out of document order are folded in one slice."""
    ends = np.cumsum(words)
    documents = [number for number, _, _ in runs]
    in_order = all(a <= b for a, b in zip(documents, documents[1:], strict=False))
    first = taken = 0
    while first < len(runs):
        last = len(runs)
        if in_order:
            last = max(first + 1, int(np.searchsorted(ends, taken + FOLD_WORDS, side="right")))
            while last < len(runs) and documents[last] == documents[last - 1]:
                last += 1
        end = int(ends[last - 1])
        yield slice(first, last), slice(taken, end)
        first, taken = last, end


def _idf(documents: int, frequency: int) -> float:
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))


def query_weights(
    error_words: Sequence[str], context_words: Sequence[str], context_weight: float
) -> dict[str, float]:
    """Each term once, weighted by the most telling place it stood in."""
    weights = dict.fromkeys(context_words, context_weight)
    weights.update(dict.fromkeys(error_words, 1.0))
    return weights
