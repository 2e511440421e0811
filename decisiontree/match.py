"""Match the signatures of a paste against the signatures of known findings.

Layers, cheapest first, each of which says why it matched:

1. a reviewer linked this exact fingerprint to a finding;
2. the same fingerprint (exception type, message template, key frames);
3. the same message template (exception type and template, any frames);
4. weighted term similarity: terms shared with a known sample, weighted by
   how rare they are, so `nsa_kv_cache_store_fp8` outweighs `RuntimeError`.

Every layer is scaled by how *specific* the evidence is, so a generic line
such as "RuntimeError: CUDA error" never becomes a confident match, however
exactly it repeats a known sample. Two thresholds split the score into
known / similar / none, as error trackers do.
"""

from __future__ import annotations

import math
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import repeat

from rapidfuzz import fuzz

from decisiontree.fingerprint import Signature, text_terms

KNOWN_THRESHOLD = 0.6
SIMILAR_THRESHOLD = 0.35

# Pretend every index also holds this many ordinary tracebacks, in which the
# words below are common. Without this prior a five-finding knowledge base
# would call "cuda" rare just because few findings mention it.
BACKGROUND_DOCS = 100
BACKGROUND_DF = 60
_COMMON_WORDS = """
    error errors exception traceback runtimeerror valueerror assertionerror typeerror
    keyerror indexerror attributeerror oserror ioerror notimplementederror
    accelerator acceleratorerror cudaerror cudaassertion python file line call most recent
    last the of in to is a an and or for on at by with from not none self return
    true false assert failed failure triggered raise raised torch cuda cudnn nccl
    device devices side kernel kernels gpu gpus memory out run runner runtime
    launch launched blocking debugging compile compiled consider passing
    asynchronously reported stacktrace api call calls might be incorrect
    enable enabled disable process processes worker workers main init model
    models forward module modules nn functional tensor tensors size shape
    dtype data value values num num_tokens batch utils util core engine
    server manager managers scheduler srt entrypoints layers layer site packages
    dist lib usr local home python3 py event loop handle received child
    exit exited code signal killed abort aborted sigquit sigabrt
    device-side assertion illegal access encountered tried allocate allocated reserved
    unallocated total capacity free including non-pytorch pytorch gi gib mi mib use
    expected got but found instead has have this that which was were please try
    workerproc enginecore engine_core proc procs start started startup initialization
    initialize initializing see root cause above below details info warn warning
    nccl_debug distbackenderror processgroupnccl c10d
"""
COMMON_TERMS = frozenset(_COMMON_WORDS.split())

# The rarest query terms open their posting lists until this many postings
# are read; the best partial scores are then scored in full. Keeps a lookup
# flat at 100k findings, where common words have postings of tens of thousands.
SEED_TERMS = 12
POSTINGS_BUDGET = 4_000
FULL_SCORE_LIMIT = 64
PARTIAL_CUTOFF = 0.25
EXPLAINED = 16  # candidates per query that are returned with their shared terms

# Shared evidence worth two specific terms counts in full; less is scaled down.
SPECIFIC_TERMS_FOR_CONFIDENCE = 2.0

FINGERPRINT_FLOOR = 0.97
TEMPLATE_FLOOR = 0.88


class MatchLevel(StrEnum):
    KNOWN = "known"
    SIMILAR = "similar"
    NONE = "none"


def level_of(score: float) -> MatchLevel:
    if score >= KNOWN_THRESHOLD:
        return MatchLevel.KNOWN
    if score >= SIMILAR_THRESHOLD:
        return MatchLevel.SIMILAR
    return MatchLevel.NONE


@dataclass(frozen=True)
class Query:
    """What we look up: a signature from the paste, or bare terms of a free-text line."""

    terms: tuple[str, ...]
    fingerprint: str | None = None
    template_key: str | None = None
    template: str = ""

    @classmethod
    def of(cls, signature: Signature) -> Query:
        return cls(
            terms=signature.terms,
            fingerprint=signature.fingerprint,
            template_key=signature.template_key,
            template=signature.template,
        )


@dataclass(frozen=True)
class Candidate:
    """One known finding that the paste resembles, and why."""

    finding_id: int
    score: float
    layer: str  # "linked" | "fingerprint" | "template" | "terms"
    matched_terms: tuple[str, ...]  # the most telling shared terms, heaviest first
    known_fingerprint: str | None  # the fingerprint of the known sample it resembles

    @property
    def level(self) -> MatchLevel:
        return level_of(self.score)

    def explain(self) -> str:
        shared = ", ".join(self.matched_terms[:5])
        if self.layer == "linked":
            return "a reviewer linked this fingerprint to the finding"
        if self.layer == "fingerprint":
            return f"same error fingerprint as a known sample (shares {shared})"
        if self.layer == "template":
            return f"same error message as a known sample, other frames (shares {shared})"
        return f"similar to a known sample: shares {shared} (score {self.score:.2f})"


@dataclass(frozen=True)
class _Entry:
    """One signature of one known sample."""

    finding_id: int
    fingerprint: str
    template_key: str
    template: str
    term_ids: array[int]


class SignatureIndex:
    """Inverted index over the signatures of all known samples."""

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._term_ids: dict[str, int] = {}
        self._terms: list[str] = []
        # term id -> entry numbers; packed arrays, not lists of int objects: at 100k
        # findings the postings are most of the index's memory.
        self._postings: list[array[int]] = []
        self._by_fingerprint: dict[str, set[int]] = defaultdict(set)
        self._by_template: dict[str, set[int]] = defaultdict(set)
        self._linked: dict[str, set[int]] = defaultdict(set)
        self._split: dict[str, set[int]] = defaultdict(set)
        self._weights: list[float] = []  # term id -> weight, refreshed by finish()
        self._entry_weights: list[float] = []  # entry number -> summed term weight
        self._stale = False

    def __len__(self) -> int:
        return len(self._entries)

    # --- building -------------------------------------------------------

    def add(self, finding_id: int, signature: Signature) -> None:
        if finding_id in self._split.get(signature.fingerprint, ()):
            return  # a reviewer said this error is not this finding
        number = len(self._entries)
        ids = array("i", sorted({self._term_id(term) for term in signature.terms}))
        self._entries.append(
            _Entry(
                finding_id, signature.fingerprint, signature.template_key, signature.template, ids
            )
        )
        for term_id in ids:
            self._postings[term_id].append(number)
        self._by_fingerprint[signature.fingerprint].add(number)
        self._by_template[signature.template_key].add(number)
        self._stale = True

    def link(self, fingerprint: str, finding_id: int) -> None:
        self._linked[fingerprint].add(finding_id)

    def split(self, fingerprint: str, finding_id: int) -> None:
        """Stop `fingerprint` from matching `finding_id` (call before `add`)."""
        self._split[fingerprint].add(finding_id)

    def finish(self) -> None:
        """Compute term weights once all samples are in."""
        self._weights = [
            self._idf_weight(len(p), term)
            for term, p in zip(self._terms, self._postings, strict=True)
        ]
        self._entry_weights = [sum(self._weights[i] for i in e.term_ids) for e in self._entries]
        self._stale = False

    def _term_id(self, term: str) -> int:
        found = self._term_ids.get(term)
        if found is not None:
            return found
        new_id = len(self._terms)
        self._term_ids[term] = new_id
        self._terms.append(term)
        self._postings.append(array("i"))
        return new_id

    # --- weights --------------------------------------------------------

    def _idf_weight(self, df: int, term: str) -> float:
        # Squared IDF: one rare identifier should outweigh a handful of common words.
        background = BACKGROUND_DF if term in COMMON_TERMS else 0
        docs = len(self._entries) + BACKGROUND_DOCS
        idf = math.log(1 + docs / (df + background + 1))
        return idf * idf

    def weight(self, term: str) -> float:
        term_id = self._term_ids.get(term)
        if term_id is not None and term_id < len(self._weights):
            return self._weights[term_id]
        return self._idf_weight(0, term)

    def _specific_weight(self) -> float:
        """The weight of a term seen in exactly one sample: the unit of confidence."""
        return self._idf_weight(1, "")

    def specificity(self, terms: Iterable[str]) -> float:
        """0..1: how much identifying information these terms carry."""
        info = sum(self.weight(term) for term in set(terms))
        return min(1.0, info / (SPECIFIC_TERMS_FOR_CONFIDENCE * self._specific_weight()))

    # --- lookup ---------------------------------------------------------

    def lookup(self, queries: Sequence[Query], limit: int = 10) -> tuple[Candidate, ...]:
        """Best candidate per finding over all queries, best first."""
        if self._stale:
            self.finish()
        best: dict[int, Candidate] = {}
        for query in queries:
            for candidate in self._lookup_one(query):
                held = best.get(candidate.finding_id)
                best[candidate.finding_id] = candidate if held is None else _merge(held, candidate)
        ranked = sorted(best.values(), key=lambda c: (-c.score, c.finding_id))
        return tuple(ranked[:limit])

    def _lookup_one(self, query: Query) -> list[Candidate]:
        query_terms = {t: self.weight(t) for t in set(query.terms)}
        candidates = self._by_terms(query, query_terms)
        candidates.extend(self._by_identity(query, query_terms))
        banned = self._split.get(query.fingerprint or "", set())
        return [c for c in candidates if c.finding_id not in banned]

    def _by_identity(self, query: Query, query_terms: dict[str, float]) -> list[Candidate]:
        """Layers 1-3: reviewer links, exact fingerprint, same template."""
        found = [
            Candidate(finding_id, 1.0, "linked", (), query.fingerprint)
            for finding_id in sorted(self._linked.get(query.fingerprint or "", ()))
        ]
        same_print = self._by_fingerprint.get(query.fingerprint or "", set())
        floor = FINGERPRINT_FLOOR * self.specificity(query_terms)
        found += self._identity_hits("fingerprint", same_print, floor, query_terms)
        same_template = self._by_template.get(query.template_key or "", set())
        if same_template:
            found += self._identity_hits(
                "template",
                same_template - same_print,
                self._template_floor(query, same_template),
                query_terms,
            )
        return found

    def _template_floor(self, query: Query, entries: set[int]) -> float:
        """A shared message counts by its own words, and less when many findings share it."""
        # "CUDA out of memory. Tried to allocate <size>" names no bug; a message
        # seen in three different findings cannot pick one of them.
        findings = len({self._entries[n].finding_id for n in entries})
        return TEMPLATE_FLOOR * self.specificity(text_terms(query.template)) / findings

    def _identity_hits(
        self, layer: str, entries: Iterable[int], score: float, query_terms: dict[str, float]
    ) -> list[Candidate]:
        hits = []
        for number in sorted(entries):
            entry = self._entries[number]
            shared = self._shared_terms(entry, query_terms)
            hits.append(
                Candidate(entry.finding_id, round(score, 4), layer, shared, entry.fingerprint)
            )
        return hits

    def _by_terms(self, query: Query, query_terms: dict[str, float]) -> list[Candidate]:
        """Layer 4: IDF-weighted overlap with the samples that share rare terms."""
        partial = self._seed_scores(query_terms)
        # An entry sharing only a sliver of the rare terms the best one shares cannot win.
        floor = max(partial.values(), default=0.0) * PARTIAL_CUTOFF
        shortlist = sorted(
            (n for n in partial if partial[n] >= floor), key=lambda n: (-partial[n], n)
        )[:FULL_SCORE_LIMIT]
        by_id = {self._term_ids[t]: w for t, w in query_terms.items() if t in self._term_ids}
        query_weight = sum(query_terms.values())
        scored = [(self._term_score(n, by_id, query_weight, query.template), n) for n in shortlist]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        found = []
        for score, number in scored[:EXPLAINED]:
            entry = self._entries[number]
            shared = self._shared_terms(entry, query_terms)
            found.append(Candidate(entry.finding_id, score, "terms", shared, entry.fingerprint))
        return found

    def _seed_scores(self, query_terms: dict[str, float]) -> dict[int, float]:
        """Partial scores from the heaviest query terms' posting lists only."""
        heaviest = sorted(query_terms, key=lambda t: (-query_terms[t], t))[:SEED_TERMS]
        partial: dict[int, float] = defaultdict(float)
        budget = POSTINGS_BUDGET
        for term in heaviest:
            term_id = self._term_ids.get(term)
            postings = self._postings[term_id] if term_id is not None else array("i")
            if len(postings) > budget:
                break  # the remaining terms are commoner still
            budget -= len(postings)
            for number in postings:
                partial[number] += query_terms[term]
        return partial

    def _term_score(
        self, number: int, query_ids: dict[int, float], query_weight: float, template: str
    ) -> float:
        entry = self._entries[number]
        known_weight = self._entry_weights[number]
        shared_weight = sum(map(query_ids.get, entry.term_ids, repeat(0.0)))
        if shared_weight <= 0 or known_weight <= 0 or query_weight <= 0:
            return 0.0
        # Overlap forgives a short paste against a long sample; Dice keeps
        # the score honest when both sides carry much the other lacks.
        overlap = shared_weight / min(query_weight, known_weight)
        dice = 2 * shared_weight / (query_weight + known_weight)
        coverage = 0.7 * overlap + 0.3 * dice
        coverage = max(coverage, 0.7 * coverage + 0.3 * _template_likeness(template, entry))
        confidence = min(
            1.0, shared_weight / (SPECIFIC_TERMS_FOR_CONFIDENCE * self._specific_weight())
        )
        return round(coverage * confidence, 4)

    def _shared_terms(self, entry: _Entry, query_terms: dict[str, float]) -> tuple[str, ...]:
        shared = [self._terms[i] for i in entry.term_ids if self._terms[i] in query_terms]
        # Equal weights: a whole identifier says more than one of its parts.
        return tuple(sorted(shared, key=lambda t: (-query_terms[t], -len(t), t))[:8])


LAYER_PRECEDENCE = ("linked", "fingerprint", "template", "terms")


def _merge(held: Candidate, other: Candidate) -> Candidate:
    """One candidate per finding: the best score, explained by the strongest layer."""
    top, low = (held, other) if held.score >= other.score else (other, held)
    # An identity layer explains the match if it scored (nearly) as high.
    stronger = LAYER_PRECEDENCE.index(low.layer) < LAYER_PRECEDENCE.index(top.layer)
    layer = low.layer if stronger and low.score >= 0.9 * top.score else top.layer
    terms = max(held.matched_terms, other.matched_terms, key=len)
    return Candidate(top.finding_id, top.score, layer, terms, top.known_fingerprint)


def _template_likeness(template: str, entry: _Entry) -> float:
    """0..1 similarity of two message templates (can only raise a term score)."""
    if not template or not entry.template:
        return 0.0
    return fuzz.token_set_ratio(template, entry.template) / 100.0
