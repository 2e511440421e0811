"""Match a paste against known findings: confident layers first, then retrieval, then a verifier.

Layers, each of which says why it matched:

1. a reviewer linked this exact fingerprint to a finding (under the current or,
   during a fingerprint-version transition, the previous version);
2. the same fingerprint (exception type, message template, key frames);
3. the same message template (exception type and template, any frames);
4. BM25F retrieval over every finding's samples, title, symptom and cause
   (`decisiontree.retrieval`), which ranks when the layers above are silent.

Whatever the layer, a candidate's score is the probability a small verifier
gives that the paste *is* that finding, from features any report has: how much
of the paste's error the finding explains and the other way round, how rare the
shared words are, whether the error messages agree word for word apart from
numbers and names, whether the key frames agree, and how far ahead of the
others the finding is. Its weights and the known/similar cut-offs are fitted on
real reports with leave-one-bug-out cross-validation (`bench/fit_matcher.py`)
and read from `decisiontree/data/matcher_tuning.json`.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import re
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache, lru_cache
from itertools import pairwise
from typing import TypeVar

import numpy as np

from decisiontree.finding_words import KnownWords, words_known
from decisiontree.fingerprint import (
    Signature,
    first_sentence,
    library_frame,
    mask_quoted,
    message_of,
    signatures_of,
)
from decisiontree.retrieval import Bm25fIndex, background_texts, query_weights
from decisiontree.terms import word_groups
from decisiontree.traceback import InputRejected, parse
from decisiontree.tuning import tuning

EXPLAINED_TERMS = 8  # shared terms returned with a candidate, most telling first
SHARED_RARE_CAP = 4.0  # "four rare words in common" is as strong as this feature gets
MESSAGE_RARE_CAP = 3.0  # likewise for the words two messages share
MESSAGE_RARE_WORDS = 2.0  # a message must carry this many rare words' worth to contain another
EXPLAINED_MEMO = 16_384  # messages an index remembers an answer for, per memo (a few MiB)
# Findings whose messages an index keeps read (`_KnownMessage`): a lookup weighs about ten,
# so this holds the last few hundred pastes' candidates in a few MiB more.
FINDING_MEMO = 4096
K = TypeVar("K")
V = TypeVar("V")


def known_threshold() -> float:
    return float(tuning()["verifier"]["known"])


def similar_threshold() -> float:
    return float(tuning()["verifier"]["similar"])


def words_alone_may_be_similar_only() -> bool:
    """Whether a match on words alone, with no word pair of a message in common in order,
    stops at "similar" (matcher_tuning.json, `known_on_words_alone`, says why)."""
    return bool(tuning()["known_on_words_alone"]["needs_phrase"])


def runner_up_threshold() -> float:
    return float(tuning()["verifier"]["runner_up"])


class MatchLevel(StrEnum):
    KNOWN = "known"
    SIMILAR = "similar"
    NONE = "none"


def level_of(score: float) -> MatchLevel:
    if score >= known_threshold():
        return MatchLevel.KNOWN
    if score >= similar_threshold():
        return MatchLevel.SIMILAR
    return MatchLevel.NONE


@dataclass(frozen=True)
class Query:
    """What we look up: a signature from the paste, or bare terms of a free-text line."""

    terms: tuple[str, ...]
    fingerprint: str | None = None
    template_key: str | None = None
    template: str = ""
    previous_fingerprint: str | None = None
    context_terms: tuple[str, ...] = ()
    key_frames: tuple[str, ...] = ()
    message: str = ""

    @classmethod
    def of(cls, signature: Signature) -> Query:
        return cls(
            terms=signature.terms,
            fingerprint=signature.fingerprint,
            template_key=signature.template_key,
            template=signature.template,
            previous_fingerprint=signature.previous_fingerprint or None,
            context_terms=signature.context_terms,
            key_frames=signature.key_frames,
            message=signature.message,
        )


THROUGH_WARNING = "a warning beside the error, not the error"


@dataclass(frozen=True)
class Candidate:
    """One known finding that the paste resembles, and why."""

    finding_id: int
    score: float  # the verifier's probability that the paste is this finding
    layer: str  # "linked" | "fingerprint" | "template" | "terms"
    matched_terms: tuple[str, ...]  # the most telling shared terms, heaviest first
    known_fingerprint: str | None  # the fingerprint of the known sample it resembles
    # Set when a reviewer's decision matched through the previous fingerprint version:
    # the fingerprint it was stored under, so the caller can store it anew.
    migrated_from: str | None = None
    # Below "similar", listed only after a first candidate at or above it (`shortlist`).
    runner_up: bool = False
    # Whether one paste message and one finding message share a pair of words, in order
    # (`Features.message_phrase` > 0); a match on words alone without one is not "known".
    phrase_shared: bool = True
    # Matched through a log warning beside the paste's error, which itself matched
    # nothing (`diagnose.matched_through_warnings`): the error is not the known one.
    through_warning: bool = False

    @property
    def level(self) -> MatchLevel:
        level = level_of(self.score)
        if level is MatchLevel.KNOWN and (self.held_back or self.through_warning):
            return MatchLevel.SIMILAR
        return level

    @property
    def held_back(self) -> bool:
        """Scored "known" on words alone, but no phrase of a message is shared: "similar"."""
        return (
            self.layer == "terms"
            and not self.phrase_shared
            and level_of(self.score) is MatchLevel.KNOWN
            and words_alone_may_be_similar_only()
        )

    def explain(self) -> str:
        said = self._explained()
        return f"{THROUGH_WARNING}: {said}" if self.through_warning else said

    def _explained(self) -> str:
        shared = ", ".join(self.matched_terms[:5])
        if self.layer == "linked":
            return "a reviewer linked this fingerprint to the finding"
        if self.layer == "fingerprint":
            return f"same error fingerprint as a known sample (shares {shared})"
        if self.layer == "template":
            return f"same error message as a known sample, other frames (shares {shared})"
        if self.runner_up:
            return f"less likely than the first match: shares {shared} (score {self.score:.2f})"
        said = f"similar to a known sample: shares {shared} (score {self.score:.2f})"
        return f"{said}; no phrase of its message, so not a known issue" if self.held_back else said


@dataclass(frozen=True)
class _Entry:
    """One signature of one known sample."""

    finding_id: int
    fingerprint: str
    template_key: str
    template: str
    key_frames: tuple[str, ...]
    message: str


@dataclass(frozen=True, slots=True)
class _KnownMessage:
    """One message of a finding, read as a paste's messages are compared with it."""

    words: frozenset[str]
    pairs: frozenset[tuple[str, str]]  # adjacent words, as printed
    # A sample's message as printed; None for a title or symptom, a person's summary:
    unusual: frozenset[str] | None  # the words no ordinary message explains
    names: frozenset[str]  # the quoted names (none where the message is nothing but one)


@dataclass(frozen=True)
class Features:
    """What the verifier weighs for one (paste, finding) pair; all in 0..1."""

    bm25_norm: float  # retrieval score over the most the paste's words could score
    bm25_rel: float  # retrieval score over the best finding's
    query_cover: float  # share of the paste's error information the finding holds
    finding_cover: float  # share of the finding's error information the paste holds
    unusual_query_cover: float  # query_cover over the terms ordinary output lacks
    unusual_finding_cover: float  # finding_cover over the terms ordinary output lacks
    shared_rare: float  # shared information, in rare words (capped)
    ordinary: float  # how well ordinary output (the background) explains the paste instead
    message: float  # best weighted Dice of the two error messages' specific words
    containment: float  # best share of the smaller message found in the other, weighted
    message_rare: float  # what those shared message words are worth, in rare words (capped)
    ordinary_message: float  # most a paste message shares with an ordinary one (rare words, capped)
    message_excess: float  # most a finding shares with a paste message beyond the ordinary
    message_held: float  # most of one paste message's unusual words the finding holds anywhere
    unusual_containment: float  # containment (as `containment`) of what ordinary output lacks
    finding_message_held: float  # most of one sample message's unusual words the paste holds
    clause_held: float  # the same over one clause of a message, scaled down when it says little
    message_phrase: float  # most of a paste message's unusual word pairs a finding message has
    frames: float  # share of key frames in common
    same_fingerprint: float
    same_template: float

    @property
    def cover_larger(self) -> float:
        """The larger of the two unusual covers: one side's unusual words are in the other."""
        return max(self.unusual_query_cover, self.unusual_finding_cover)

    @property
    def cover_smaller(self) -> float:
        """The smaller of the two: both sides' unusual words are in the other."""
        return min(self.unusual_query_cover, self.unusual_finding_cover)

    @property
    def containment_excess(self) -> float:
        """How much more of a message the finding contains than ordinary output explains."""
        return max(0.0, self.containment - self.ordinary_message)

    def vector(self, names: Sequence[str]) -> tuple[float, ...]:
        """A constant 1 (the bias), then the named measures."""
        return (1.0, *(float(getattr(self, name)) for name in names))


def verify(features: Features) -> float:
    """The fitted probability that the paste is this finding."""
    verifier = tuning()["verifier"]
    vector = features.vector(verifier["features"])
    z = sum(w * x for w, x in zip(verifier["weights"], vector, strict=True))
    return 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))


class SignatureIndex:
    """The known findings: their signatures (identity layers) and a BM25F index of their words."""

    def __init__(self) -> None:
        params = tuning()["bm25f"]
        self._context_weight: float = params["context_weight"]
        self._budget: int = params["postings_budget"]
        self._retrieve: int = params["retrieve"]
        self._entries: list[_Entry] = []
        self._by_finding: dict[int, list[int]] = defaultdict(list)
        self._by_fingerprint: dict[str, set[int]] = defaultdict(set)
        self._by_template: dict[str, set[int]] = defaultdict(set)
        self._linked: dict[str, set[int]] = defaultdict(set)
        self._split: dict[str, set[int]] = defaultdict(set)
        # A finding's error terms (its samples' error lines, its title and symptom): until
        # finish(), the ids retrieval gave them and the words past a field's cap, which get
        # theirs only then; after, their term ids, sorted. Ids, not strings: a rebuild reads
        # each sample's own copy of its words, hundreds of MiB at 100k findings if kept.
        self._error_words: dict[int, tuple[array[int], list[str]]] = {}
        self._error_ids: dict[int, array[int]] = {}
        self._own_lines: dict[int, tuple[str, str]] = {}  # title and symptom, as written
        self._error_info: dict[int, float] = {}  # finding id -> weight of its error terms
        # A message's words -> those its closest ordinary message holds, under the current
        # weights: findings of one error share messages, so pastes ask for the same ones.
        self._explained: dict[frozenset[str], frozenset[str]] = {}
        self._forms: dict[str, str] = {}  # a message -> its `message_form`, likewise
        self._known: dict[int, tuple[_KnownMessage, ...]] = {}  # a finding's, likewise
        self.retrieval = Bm25fIndex()

    def __len__(self) -> int:
        return len(self._entries)

    # --- building -------------------------------------------------------

    def add(self, finding_id: int, signature: Signature) -> None:
        """Index one signature of one of the finding's samples."""
        banned = self._split.get(signature.fingerprint, set())
        if signature.previous_fingerprint:
            banned = banned | self._split.get(signature.previous_fingerprint, set())
        if finding_id in banned:
            return  # a reviewer said this error is not this finding
        number = len(self._entries)
        self._known.pop(finding_id, None)
        self._entries.append(
            _Entry(
                finding_id,
                signature.fingerprint,
                signature.template_key,
                signature.template,
                signature.key_frames,
                signature.message or signature.template,
            )
        )
        self._by_finding[finding_id].append(number)
        self._by_fingerprint[signature.fingerprint].add(number)
        self._by_template[signature.template_key].add(number)
        self._pend(
            finding_id, signature.terms, self.retrieval.add(finding_id, "errors", signature.terms)
        )
        if signature.context_terms:
            self.retrieval.add(finding_id, "text", signature.context_terms)

    def add_text(
        self,
        finding_id: int,
        *,
        title: str,
        summary: str,
        cause: str,
        known: KnownWords | None = None,
    ) -> None:
        """Index the finding's own words: its title, symptom and cause (and fixes); `known`
        holds words stored for them (`finding_words`), read again where it does not."""
        for name, text in (("title", title), ("summary", summary), ("cause", cause)):
            if text.strip():
                words = words_known(text, known)
                ids = self.retrieval.add(finding_id, name, words)
                if name != "cause":
                    self._pend(finding_id, words, ids)
        # Read as messages only when a diagnosis weighs the finding (`_known_messages`):
        # at 100k findings normalising every title and symptom was a tenth of the build.
        self._own_lines[finding_id] = (title, summary)
        self._known.pop(finding_id, None)

    def _pend(self, finding_id: int, words: Sequence[str], ids: Sequence[int]) -> None:
        """Keep a finding's error words till finish(): as ids, but those retrieval gave none."""
        pending = self._error_words.get(finding_id)
        if pending is None:
            pending = self._error_words[finding_id] = (array("i"), [])
        pending[0].extend(ids)
        pending[1].extend(words[len(ids) :])

    def link(self, fingerprint: str, finding_id: int) -> None:
        self._linked[fingerprint].add(finding_id)

    def split(self, fingerprint: str, finding_id: int) -> None:
        """Stop `fingerprint` from matching `finding_id` (call before `add`)."""
        self._split[fingerprint].add(finding_id)

    def decided(self) -> frozenset[str]:
        """Every fingerprint a reviewer's decision is stored under."""
        return frozenset(self._linked) | frozenset(self._split)

    def finish(self) -> None:
        """Compute term weights once all findings are in."""
        if self.retrieval.stale:
            self.retrieval.finish()
            self._error_info.clear()
            self._explained.clear()
            self._forms.clear()
            self._known.clear()
        if self._error_words:
            # After the postings: a word past a field's cap gets its id only now, so the
            # ids of the words retrieval searches keep the order they were first seen in.
            for finding_id, (known, words) in self._error_words.items():
                if words:
                    known.extend(self.retrieval.term_ids(words))
                known.extend(self._error_ids.get(finding_id, ()))
            self._error_ids.update(_distinct_sorted(self._error_words))
            self._error_words.clear()
            self._error_info.clear()

    # --- weights --------------------------------------------------------

    def weight(self, term: str) -> float:
        return self.retrieval.idf(term)

    def _finding_info(self, finding_id: int) -> float:
        info = self._error_info.get(finding_id)
        if info is None:
            info = sum(self.retrieval.idf_by_ids(self._error_ids.get(finding_id, ())))
            self._error_info[finding_id] = info
        return info

    def specificity(self, terms: Iterable[str]) -> float:
        """0..1: how much identifying information these terms carry (in rare words)."""
        info = sum(self.weight(term) for term in set(terms))
        return min(1.0, info / (2 * self.retrieval.max_idf()))

    # --- lookup ---------------------------------------------------------

    def lookup(self, queries: Sequence[Query], limit: int = 10) -> tuple[Candidate, ...]:
        """Candidates for one paste (all its queries together), best first."""
        if not queries:
            return ()
        self.finish()
        paste = _Paste.of(queries, self)
        found: dict[int, Candidate] = {}
        for candidate in self._linked_candidates(paste):
            found.setdefault(candidate.finding_id, candidate)
        framed = {self._entries[n].finding_id for n in paste.framed_entries(self._by_fingerprint)}
        for finding_id, layer, features in self._assessed(paste, every=_verifier_reads_bench()):
            if finding_id not in found:
                score = round(verify(features), 4)
                if _same_code(layer, features, paste, finding_id in framed):
                    # The same error message raised from the same code: the confident
                    # layers, whatever the verifier makes of an ordinary message.
                    score = max(score, known_threshold())
                elif (
                    layer == "template"
                    and score < similar_threshold()
                    and self._library_message(paste, finding_id)
                ):
                    # The finding is about the message a library raises, whoever called it:
                    # its sample shows no caller's frame to tell another failure by. The same
                    # message is then like it at least, however ordinary its words.
                    score = similar_threshold()
                elif (
                    score >= similar_threshold()
                    and layer == "terms"
                    and not features.message_phrase
                    and self._shares_little(paste, finding_id)
                ):
                    # Words alone, and of what ordinary output lacks only a name or two in
                    # common ("vllm" in pip's "Could not find a version"): the covers are
                    # whole, of almost nothing. A phrase in common is more than that.
                    score = min(score, round(similar_threshold() - 0.01, 4))
                elif score >= similar_threshold() and self._raises_another(paste, finding_id):
                    # Whatever line or frames both print exactly, the error is another:
                    # what is left in common is words.
                    score, layer = min(score, round(similar_threshold() - 0.01, 4)), "terms"
                shown = score >= min(similar_threshold(), runner_up_threshold())  # explained
                found[finding_id] = Candidate(
                    finding_id,
                    score,
                    layer,
                    self._shared(paste, finding_id) if shown else (),
                    self._known_fingerprint(finding_id),
                    phrase_shared=features.message_phrase > 0,
                )
        ranked = sorted(found.values(), key=lambda c: (-c.score, c.finding_id))
        return tuple(ranked[:limit])

    def findings_holding(self, signature: Signature) -> frozenset[int]:
        """The findings with a sample of the same fingerprint or message template."""
        numbers = self._by_fingerprint.get(signature.fingerprint, set()) | self._by_template.get(
            signature.template_key, set()
        )
        return frozenset(self._entries[n].finding_id for n in numbers)

    def shared_terms(self, queries: Sequence[Query], finding_id: int) -> tuple[str, ...]:
        """The most telling terms a paste shares with one finding, for one not shown
        (`lookup` explains only candidates above the lower threshold)."""
        if not queries:
            return ()
        self.finish()
        return self._shared(_Paste.of(queries, self), finding_id)

    def assess(self, queries: Sequence[Query]) -> list[tuple[int, str, Features]]:
        """(finding id, layer, verifier features) of every candidate, for benches and fits."""
        if not queries:
            return []
        self.finish()
        return self._assessed(_Paste.of(queries, self), every=True)

    def _assessed(self, paste: _Paste, *, every: bool) -> list[tuple[int, str, Features]]:
        """`every`: the measures only benches read (`BENCH_MEASURES`) too, else NaN."""
        self.finish()
        weights = query_weights(paste.error_terms, paste.context_terms, self._context_weight)
        hits = self.retrieval.search(weights, self._retrieve, self._budget)
        scores = {hit.doc: hit.score for hit in hits if hit.doc >= 0}
        ordinary = max((hit.score for hit in hits if hit.doc < 0), default=0.0)
        # Each error of the paste against the ordinary output closest to it: a log of two
        # errors has boilerplate of two kinds, and one ordinary document explains one.
        closest = dict.fromkeys(
            doc
            for query in paste.queries
            if (
                doc := self.retrieval.closest_background(
                    query_weights(query.terms, query.context_terms, self._context_weight)
                )
            )
            is not None
        )
        ordinary_ids = sorted({i for doc in closest for i in self.retrieval.doc_term_ids(doc)})
        paste.ordinary_terms = frozenset(self.retrieval.term_of(i) for i in ordinary_ids)
        paste.unusual = paste.error_set - paste.ordinary_terms
        paste.unusual_info = sum(paste.weights(t) for t in paste.unusual)
        paste.read_ordinary(ordinary_ids, self.retrieval)
        same_print = {self._entries[n].finding_id for n in paste.entries(self._by_fingerprint)}
        same_template = {self._entries[n].finding_id for n in paste.entries(self._by_template)}
        ceiling = sum(self.weight(t) * w for t, w in weights.items()) or 1.0
        best = max(scores.values(), default=0.0) or 1.0
        banned = paste.banned(self._split)
        assessed = []
        for finding_id in dict.fromkeys([*scores, *sorted(same_print | same_template)]):
            if finding_id in banned:
                continue
            features = self._features(
                paste, finding_id, scores, (ceiling, best, ordinary), same_print, every
            )
            features = _with_template(features, finding_id in same_template)
            if finding_id in same_print:
                layer = "fingerprint"
            elif finding_id in same_template:
                layer = "template"
            else:
                layer = "terms"
            assessed.append((finding_id, layer, features))
        return assessed

    def _linked_candidates(self, paste: _Paste) -> list[Candidate]:
        found = []
        for fingerprint, is_previous in paste.fingerprints:
            for finding_id in sorted(self._linked.get(fingerprint, ())):
                found.append(
                    Candidate(
                        finding_id,
                        1.0,
                        "linked",
                        (),
                        fingerprint,
                        migrated_from=fingerprint if is_previous else None,
                    )
                )
        return found

    def _features(
        self,
        paste: _Paste,
        finding_id: int,
        scores: dict[int, float],
        scale: tuple[float, float, float],
        same_print: set[int],
        every: bool,
    ) -> Features:
        ceiling, best, ordinary = scale
        score = scores.get(finding_id, 0.0)
        # Term ids from here on: the paste's known terms, the finding's document and errors.
        terms = paste.ids_of(finding_id, self.retrieval)
        errors = set(self._error_ids.get(finding_id, ()))
        weight = paste.id_weights.__getitem__
        shared = paste.error_ids & terms
        shared_info = sum(weight(t) for t in shared)
        message, containment, message_info, excess = self._message_overlap(
            paste, finding_id, closest=every
        )
        unusual_containment, finding_message_held = self._unusual_messages(paste, finding_id)
        finding_info = self._finding_info(finding_id) or 1.0
        in_paste = errors & paste.all_ids
        finding_shared = sum(weight(t) for t in in_paste)
        # The same two covers over what is *not* ordinary: the terms the closest background
        # document lacks. An exact repeat of a generic line has nothing left to cover.
        unusual_info = paste.unusual_info
        unusual_shared = sum(weight(t) for t in paste.unusual_ids & terms)
        specific_info = finding_info - sum(weight(t) for t in errors & paste.ordinary_ids)
        specific_shared = finding_shared - sum(weight(t) for t in in_paste & paste.ordinary_ids)
        return Features(
            unusual_query_cover=unusual_shared / unusual_info if unusual_info else 0.0,
            unusual_finding_cover=specific_shared / specific_info if specific_info > 0 else 0.0,
            bm25_norm=min(1.0, score / ceiling),
            # The same fingerprint is the same error as printed: as close as any finding
            # gets, whatever the finding's other words add to its retrieval score.
            bm25_rel=1.0 if finding_id in same_print else score / best,
            query_cover=shared_info / (paste.error_info or 1.0),
            finding_cover=finding_shared / finding_info,
            shared_rare=min(SHARED_RARE_CAP, shared_info / self.retrieval.max_idf())
            / SHARED_RARE_CAP,
            ordinary=ordinary / (ordinary + score) if ordinary + score > 0 else 1.0,
            message=message,
            containment=containment,
            message_rare=min(MESSAGE_RARE_CAP, message_info / self.retrieval.max_idf())
            / MESSAGE_RARE_CAP,
            ordinary_message=min(
                1.0,
                max(sum(paste.weights(t) for t in o) for o in paste.ordinary)
                / (MESSAGE_RARE_CAP * self.retrieval.max_idf()),
            ),
            message_excess=excess,
            message_held=self._message_held(paste, terms),
            unusual_containment=unusual_containment,
            finding_message_held=finding_message_held,
            clause_held=self._clause_held(paste, terms),
            message_phrase=self._message_phrase(paste, finding_id),
            frames=self._frame_overlap(paste, finding_id),
            same_fingerprint=1.0 if finding_id in same_print else 0.0,
            same_template=0.0,
        )

    def _message_overlap(
        self, paste: _Paste, finding_id: int, *, closest: bool
    ) -> tuple[float, float, float, float]:
        """Best (Dice, containment, shared weight) of the paste's and the finding's messages
        (NaN unless `closest`), and the most information (in rare words, capped) that the
        finding's messages share with one paste message beyond what the closest ordinary
        message shares with it."""
        best = (0.0, 0.0, 0.0) if closest else (math.nan, math.nan, math.nan)
        excess = 0.0
        known_words = [known.words for known in self._known_messages(finding_id)]
        for words, ordinary in zip(paste.messages, paste.ordinary, strict=True):
            for known in known_words:
                if closest:
                    best = max(best, self.compare(words, known, paste.weights))
                # What the finding explains of this message that ordinary output does not.
                excess = max(excess, sum(paste.weights(t) for t in (words & known) - ordinary))
        excess = min(MESSAGE_RARE_CAP, excess / self.retrieval.max_idf()) / MESSAGE_RARE_CAP
        return (*best, excess)

    def _unusual_messages(self, paste: _Paste, finding_id: int) -> tuple[float, float]:
        """The two messages' overlap over what ordinary output does not explain, each
        way: (the weighted containment of the closest pair of a paste message and a
        finding message, both less the words the paste message's closest ordinary
        message holds; the largest share, by weight, of one sample message's unusual
        words found anywhere in the paste, scaled down when they carry less than two
        rare words' worth).

        `containment_excess` subtracts an amount of rare words from a share, so a long
        message that an ordinary one partly explains counts for nothing however much
        of it the finding holds; these compare like with like."""
        enough = MESSAGE_RARE_WORDS * self.retrieval.max_idf()
        closest = (0.0, 0.0, 0.0)  # (Dice, containment, shared weight) of the closest pair
        held = 0.0
        unusual_mine = [m - o for m, o in zip(paste.messages, paste.ordinary, strict=True)]
        for known in self._known_messages(finding_id):
            for mine, ordinary in zip(unusual_mine, paste.ordinary, strict=True):
                closest = max(closest, self.compare(mine, known.words - ordinary, paste.weights))
            if known.unusual is None:
                continue  # a title or symptom is a person's summary, not a message as printed
            total = sum(paste.weights(t) for t in known.unusual)
            if total:
                # A quoted name counts where a message of the paste holds it: anywhere, it
                # may be in a line of code passing through it (`torch._C._cuda_setDevice
                # (device)` of every torch.cuda start-up).
                names = known.names
                found = sum(
                    paste.weights(t)
                    for t in known.unusual
                    if (t in paste.message_words if t in names else t in paste.all_terms)
                )
                held = max(held, found / total * min(1.0, total / enough))
        return closest[1], held

    def _raises_another(self, paste: _Paste, finding_id: int) -> bool:
        """Whether the paste's own error, raised with its frames, is one the finding's
        tracebacks do not hold: another message whose unusual words the finding mostly
        lacks. What else matched (a wrapper line every failure of the stack prints, the
        frames the two failures passed through) is then about the stack, not the error."""
        primary = paste.queries[0] if paste.queries else None
        if primary is None or not primary.key_frames or not primary.template_key:
            return False
        entries = [self._entries[n] for n in self._by_finding.get(finding_id, ())]
        if not any(e.key_frames for e in entries):
            return False  # the finding holds no traceback to disagree with
        if any(e.template_key == primary.template_key for e in entries):
            return False
        words = _template_words(self.message_form(primary.message or primary.template))
        unusual = words - self.explained_by_ordinary(words)
        held, total = self._held(paste, unusual, paste.ids_of(finding_id, self.retrieval))
        enough = total >= MESSAGE_RARE_WORDS * self.retrieval.max_idf()
        return enough and held < float(tuning()["raises_another"]["held_below"])

    def _library_message(self, paste: _Paste, finding_id: int) -> bool:
        """Whether a sample of the finding with the paste's message template was raised
        inside a library with no frame of the code that called it (Triton's launcher
        alone, for a kernel too large for the GPU)."""
        return any(
            entry.template_key in paste.template_keys
            and entry.key_frames
            and all(library_frame(frame) for frame in entry.key_frames)
            for entry in (self._entries[n] for n in self._by_finding.get(finding_id, ()))
        )

    def _shares_little(self, paste: _Paste, finding_id: int) -> bool:
        """Whether what the paste shares with the finding beyond ordinary output is worth
        less than two rare words: its covers are then of almost nothing."""
        weight = paste.id_weights.__getitem__
        shared = sum(
            weight(t) for t in paste.unusual_ids & paste.ids_of(finding_id, self.retrieval)
        )
        return shared < MESSAGE_RARE_WORDS * self.retrieval.max_idf()

    def _message_held(self, paste: _Paste, terms: set[int]) -> float:
        """The largest share (by weight) of one paste message's unusual words, those the
        closest ordinary message lacks, that the finding (`terms`: its document's term
        ids) holds anywhere."""
        best = 0.0
        for words, ordinary in zip(paste.messages, paste.ordinary, strict=True):
            best = max(best, self._held(paste, words - ordinary, terms)[0])
        return best

    def _clause_held(self, paste: _Paste, terms: set[int]) -> float:
        """`_message_held` over one clause of a message ("Error 802: system not yet
        initialized" of a longer warning), scaled down when the clause's unusual words
        carry less than two rare words' worth: one shared word is no clause."""
        best = 0.0
        enough = MESSAGE_RARE_WORDS * self.retrieval.max_idf()
        for words, ordinary in zip(paste.clauses, paste.clause_ordinary, strict=True):
            share, total = self._held(paste, words - ordinary, terms)
            best = max(best, share * min(1.0, total / enough))
        return best

    def _message_phrase(self, paste: _Paste, finding_id: int) -> float:
        """The largest share (by weight) of one paste message's word pairs, adjacent as
        printed and not both explained by ordinary output, that one finding message holds
        adjacent too: "no available kernel" and "no kernel image is available" share words,
        not phrases."""
        pairs_known = [known.pairs for known in self._known_messages(finding_id)]
        best = 0.0
        for unusual in paste.pairs:
            total = math.fsum(paste.weights(a) + paste.weights(b) for a, b in unusual)
            if not total:
                continue
            for other in pairs_known:
                held = math.fsum(
                    paste.weights(a) + paste.weights(b) for a, b in unusual if (a, b) in other
                )
                best = max(best, held / total)
        return best

    def _held(self, paste: _Paste, words: Iterable[str], terms: set[int]) -> tuple[float, float]:
        """(share of the words' weight the finding holds, the words' weight)."""
        total = held = 0.0
        for word in words:
            weight = paste.weights(word)
            total += weight
            term_id = self.retrieval.term_id(word)
            if term_id is not None and term_id in terms:
                held += weight
        return (held / total if total else 0.0), total

    def ordinary_message(self, signature: Signature) -> bool:
        """Whether every word of the error's message is one an ordinary message holds
        (PyTorch's out-of-memory line, CUDA's "an illegal memory access"): the same message
        then says which error it is, not which failure."""
        words = _template_words(self.message_form(signature.message or signature.template))
        return bool(words) and not words - self.explained_by_ordinary(words)

    def _known_messages(self, finding_id: int) -> tuple[_KnownMessage, ...]:
        """A finding's messages as compared word by word: its samples', then its title's
        and symptom's (`message_form`), each read once while the weights stay."""
        return self._remembered(self._known, finding_id, self._read_known, bound=FINDING_MEMO)

    def _read_known(self, finding_id: int) -> tuple[_KnownMessage, ...]:
        printed = [self._entries[n].message for n in self._by_finding.get(finding_id, ())]
        summaries = _own_messages(*self._own_lines.get(finding_id, ("", "")))
        known = []
        for number, message in enumerate([*printed, *summaries]):
            form = self.message_form(message)
            words = _template_words(form)
            if number >= len(printed):
                known.append(_KnownMessage(words, _word_pairs(form), None, frozenset()))
                continue
            # A message of nothing but a value (a KeyError's key) has no quoted names:
            # its value is the message, as it always was.
            said = _template_words(mask_quoted(form))
            known.append(
                _KnownMessage(
                    words,
                    _word_pairs(form),
                    words - self.explained_by_ordinary(words),
                    words - said if said else frozenset(),
                )
            )
        return tuple(known)

    def message_form(self, message: str) -> str:
        """A message as compared word by word: its quoted values masked, as the template
        masks them, unless every other word of it is one that ordinary output prints
        ("module 'torch' has no attribute 'uint16'", "cannot import name 'x' from 'y'", a
        KeyError's key alone): the values are then what tells one error from another."""
        return self._remembered(self._forms, message, self._message_form)

    def _message_form(self, message: str) -> str:
        masked = mask_quoted(message)
        if masked == message:
            return message
        # Its first sentence decides, as the template's: a hint after it ("Did you mean:
        # 'hf_hub_download'?", Python 3.10's) is not what the error says.
        words = _template_words(first_sentence(masked))
        if words and words - self.explained_by_ordinary(words):
            return masked
        return message

    def explained_by_ordinary(self, words: frozenset[str]) -> frozenset[str]:
        """The words of a message that the closest ordinary (background) message shares."""
        # Only the words some ordinary message holds decide which one is closest, and
        # those are few and often the same (a template's fixed words) where the messages
        # differ in their names: remembered by them, most findings' messages hit.
        holding = ordinary_message_index()[1]
        return self._remembered(
            self._explained, frozenset(holding.keys() & words), self._explained_by_ordinary
        )

    def _remembered(
        self, table: dict[K, V], key: K, compute: Callable[[K], V], bound: int = EXPLAINED_MEMO
    ) -> V:
        """`compute(key)`, kept in `table` while the weights stay (cleared when full)."""
        if self.retrieval.stale:  # weights about to change: nothing to remember yet
            return compute(key)
        found = table.get(key)
        if found is None:
            if len(table) >= bound:
                table.clear()
            found = table[key] = compute(key)
        return found

    def _explained_by_ordinary(self, words: frozenset[str]) -> frozenset[str]:
        messages, holding = ordinary_message_index()
        weights: dict[int, float] = defaultdict(float)
        # Summed in one fixed order: a set's order changes from run to run, and a message's
        # weight must be the same float in every run, not differ in its last bit (cheaper
        # than an exact sum per message, and as steady).
        for word in sorted(w for w in words if w in holding):  # a word none holds adds 0
            weight = self.weight(word)
            for number in holding[word]:
                weights[number] += weight
        if not weights:
            return frozenset()
        # Ties go to the first ordinary message, so that an answer does not depend on
        # the order a set of words happened to be read in.
        return words & messages[max(weights, key=lambda number: (weights[number], -number))]

    def compare(
        self, a: frozenset[str], b: frozenset[str], weights: _Memo
    ) -> tuple[float, float, float]:
        """(weighted Dice, weighted containment of the smaller, shared weight) of two messages.

        Containment is scaled down when the smaller message carries less than two rare
        words' worth of information: "CUDA error" inside any message proves nothing.
        """
        # Exact sums (fsum): the closest pair must not depend on a set's order.
        weight_a = weights.total(a)
        weight_b = weights.total(b)
        shared = math.fsum(weights(t) for t in a & b)
        if not weight_a or not weight_b:
            return 0.0, 0.0, 0.0
        smaller = min(weight_a, weight_b)
        enough = min(1.0, smaller / (MESSAGE_RARE_WORDS * self.retrieval.max_idf()))
        return 2 * shared / (weight_a + weight_b), shared / smaller * enough, shared

    def _frame_overlap(self, paste: _Paste, finding_id: int) -> float:
        if not paste.functions:
            return 0.0
        known = {
            frame.rsplit(":", 1)[-1]
            for number in self._by_finding.get(finding_id, ())
            for frame in self._entries[number].key_frames
        }
        if not known:
            return 0.0
        return len(paste.functions & known) / min(len(paste.functions), len(known))

    def _shared(self, paste: _Paste, finding_id: int) -> tuple[str, ...]:
        shared_ids = paste.all_ids & paste.ids_of(finding_id, self.retrieval)
        shared = {self.retrieval.term_of(i) for i in shared_ids}
        # Equal weights: a whole identifier says more than one of its parts.
        weight = paste.weights
        return tuple(
            heapq.nsmallest(EXPLAINED_TERMS, shared, key=lambda t: (-weight(t), -len(t), t))
        )

    def _known_fingerprint(self, finding_id: int) -> str | None:
        numbers = self._by_finding.get(finding_id)
        return self._entries[numbers[0]].fingerprint if numbers else None


def _distinct_sorted(
    pending: dict[int, tuple[array[int], list[str]]],
) -> Iterator[tuple[int, array[int]]]:
    """Per finding, its term ids (the arrays of `pending`) distinct and sorted: one sort of
    every finding's ids at once, not a set and a sort per finding (100k at a rebuild)."""
    lengths = np.fromiter((len(ids) for ids, _ in pending.values()), np.int64, len(pending))
    ids = np.frombuffer(b"".join(ids.tobytes() for ids, _ in pending.values()), np.intc)
    keys = np.repeat(np.arange(len(pending), dtype=np.int64) << 32, lengths)
    keys |= ids
    keys.sort()  # then drop repeats (np.unique hashes: many times slower here)
    if len(keys):
        new = np.empty(len(keys), dtype=bool)
        new[0] = True
        np.not_equal(keys[1:], keys[:-1], out=new[1:])
        keys = keys[new]
    counts = np.bincount(keys >> 32, minlength=len(pending))
    flat = (keys & 0xFFFFFFFF).astype(np.intc).tobytes()
    at = 0
    for finding_id, count in zip(pending, counts.tolist(), strict=True):
        found = array("i")
        found.frombytes(flat[at : at + 4 * count])
        at += 4 * count
        yield finding_id, found


def shortlist(candidates: Sequence[Candidate], relative: float = 0.0) -> tuple[Candidate, ...]:
    """What an answer lists: the candidates at or above "similar" and, after a first one
    there found by its words (not the same fingerprint, not a reviewer's link), up to
    `runner_ups` more at or above the lower runner-up cut-off, marked as such. The first
    match of a paste is often a near miss of the same framework and the right finding
    second, far below it; never listed alone, a runner-up costs no false match (fitted
    in bench/fit_matcher.py).

    `relative` is the share of the first score that an answer shows beside it (the
    walk's cut-off): a candidate at or above "similar" but further below is a runner-up
    too, as the fit counts it, rather than dropped."""
    listed = [c for c in candidates if c.level is not MatchLevel.NONE]
    if not listed or candidates[0].level is MatchLevel.NONE:
        return tuple(listed)
    if candidates[0].layer in ("linked", "fingerprint"):
        return tuple(listed)  # the error as printed, or a reviewer's link: no guessing beside it
    close = candidates[0].score * relative
    first = candidates[0]
    # A first match that holds the paste's message (its template) is the error itself; a
    # finding that shares words with the paste but no phrase of its message is a guess
    # beside it, however close its score: "Not enough memory. Please try to increase
    # --mem-fraction-static" is the KV-cache refusal, not a capture OOM that also names
    # the flag.
    exact = first.layer == "template" and first.level is MatchLevel.KNOWN
    listed = [
        c
        for c in listed
        if c.score >= close and not (exact and c.layer == "terms" and not c.phrase_shared)
    ]
    floor = runner_up_threshold()
    more = [c for c in candidates if c not in listed and c.score >= floor]
    count = int(tuning()["verifier"]["runner_ups"])
    return (*listed, *(dataclasses.replace(c, runner_up=True) for c in more[:count]))


# The measures no lookup reads unless the fitted verifier does: the benches weigh them as
# candidates for a fit (bench/fit_matcher.py). Comparing every pair of messages for them
# was a tenth of a lookup at 100k findings.
BENCH_MEASURES = frozenset({"message", "containment", "message_rare"})


def _verifier_reads_bench() -> bool:
    return not BENCH_MEASURES.isdisjoint(tuning()["verifier"]["features"])


def _same_code(layer: str, features: Features, paste: _Paste, framed: bool) -> bool:
    """The same fingerprint, whose hash holds the key frames, with those frames (`framed`:
    a line printed with no frames, such as the advice under every error of a library,
    shares its fingerprint whatever code failed); or the same message template with every
    key function in common, two or more of them (one shared function name, `__init__`,
    says little without its module)."""
    if features.frames != 1.0:
        return False
    if layer == "fingerprint":
        return framed
    return layer == "template" and len(paste.functions) > 1


def _with_template(features: Features, same: bool) -> Features:
    if not same:
        return features
    return Features(**{**features.__dict__, "same_template": 1.0})


@cache
def ordinary_messages() -> tuple[frozenset[str], ...]:
    """The messages of the background's ordinary errors, as words."""
    found: dict[frozenset[str], None] = {}
    for text in background_texts():
        try:
            signatures = signatures_of(parse(text), warnings=True)
        except InputRejected:
            continue
        for signature in signatures:
            # As templates are read, quoted values masked: an ordinary message is its words.
            words = _template_words(mask_quoted(signature.message or signature.template))
            if words:
                found[words] = None
    return tuple(found)


@cache
def ordinary_message_index() -> tuple[tuple[frozenset[str], ...], dict[str, tuple[int, ...]]]:
    """The ordinary messages, and for each word the numbers of the messages that hold it."""
    messages = ordinary_messages()
    holding: dict[str, list[int]] = defaultdict(list)
    for number, words in enumerate(messages):
        for word in words:
            holding[word].append(number)
    return messages, {word: tuple(numbers) for word, numbers in holding.items()}


_CLAUSE = re.compile(r"[.?!;:](?:\s+|$)|\s+-\s+|\|")


@lru_cache(maxsize=65_536)
def _template_words(template: str) -> frozenset[str]:
    """The specific parts of a template: its words, placeholders left out."""
    return frozenset(_words_in_order(template))


@lru_cache(maxsize=16_384)
def _word_pairs(template: str) -> frozenset[tuple[str, str]]:
    """Word pairs of a template's adjacent tokens (a placeholder joins its neighbours):
    each word of one token with each of the next. The parts of one name ("flash-attn")
    are no pair: two messages that share a name share a word, not a phrase."""
    groups = _word_groups(template)
    return frozenset((a, b) for first, then in pairwise(groups) for a in first for b in then)


def _words_in_order(template: str) -> tuple[str, ...]:
    return tuple(word for group in _word_groups(template) for word in group)


@lru_cache(maxsize=65_536)
def _word_groups(template: str) -> tuple[tuple[str, ...], ...]:
    # Cached on its own: the readers above ask for the same template one after the other,
    # and one reading of its tokens serves its words and its pairs.
    groups = word_groups(template.replace("<", " <").replace(">", "> "))
    kept = (tuple(word for word in group if word not in _PLACEHOLDERS) for group in groups)
    return tuple(group for group in kept if group)


def _own_messages(title: str, summary: str) -> tuple[str, ...]:
    """A finding's title and symptom as messages, as a paste's are read."""
    return tuple(message_of(text) for text in (title, summary) if text.strip())


_PLACEHOLDERS = frozenset(
    {"url", "ts", "uuid", "ip", "path", "hex", "shape", "gpu", "size", "ver", "rank", "id",
     "num", "q"}
)  # fmt: skip


class _Memo(dict[str, float]):
    """A function's results by argument, for the length of one lookup."""

    def __init__(self, function: Callable[[str], float]) -> None:
        super().__init__()
        self._function = function
        self._totals: dict[frozenset[str], float] = {}

    def __call__(self, term: str) -> float:
        found = self.get(term)
        if found is None:
            found = self[term] = self._function(term)
        return found

    def total(self, words: frozenset[str]) -> float:
        """The words' summed weight, exactly (fsum), remembered: one message is compared
        with every message of every candidate."""
        found = self._totals.get(words)
        if found is None:
            found = self._totals[words] = math.fsum(self(t) for t in words)
        return found


@dataclass
class _Paste:
    """All queries of one paste, read once."""

    error_terms: tuple[str, ...]
    context_terms: tuple[str, ...]
    error_set: set[str]
    all_terms: set[str]
    idf: dict[str, float]
    error_info: float
    fingerprints: list[tuple[str, bool]]  # (fingerprint, is the previous version's)
    framed_fingerprints: set[str]  # those of errors printed with key frames
    template_keys: set[str]
    messages: list[frozenset[str]]
    functions: set[str]
    ordinary: list[frozenset[str]]  # per message: its words the closest ordinary message has
    clauses: list[frozenset[str]]  # the messages' clauses (split at ". ", ": ", " - ", "|")
    # Per message: its adjacent word pairs, less those both of whose words ordinary output has.
    pairs: list[frozenset[tuple[str, str]]]
    clause_ordinary: list[frozenset[str]]  # per clause: its words an ordinary message has
    message_words: frozenset[str]  # the words of all its messages
    weights: _Memo  # idf, remembered for this lookup
    ordinary_terms: frozenset[str] | set[str] = frozenset()  # the closest background document's
    unusual: set[str] = field(default_factory=set)  # error terms that document lacks
    unusual_info: float = 0.0
    # The same by term id (terms the index knows): what the verifier's measures compare.
    ids: dict[str, int] = field(default_factory=dict)
    error_ids: set[int] = field(default_factory=set)
    all_ids: set[int] = field(default_factory=set)
    ordinary_ids: set[int] = field(default_factory=set)
    unusual_ids: set[int] = field(default_factory=set)
    id_weights: dict[int, float] = field(default_factory=dict)
    finding_ids: dict[int, set[int]] = field(default_factory=dict)
    queries: Sequence[Query] = ()

    @classmethod
    def of(cls, queries: Sequence[Query], index: SignatureIndex) -> _Paste:
        errors = tuple(dict.fromkeys(t for q in queries for t in q.terms))
        context = tuple(dict.fromkeys(t for q in queries for t in q.context_terms))
        all_terms = set(errors) | set(context)
        idf = index.retrieval.idf_of(all_terms)
        fingerprints = [(q.fingerprint, False) for q in queries if q.fingerprint]
        fingerprints += [(q.previous_fingerprint, True) for q in queries if q.previous_fingerprint]
        texts = [index.message_form(q.message or q.template) for q in queries]
        read = [(words, _word_pairs(t)) for t in texts if (words := _template_words(t))]
        # Free text: all of it, its words in the order written.
        read = read or [(frozenset(errors), frozenset(pairwise(errors)))]
        messages = [words for words, _ in read]
        ordinary = [index.explained_by_ordinary(m) for m in messages]
        unusual_pairs = [
            frozenset(p for p in pairs if not (p[0] in words and p[1] in words))
            for (_, pairs), words in zip(read, ordinary, strict=True)
        ]
        known = index.retrieval.term_id
        ids = {t: i for t in all_terms if (i := known(t)) is not None}
        clauses = [
            words
            for q in queries
            for part in _CLAUSE.split(index.message_form(q.message or q.template))
            if (words := _template_words(part))
        ]
        return cls(
            error_terms=errors,
            context_terms=context,
            error_set=set(errors),
            all_terms=all_terms,
            idf=idf,
            error_info=sum(idf[t] for t in errors),
            fingerprints=fingerprints,
            framed_fingerprints={
                fp
                for q in queries
                if q.key_frames
                for fp in (q.fingerprint, q.previous_fingerprint)
                if fp
            },
            template_keys={q.template_key for q in queries if q.template_key},
            messages=messages,
            functions={f.rsplit(":", 1)[-1] for q in queries for f in q.key_frames},
            ordinary=ordinary,
            clauses=clauses,
            pairs=unusual_pairs,
            clause_ordinary=[index.explained_by_ordinary(m) for m in clauses],
            message_words=frozenset().union(*messages),
            weights=_Memo(index.weight),
            ids=ids,
            error_ids={ids[t] for t in errors if t in ids},
            all_ids=set(ids.values()),
            id_weights={i: idf[t] for t, i in ids.items()},
            queries=queries,
        )

    def ids_of(self, finding_id: int, retrieval: Bm25fIndex) -> set[int]:
        """The term ids of a finding's document."""
        found = self.finding_ids.get(finding_id)
        if found is None:
            found = self.finding_ids[finding_id] = set(retrieval.doc_term_ids(finding_id))
        return found

    def read_ordinary(self, ordinary_ids: Sequence[int], retrieval: Bm25fIndex) -> None:
        """The closest ordinary document's terms, by id, and what each weighs."""
        self.ordinary_ids = set(ordinary_ids)
        self.unusual_ids = self.error_ids - self.ordinary_ids
        new = [i for i in self.ordinary_ids if i not in self.id_weights]
        self.id_weights.update(zip(new, retrieval.idf_by_ids(new), strict=True))

    def entries(self, table: dict[str, set[int]]) -> set[int]:
        keys = {fp for fp, _ in self.fingerprints} | self.template_keys
        return {n for key in keys for n in table.get(key, ())}

    def framed_entries(self, table: dict[str, set[int]]) -> set[int]:
        return {n for key in self.framed_fingerprints for n in table.get(key, ())}

    def banned(self, split: dict[str, set[int]]) -> set[int]:
        return {f for fp, _ in self.fingerprints for f in split.get(fp, ())}


LAYER_PRECEDENCE = ("linked", "fingerprint", "template", "terms")
