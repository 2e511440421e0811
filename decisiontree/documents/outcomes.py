"""Judge what a change did from the words that report it ("did not help", "the crash is gone").

A sentence is cut into clauses (at punctuation and at "but", "though", ...). In each clause
the judge finds words of a few classes - remedies (help, fix), failures (crash, hang),
success (starts, serves), persistence (still, same), novelty (different, earlier),
comparatives and figures - and applies negation to the next few words, so "didn't help"
is no effect while "didn't crash" is a fix. Clauses then combine: a good one beside a bad
one is a partial fix ("starts, but decode is 30% slower"). Plans, advice and modals before
an action ("we should set", "upstream suggests pinning") make a proposal, not a result.

The word classes live in `data/outcome_words.toml`, each with the reason it is there.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum, auto
from functools import cache
from pathlib import Path
from typing import Any

from decisiontree.records import Outcome

WORDS_FILE = Path(__file__).with_name("data") / "outcome_words.toml"


class Signal(Enum):
    """What one clause says."""

    GOOD = auto()  # it helped
    PARTIAL = auto()  # it helped, within limits
    NO_EFFECT = auto()  # the problem is unchanged
    WORSE = auto()  # said to be worse outright
    COST = auto()  # a figure got worse ("30% slower", "latency doubled")
    NEW_PROBLEM = auto()  # a new or earlier failure
    PROBLEM = auto()  # a failure, said without saying whether it is new
    SHORTFALL = auto()  # short of the goal ("still far from the target")
    MASKED_GOOD = auto()  # a hoped-for result ("should have helped"); an ellipsis may judge it
    DID = auto()  # "it did" - repeats the masked verb
    DID_NOT = auto()  # "it didn't", "there was none"
    PROPOSED = auto()  # a change suggested or planned


_BAD = frozenset({Signal.NO_EFFECT, Signal.COST, Signal.NEW_PROBLEM, Signal.PROBLEM})


# -- the word classes ---------------------------------------------------------------------


def _inflect(verb: str) -> set[str]:
    """help -> helps, helped, helping; fix -> fixes; die -> dies, died; stop -> stopped."""
    forms = {verb, verb + "s", verb + "ed", verb + "ing"}
    if verb.endswith("e"):
        forms |= {verb + "d", verb[:-1] + "ing"}
    if verb.endswith(("x", "s", "sh", "ch")):
        forms.add(verb + "es")
    if re.fullmatch(r"[a-z]*[^aeiou][aeiou][bdgmnpt]", verb):
        forms |= {verb + verb[-1] + "ed", verb + verb[-1] + "ing"}
    return forms


@dataclass(frozen=True)
class Lexicon:
    version: int
    remedy: frozenset[str]
    remedy_nouns: frozenset[str]
    points_back: frozenset[str]  # phrasal cures with a pronoun between the parts
    gains: frozenset[str]
    nothing: frozenset[str]
    removal: frozenset[str]
    over: frozenset[str]  # idioms of a failure that is over, whatever is said to be over
    problem: frozenset[str]
    breakage: frozenset[str]
    success: frozenset[str]
    success_states: frozenset[str]
    persistence: frozenset[str]
    same: frozenset[str]
    same_nouns: frozenset[str]
    of_failure_only: frozenset[str]
    novelty: frozenset[str]
    trades: frozenset[str]
    better: frozenset[str]
    worse: frozenset[str]
    cost: frozenset[str]
    partial: frozenset[str]
    shortfall: frozenset[str]
    hopes: frozenset[str]
    negation: frozenset[str]
    negation_scope: int
    contrast: frozenset[str]
    hypothetical: frozenset[str]
    thoughts: frozenset[str]
    modals: frozenset[str]
    proposal_cues: frozenset[str]
    advice: frozenset[str]
    actions: frozenset[str]
    phrases: dict[str, tuple[tuple[str, ...], ...]]  # first word -> phrases, longest first
    metric: dict[str, Any]


def _joined(phrase: str) -> str:
    return phrase.replace(" ", "_")


def _forms(entries: Iterable[str]) -> set[str]:
    """Single words inflected; phrases kept whole (joined with _, as the tokens are)."""
    found: set[str] = set()
    for entry in entries:
        found |= {_joined(entry)} if " " in entry else _inflect(entry)
    return found


def _plain(entries: Iterable[str]) -> frozenset[str]:
    return frozenset(_joined(entry) for entry in entries)


# Pronouns that point back at what was just told ("fixed that", "sorted it out").
_BACK = frozenset({"that", "it", "this", "them", "those"})


def _phrasal(entries: Iterable[str], objects: Iterable[str] = ()) -> set[tuple[str, ...]]:
    """A verb and its particle, the verb inflected ("tip over" -> "tipped over"); with
    objects, also one between the parts ("sort out" -> "sorted it out")."""
    found: set[tuple[str, ...]] = set()
    for entry in entries:
        verb, *rest = entry.split()
        for form in _inflect(verb):
            found.add((form, *rest))
            found |= {(form, thing, *rest) for thing in objects}
    return found


@cache
def lexicon() -> Lexicon:
    data = tomllib.loads(WORDS_FILE.read_text(encoding="utf-8"))
    remedy, problem, success = data["remedy"], data["problem"], data["success"]
    persistence, proposal, negation = data["persistence"], data["proposal"], data["negation"]
    problem_verbs = [verb for verb in problem["verbs"] if " " not in verb]
    problem_phrasal = _phrasal(verb for verb in problem["verbs"] if " " in verb)
    cures_phrasal = _phrasal(remedy["phrasal"], _BACK)
    phrase_lists = [
        remedy["irregular"],
        problem["irregular"],
        success["irregular"],
        persistence["phrases"],
        persistence["idioms"],
        data["removal"]["idioms"],
        data["partial"]["phrases"],
        negation["phrases"],
        data["hypothetical"]["counterfactual"],
        proposal["phrases"],
        data["metric"]["up_words"],
        data["metric"]["down_words"],
    ]
    phrases: dict[str, list[tuple[str, ...]]] = {}
    split = [tuple(e.split()) for group in phrase_lists for e in group if " " in e]
    for words in [*split, *problem_phrasal, *cures_phrasal]:
        phrases.setdefault(words[0], []).append(words)
    return Lexicon(
        version=int(data["version"]),
        remedy=frozenset(_forms(remedy["verbs"]) | _forms(remedy["irregular"]))
        | {"_".join(words) for words in cures_phrasal},
        remedy_nouns=frozenset(remedy["nouns"]) | {"anything", "avail"},
        points_back=frozenset("_".join(words) for words in cures_phrasal if len(words) > 2),
        gains=frozenset(_forms(remedy["gains"])) | frozenset(remedy["gains_irregular"]),
        nothing=frozenset(remedy["nothing"]),
        removal=frozenset(data["removal"]["words"]),
        over=_plain(data["removal"]["idioms"]),
        problem=frozenset(
            _forms(problem_verbs)
            | {"_".join(words) for words in problem_phrasal}
            | _plain(problem["irregular"])
            | set(problem["nouns"])
        ),
        breakage=frozenset(data["breakage"]["words"]),
        success=frozenset(_forms(success["verbs"]) | _plain(success["irregular"])),
        success_states=frozenset(success["states"]),
        persistence=frozenset(persistence["words"])
        | frozenset(persistence["same"])
        | _plain(persistence["phrases"])
        | _plain(persistence["idioms"]),
        same=frozenset(persistence["same"]),
        same_nouns=frozenset(persistence["same_nouns"]),
        of_failure_only=frozenset(persistence["of_failure_only"]),
        novelty=frozenset(data["novelty"]["words"]) | {"moved", "changed"},
        trades=frozenset(_forms(data["novelty"]["trades"])),
        better=frozenset(data["better"]["words"]),
        worse=frozenset(data["worse"]["words"]),
        cost=frozenset(data["cost"]["words"]),
        partial=frozenset(data["partial"]["words"]) | _plain(data["partial"]["phrases"]),
        shortfall=frozenset(data["shortfall"]["words"]),
        hopes=frozenset(data["hope"]["words"]),
        negation=frozenset(negation["words"]) | _plain(negation["phrases"]),
        negation_scope=int(negation["scope"]),
        contrast=frozenset(data["contrast"]["words"]),
        hypothetical=frozenset(data["hypothetical"]["words"])
        | _plain(data["hypothetical"]["counterfactual"]),
        thoughts=frozenset(data["hypothetical"]["thoughts"]),
        modals=frozenset(proposal["modals"]) | {"let_me", "let's", "lets_try"},
        proposal_cues=frozenset(proposal["cues"])
        | _plain(p for p in proposal["phrases"] if p not in ("let me", "let's", "lets try")),
        advice=frozenset(_forms(proposal["advice"])) | frozenset(proposal["advice_irregular"]),
        actions=frozenset(_forms(proposal["actions"])),
        phrases={k: tuple(sorted(v, key=len, reverse=True)) for k, v in phrases.items()},
        metric=data["metric"],
    )


# -- tokens and clauses -------------------------------------------------------------------

_CONTRACTIONS = (
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\bcan't\b"), "can not"),
    (re.compile(r"\bshan't\b"), "shall not"),
    (re.compile(r"n't\b"), " not"),
    (re.compile(r"'ll\b"), " will"),
    (re.compile(r"'ve\b"), " have"),
    (re.compile(r"'re\b"), " are"),
    (re.compile(r"'m\b"), " am"),
    (re.compile(r"'d\b"), " would"),
    (re.compile(r"(?<=[a-z])'s\b"), ""),
)
_TOKEN = re.compile(
    r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|[a-z][a-z0-9_-]*(?:/[a-z]+)?|%"
    r"|->|\u2192|[;:,.!?\u2014\u2013()]|(?<=\s)-(?=\s)"
)
_BREAKS = frozenset({";", ":", ",", ".", "!", "?", "\u2014", "\u2013", "-", "(", ")"})


# Names are not verdict words: code spans, flags, paths, NAME=value, file and package names.
_NAMES = re.compile(
    r"`[^`]*`|\w+\(\)|(?<!\S)--?[a-z][\w.-]*(?:=\S+)?|[^\s,;:!?()]*(?:[=_]|[a-z]\.\w|\w\.[a-z]|\d\.\d+\.\d)[^\s,;:!?()]*"
    r"|(?<![\w/])(?!(?:tok|tokens?|req|it)/s\b)[\w.~-]*/[\w./~-]*",
    re.IGNORECASE,
)


def tokens(text: str) -> list[str]:
    text = _NAMES.sub(" x ", text.replace("\u2019", "'"))
    text = text.lower().replace("*", "")
    text = text.replace("cannot", "can not")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return _merge_phrases(_TOKEN.findall(text), lexicon())


def _merge_phrases(words: list[str], lex: Lexicon) -> list[str]:
    merged: list[str] = []
    i = 0
    while i < len(words):
        for phrase in lex.phrases.get(words[i], ()):
            if tuple(words[i : i + len(phrase)]) == phrase:
                merged.append("_".join(phrase))
                i += len(phrase)
                break
        else:
            merged.append(words[i])
            i += 1
    return merged


@dataclass(frozen=True)
class Clause:
    words: tuple[str, ...]
    contrast: bool  # opened by "but", "though", ...


def clauses(words: Sequence[str], lex: Lexicon) -> list[Clause]:
    found: list[Clause] = []
    current: list[str] = []
    contrast = False
    for word in [*words, "."]:
        if word in _BREAKS or word in lex.contrast:
            if current:
                found.append(Clause(tuple(current), contrast))
            current, contrast = [], (word in lex.contrast) or (contrast and not current)
            continue
        current.append(word)
    return found


# -- one clause ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reading:
    """A clause with its negated and masked words marked."""

    words: tuple[str, ...]
    negated: frozenset[int]
    masked: frozenset[int]  # in a belief, hope, question, purpose or condition
    lex: Lexicon

    def live(self, group: frozenset[str]) -> list[int]:
        return [i for i, w in enumerate(self.words) if w in group and i not in self.masked]

    def has(self, group: frozenset[str]) -> bool:
        return bool(self.live(group))


_CAUSATIVE = frozenset({"got", "get", "gets", "getting", "made", "make", "enough", "able"})
_TEMPORAL = frozenset({"after", "before", "during", "while", "when", "at", "for", "of", "to"})


def _read(words: tuple[str, ...], lex: Lexicon) -> _Reading:
    negated: set[int] = set()
    masked: set[int] = set()
    for i, word in enumerate(words):
        if word in lex.negation and not (word == "not" and words[i + 1 : i + 2] == ("only",)):
            negated |= set(range(i + 1, min(len(words), i + 1 + lex.negation_scope)))
        if word in lex.hypothetical:
            masked |= set(range(i + 1, len(words)))
        if (word == "to" or word.endswith("_to")) and not _causative(words[:i]):
            masked.add(i + 1)  # "waited for it to load": a purpose, not a result
        if word in lex.modals and not _negated_or_perfect(words, i, lex):
            if word == "can" and words[i + 1 : i + 2] and words[i + 1] in lex.success:
                continue  # "we can serve again": what the change made possible, now
            # "the crash would be the same": an expectation; nothing after it is a result.
            masked |= set(range(i + 1, len(words)))
    return _Reading(words, frozenset(negated), frozenset(masked), lex)


def _causative(before: Sequence[str]) -> bool:
    """ "got it to load", "enough to start" make the verb after "to" a result; "long
    enough for the model to load" is a length of time, not a cause."""
    found = _CAUSATIVE & set(before)
    if found == {"enough"} and "long" in before:
        return False
    return bool(found)


_EXPECTING = frozenset({"would", "might", "may", "will", "shall"})


def _expects(reading: _Reading) -> bool:
    """ "The crash would be the same": a clause that expects, about anything in it."""
    words, lex = reading.words, reading.lex
    return any(
        w in _EXPECTING and not _negated_or_perfect(words, i, lex) for i, w in enumerate(words)
    )


def _negated_or_perfect(words: tuple[str, ...], i: int, lex: Lexicon) -> bool:
    after = words[i + 1 : i + 2]
    return bool(after) and (after[0] in lex.negation or after[0] == "have")


def judge_clause(clause: Clause, lex: Lexicon | None = None) -> Signal | None:
    lex = lex or lexicon()
    reading = _read(clause.words, lex)
    found = _ellipsis(clause.words) or (None if _expects(reading) else _result(reading, clause))
    if found is not None:
        return found
    if _proposes(reading):
        return Signal.PROPOSED
    if reading.masked and (_good_words(reading, masked=True) or _any_in(clause.words, lex.better)):
        return Signal.MASKED_GOOD
    if reading.masked and _past_hope(reading) and not _any_in(clause.words, lex.problem):
        return Signal.MASKED_GOOD  # "the hope was that X would keep us under the limit"
    return None


def _past_hope(reading: _Reading) -> bool:
    """ "we hoped", "I expected", "was meant to", "the hope was": a hope told in the past is
    what was expected then, not a plan ("we hope the updated driver will fix it" is one).
    Inside a question, a relative clause or after a modal ("what X was supposed to buy") it
    is not told as a hope."""
    words = reading.words
    for i, word in enumerate(words):
        if word not in reading.lex.hopes or i in reading.masked:
            continue
        beside = {*words[i - 1 : i], *words[i + 1 : i + 2]}
        if _past_tense((word,)) or beside & _PAST:
            return True
    return False


def _any_in(words: Iterable[str], group: frozenset[str]) -> bool:
    return any(word in group for word in words)


def _ellipsis(words: tuple[str, ...]) -> Signal | None:
    """ "It did." / "but it didn't" / "there was none": the verb is the one before."""
    core = [w for w in words if w not in ("but", "yet", "and", "sadly", "unfortunately")]
    pronoun = 2 <= len(core) <= 3 and core[0] in ("it", "that", "this", "they")
    if pronoun and core[1] in ("did", "does", "do") and core[2:] in ([], ["not"]):
        return Signal.DID_NOT if core[2:] else Signal.DID
    if core[:2] in (["there", "was"], ["there", "were"]) and core[2:] in (["none"], ["nothing"]):
        return Signal.DID_NOT
    return None


def _good_words(reading: _Reading, *, masked: bool = False) -> bool:
    lex = reading.lex
    group = lex.remedy | lex.success | lex.removal  # "expected X to stop the errors"
    return any(
        w in group and (masked == (i in reading.masked)) for i, w in enumerate(reading.words)
    )


def _result(reading: _Reading, clause: Clause) -> Signal | None:
    lex = reading.lex
    for judge in (_breakage, _remedy, _removal, _problem, _success, _figures):
        found = judge(reading)
        if found is not None:
            return _limited(found, reading, clause)
    worse = reading.live(lex.worse)
    if worse:  # "worse than the H200 box" compares a figure; "made it worse" is a verdict
        return (
            Signal.COST if reading.words[worse[0] + 1 : worse[0] + 2] == ("than",) else Signal.WORSE
        )
    if reading.has(lex.cost):
        return Signal.COST
    better = reading.live(lex.better)
    if better:
        if better[0] in reading.negated:
            return Signal.NO_EFFECT  # "nothing improved"
        return _limited(Signal.GOOD, reading, clause)
    if reading.has(lex.partial):
        return Signal.PARTIAL
    if _unchanged(reading):
        return Signal.NO_EFFECT
    return _shortfall(reading, clause)


def _unchanged(reading: _Reading) -> bool:
    """ "unchanged", "same result", "nothing changed", "stayed at 310 tok/s"."""
    lex, words = reading.lex, reading.words
    alone = lex.persistence - lex.same - lex.of_failure_only
    if reading.has(alone):
        return True
    if any(words[i + 1 : i + 2] and words[i + 1] in lex.same_nouns for i in reading.live(lex.same)):
        return True
    # "stayed at 310 tok/s" is a figure of merit; "attention stays TP 4" is a setting.
    stayed = reading.has(frozenset({"stayed", "stays"})) and _has_figure(words)
    return stayed and _higher_is_better(words, None, reading.lex.metric) is not None


def _limited(found: Signal, reading: _Reading, clause: Clause) -> Signal:
    """A success said with a limiting word ("helped a bit", "mitigates") is partial."""
    if found is Signal.GOOD and reading.has(reading.lex.partial):
        return Signal.PARTIAL
    return found


def _part_of(words: Sequence[str]) -> bool:
    """ "recovered to about 80% of the old number": short of what it was."""
    return any(
        _NUMBER.match(w)
        and tuple(words[i + 1 : i + 3]) == ("%", "of")
        and float(w.replace(",", "")) < 100
        for i, w in enumerate(words)
    )


def _shortfall(reading: _Reading, clause: Clause) -> Signal | None:
    words, lex = reading.words, reading.lex
    still = "still" in words and _any_in(words, lex.shortfall)
    unmet_hope = bool(reading.negated) and _any_in(words, lex.hopes)
    only = clause.contrast and "only" in words
    return Signal.SHORTFALL if still or unmet_hope or only else None


def _breakage(reading: _Reading) -> Signal | None:
    hits = reading.live(reading.lex.breakage)
    if not hits:
        return None
    return Signal.GOOD if hits[0] in reading.negated else Signal.WORSE


def _remedy(reading: _Reading) -> Signal | None:
    """ "helped", "fixed it", "no effect", "zero difference": the verb says it all."""
    lex = reading.lex
    hits = [
        i
        for i in reading.live(lex.remedy)
        if not _masked_by_purpose(reading, i) and not _named_not_reported(reading.words, i)
    ]
    nouns = [i for i in reading.live(lex.remedy_nouns) if i in reading.negated]
    if nouns or any(_gains_nothing(reading.words, i, lex) for i in reading.live(lex.gains)):
        return Signal.NO_EFFECT
    if not hits:
        return None
    return Signal.NO_EFFECT if hits[0] in reading.negated else Signal.GOOD


def _gains_nothing(words: tuple[str, ...], i: int, lex: Lexicon) -> bool:
    """ "bought us nothing", "gained nothing", "got us nowhere": a gain whose object is none."""
    after = list(words[i + 1 : i + 3])
    if after[:1] and after[0] in _OBJECTS:
        after = after[1:]
    return bool(after) and after[0] in lex.nothing


_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "real", "proper", "our", "my"})
_PREPOSITIONS = frozenset({"for", "with", "of", "about", "from", "in", "on"})
_NOUN_LIKE = frozenset({"fix", "cure", "remedy", "help", "work", "fixes"})
_COPULAS = frozenset({"was", "is", "be", "been", "are", "were"})


def _named_not_reported(words: tuple[str, ...], i: int) -> bool:
    """ "the fix didn't land" names a fix; "that was the fix" reports one."""
    before = set(words[max(0, i - 3) : i])
    if i == 0 or words[i] not in _NOUN_LIKE or not (_DETERMINERS | _PREPOSITIONS) & before:
        return False
    return not _COPULAS & before


def _masked_by_purpose(reading: _Reading, i: int) -> bool:
    return i > 0 and reading.words[i - 1] in ("to", "of")


def _removal(reading: _Reading) -> Signal | None:
    """ "the crash is gone", "stopped crashing"; "didn't make the NaNs go away"."""
    hits = [
        i
        for i in reading.live(reading.lex.removal)
        if reading.words[i] != "away" or reading.words[i - 1] in ("go", "goes", "went", "gone")
    ]
    if reading.has(reading.lex.over):
        return Signal.GOOD  # "the illegal memory access is history"
    about = reading.lex.problem | {"it", "they", "this", "that"}
    if not hits or not _any_in(reading.words, about):
        return None
    # "didn't make the NaNs go away": the negator sits before the verb that governs "away".
    negated = hits[0] in reading.negated or _any_in(reading.words[: hits[0]], reading.lex.negation)
    return Signal.NO_EFFECT if negated else Signal.GOOD


_ADJECTIVE_BEFORE = frozenset({"the", "a", "an", "its", "their", "our", "my", "his", "her", "this"})


def _problem(reading: _Reading) -> Signal | None:
    lex, words = reading.lex, reading.words
    # "its failed patch", "the crashed server": a past form after a determiner describes
    # the noun after it; it does not report a failure.
    hits = [
        i
        for i in reading.live(lex.problem)
        if not (words[i].endswith("ed") and i > 0 and words[i - 1] in _ADJECTIVE_BEFORE)
    ]
    # "a device-side assert, not an out-of-memory error": which failure it is, not its end.
    hits = [i for i in hits if not _ruled_out_kind(reading, i)]
    if not hits:
        return None
    if any(i in reading.negated for i in hits):
        return Signal.GOOD  # "no errors", "didn't crash", "no longer hangs"
    if _any_in(words, lex.persistence) or {"did_nothing", "does_nothing"} & set(words):
        return Signal.NO_EFFECT
    if ("now" in words and "only" in words) or _any_in(words, lex.partial):
        return Signal.PARTIAL  # "the crash now happens only under load", "fewer timeouts"
    if reading.has(lex.better):
        return Signal.PARTIAL  # "made the hangs rarer": less often, still there
    if _any_in(words, lex.novelty) or _trades_failure(words, lex):
        return Signal.NEW_PROBLEM
    return Signal.PROBLEM


def _trades_failure(words: tuple[str, ...], lex: Lexicon) -> bool:
    """ "traded the OOM for a segfault", "swapped it for": what is given up is a failure."""
    for i in (k for k, word in enumerate(words) if word in lex.trades):
        given = list(words[i + 1 : i + 3])
        if given[:1] and given[0] in _ADJECTIVE_BEFORE:
            given = given[1:]
        if given[:1] and given[0] in lex.problem | _BACK:
            return True
    return False


_ENDED = frozenset({"anymore", "longer", "again", "more", "after", "since", "now"})


def _ruled_out_kind(reading: _Reading, i: int) -> bool:
    """ "not a/an X": a kind of failure ruled out, unless it is over ("not an issue anymore")."""
    words = reading.words
    if i not in reading.negated or _ENDED & set(words):
        return False
    before = [k for k in range(max(0, i - reading.lex.negation_scope), i) if words[k] == "not"]
    return bool(before) and words[before[-1] + 1 : before[-1] + 2] in (("a",), ("an",))


_THROUGH = frozenset({"went_through", "goes_through", "go_through", "gone_through"})
_AFTER_SUCCESS = frozenset({"without", "now", "this", "finally", "again", "then", "at"})


def _route(words: tuple[str, ...], i: int, lex: Lexicon) -> bool:
    """ "decode still went through FlashMLA" is the path it took; "it went through" and
    "went through without errors" are a success."""
    after = words[i + 1 : i + 2]
    return (
        words[i] in _THROUGH and bool(after) and after[0] not in lex.success_states | _AFTER_SUCCESS
    )


def _noun_use(words: tuple[str, ...], i: int, lex: Lexicon) -> bool:
    """ "the quick start page", "a load test": a bare verb after a determiner (or after a
    determiner and a word that cannot be its plural subject: "the workers start" is a verb)
    and before another noun names a thing; it reports nothing. As the head of its phrase
    ("got a clean start", "a clean start on every rank") it still tells what happened."""
    word = words[i]
    if i == 0 or not ({word + "s", word + "es"} & lex.success):
        return False  # only the bare form: "starts", "started" are verbs wherever they stand
    nxt = words[i + 1] if i + 1 < len(words) else ""
    modifies = nxt.isalpha() and not (
        nxt in _FUNCTION_WORDS or nxt.endswith("ly") or nxt in lex.success_states
    )
    if not modifies:
        return False
    if words[i - 1] in _ADJECTIVE_BEFORE:
        return True
    between = words[i - 1]
    subject_like = between.endswith("s") or between in lex.modals | lex.negation | _FUNCTION_WORDS
    return i > 1 and words[i - 2] in _ADJECTIVE_BEFORE and not subject_like


# Closed-class words (prepositions, conjunctions, adverbs of time, auxiliaries): a word after
# a verb or noun that starts no compound ("start on every rank", "start now").
_FUNCTION_WORDS = frozenset(
    {
        "about", "across", "after", "against", "along", "and", "around", "as", "at", "before",
        "behind", "between", "by", "during", "for", "from", "in", "inside", "into", "like",
        "near", "of", "off", "on", "onto", "or", "out", "over", "past", "since", "than",
        "then", "through", "to", "toward", "towards", "under", "until", "up", "upon", "with",
        "within", "without", "now", "again", "here", "there", "so", "too", "also", "just",
        "only", "still", "yet", "do", "does", "did",
    }
)  # fmt: skip


def _success(reading: _Reading) -> Signal | None:
    lex, words = reading.lex, reading.words
    hits = [
        i
        for i in reading.live(lex.success | lex.success_states)
        if not (words[i].endswith("ing") and i > 0 and words[i - 1] in _TEMPORAL)
        and not (words[i].endswith("ing") and words[i] in lex.success and "_" not in words[i])
        and not _route(words, i, lex)
        and not _noun_use(words, i, lex)
    ]
    if not hits:
        return None
    if hits[0] not in reading.negated:
        return Signal.GOOD
    if _any_in(words, lex.persistence):
        return Signal.NO_EFFECT  # "still doesn't start"
    if {"even", "now"} & set(words):
        return Signal.NEW_PROBLEM  # "now it doesn't even start"
    return Signal.PROBLEM


# -- figures ------------------------------------------------------------------------------

_NUMBER = re.compile(r"^\d[\d,]*(?:\.\d+)?$")
_TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "secs": 1000.0, "second": 1000.0}
_TO_MS |= {"seconds": 1000.0, "min": 60000.0, "mins": 60000.0, "minute": 60000.0}
_TO_MS |= {"minutes": 60000.0}


def _has_figure(words: Sequence[str]) -> bool:
    return any(_NUMBER.match(w) for w in words)


def _figures(reading: _Reading) -> Signal | None:
    """ "from 40 to 95 tok/s", "30 seconds instead of 2", "latency doubled"."""
    words, metric = reading.words, reading.lex.metric
    pair = _figure_pair(words)
    higher = _higher_is_better(words, pair[2] if pair else None, metric)
    if higher is None:
        return None
    if pair is not None:
        before, after, _ = pair
        if abs(after - before) <= float(metric["same_within"]) * abs(before):
            return Signal.NO_EFFECT
        return Signal.GOOD if (after > before) == higher else Signal.COST
    # Only words said of the figure, not an action in a purpose ("to lower the memory").
    ups = reading.has(_plain(metric["up_words"]))
    downs = reading.has(_plain(metric["down_words"]))
    if ups == downs:
        return None
    return Signal.GOOD if ups == higher else Signal.COST


def _figure_pair(words: Sequence[str]) -> tuple[float, float, str | None] | None:
    """(before, after, unit) of "from A to B", "A -> B" or "B instead of A"."""
    for i, word in enumerate(words):
        if not _NUMBER.match(word):
            continue
        first, unit_a, k = _value(words, i)
        joiner = list(words[k : k + 2])
        arrow = joiner[:1] in (["to"], ["->"], ["\u2192"])
        arrow = arrow and ((i > 0 and words[i - 1] == "from") or joiner[0] != "to")
        if arrow and k + 1 < len(words) and _NUMBER.match(words[k + 1]):
            second, unit_b, _ = _value(words, k + 1)
            return _same_unit(first, unit_a, second, unit_b)
        if joiner == ["instead", "of"] and k + 2 < len(words) and _NUMBER.match(words[k + 2]):
            second, unit_b, _ = _value(words, k + 2)
            before, after, unit = _same_unit(second, unit_b, first, unit_a)
            return before, after, unit
    return None


def _value(words: Sequence[str], i: int) -> tuple[float, str | None, int]:
    number = float(words[i].replace(",", ""))
    unit = words[i + 1] if i + 1 < len(words) and not _NUMBER.match(words[i + 1]) else None
    known = unit in _TO_MS or unit in ("tok/s", "tokens/s", "tps", "%", "gb", "gib", "mb", "mib")
    return number, unit if known else None, i + 2 if known else i + 1


def _same_unit(
    a: float, unit_a: str | None, b: float, unit_b: str | None
) -> tuple[float, float, str | None]:
    if unit_a in _TO_MS and unit_b in _TO_MS:
        return a * _TO_MS[unit_a], b * _TO_MS[unit_b], "ms"
    return a, b, unit_b or unit_a


def _higher_is_better(
    words: Sequence[str], unit: str | None, metric: dict[str, Any]
) -> bool | None:
    if unit in metric["higher_units"]:
        return True
    if unit in metric["lower_units"] or unit in _TO_MS:
        return False
    if _any_in(words, frozenset(metric["higher_words"])):
        return True
    if _any_in(words, frozenset(metric["lower_words"])):
        return False
    return None


# -- proposals ----------------------------------------------------------------------------


def _proposes(reading: _Reading) -> bool:
    lex, words = reading.lex, reading.words
    cues = lex.proposal_cues - ({"next"} if _past_tense(words) else set())
    if _any_in(words, cues):
        return True
    for i, word in enumerate(words):
        ahead = words[i + 1 : i + 4]
        modal = word in lex.modals and not _negated_or_perfect(words, i, lex)
        if modal and not _past_hope(reading) and _any_in(ahead, lex.actions | lex.remedy):
            return True
        wanted = [w for w in words[i + 1 : i + 5] if w not in _OBJECTS][:2]
        if word in lex.advice and any(
            w in lex.actions or (w.endswith("ing") and len(w) > 5) for w in wanted
        ):
            return True  # "suggests pinning", "asked us to retry with"
    return False


_OBJECTS = frozenset({"us", "me", "them", "him", "her", "you", "to", "everyone"})
_PAST = frozenset({"was", "were", "did", "had", "went", "got", "came", "ran", "took", "made"})


def _past_tense(words: Sequence[str]) -> bool:
    return any(w in _PAST or (w.endswith("ed") and len(w) > 4) for w in words)


# -- the sentence -------------------------------------------------------------------------

_UNTESTED = frozenset(
    {
        "have_not_tried",
        "has_not_tried",
        "not_tried",
        "not_yet_tried",
        "untested",
        "people_report",
        "others_report",
        "users_report",
        "docs_say",
        "reportedly",
    }
)


def clause_signals(sentence: str) -> list[tuple[Clause, Signal | None]]:
    lex = lexicon()
    return [(clause, judge_clause(clause, lex)) for clause in clauses(tokens(sentence), lex)]


def judge_outcome(sentence: str) -> Outcome | None:
    """The outcome a sentence reports for the change it mentions, or None when it reports none."""
    judged = clause_signals(sentence)
    signals = [signal for _, signal in judged]
    # "It OOMed during capture; lowering X cured that": the failure a later cure points back
    # to is the problem it ended, not one left over.
    lex = lexicon()
    for k, (_, signal) in enumerate(judged):
        if signal is Signal.PROBLEM and any(
            later is Signal.GOOD
            and not clause.contrast
            and _cures_it(clause.words, lex, told=judged[k][0].words)
            for clause, later in judged[k + 1 :]
        ):
            signals[k] = None
    if _part_of(tokens(sentence)):
        signals.append(Signal.SHORTFALL)  # better, yet short of what it was
    # "Works, but <anything>": what follows a success after "but" is a caveat.
    after_good = False
    for clause, signal in judged:
        if clause.contrast and after_good and signal in (None, Signal.GOOD):
            signals.append(Signal.SHORTFALL)
        after_good = after_good or signal is Signal.GOOD
    return combine(signals, tokens(sentence))


_NAMING_BACK = frozenset({"the", "our", "that", "this", "those", "these"})


_PASSIVE = _COPULAS | {"got", "gets"}  # "was fixed", "got solved"


def _cures_it(words: Sequence[str], lex: Lexicon, told: Sequence[str] = ()) -> bool:
    """ "fixed that", "cured it", "solved this", "sorted that out": a remedy whose object is
    what was just told (`told`); so is an object that names a failure ("fixed the crash",
    "cured the OOM") or whose noun phrase holds the failure told ("fixed the capture crash"
    after "it crashed at capture"), and the subject of a passive ("that was fixed by", "the
    OOM got solved", "; fixed by X")."""
    for i, word in enumerate(words):
        if word not in lex.remedy:
            continue
        if word in lex.points_back:
            return True
        after, before = words[i + 1 : i + 3], words[max(0, i - 2) : i]
        if after[:1] and after[0] in _BACK:
            return True
        if len(after) == 2 and after[0] in _NAMING_BACK and after[1] in lex.problem:
            return True
        if after[:1] and after[0] in _NAMING_BACK and _names_failure(words[i + 2 :], told, lex):
            return True
        if len(before) == 2 and before[1] in _PASSIVE and (before[0] in _BACK | lex.problem):
            return True
        if after[:1] == ("by",):
            return True  # "; solved by X": a passive whose subject, said or not, was told
    return False


def _names_failure(phrase: Sequence[str], told: Sequence[str], lex: Lexicon) -> bool:
    """A noun phrase (its words up to the first closed-class word) holds a failure word of
    the clause told: "the sampler index error" after "crashed with an index error"."""
    named: set[str] = set()
    for word in phrase:
        if word in _FUNCTION_WORDS or word in _BACK:
            break
        named |= _stems(word)
    return any(word in lex.problem and _stems(word) & named for word in told)


def _stems(word: str) -> set[str]:
    """The word and the word without an inflection: "errors" -> error; "crashed" -> crash."""
    found = {word}
    for suffix in ("s", "es", "ed", "ing"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            found.add(word[: -len(suffix)])
    return found


def combine(signals: Sequence[Signal | None], words: Sequence[str] = ()) -> Outcome | None:
    """One verdict from the clauses' signals."""
    found = _resolve_ellipses(signals)
    if _UNTESTED & set(words):
        return Outcome.PROPOSED  # "haven't tried it yet, but the docs say X avoids this"
    good = Signal.GOOD in found
    said_partial = Signal.PARTIAL in found
    failed = {Signal.NEW_PROBLEM, Signal.PROBLEM} & found
    if Signal.WORSE in found and (good or said_partial) and not failed:
        return Outcome.PARTIAL  # "works; fine for throughput, worse for long contexts": a trade
    if Signal.WORSE in found or Signal.NEW_PROBLEM in found:
        return Outcome.WORSE  # a new failure after a change is worse for the one it was tried on
    if Signal.PARTIAL in found or (good and (_BAD | {Signal.SHORTFALL}) & found):
        return Outcome.PARTIAL
    if Signal.NEW_PROBLEM in found or Signal.COST in found:
        return Outcome.WORSE
    if Signal.NO_EFFECT in found or Signal.SHORTFALL in found:
        return Outcome.NO_EFFECT
    if good:
        return Outcome.RESOLVES
    if Signal.PROPOSED in found:
        return Outcome.PROPOSED
    return None


def _resolve_ellipses(signals: Sequence[Signal | None]) -> set[Signal]:
    found: set[Signal] = set()
    hoped = False
    for signal in signals:
        if signal is Signal.MASKED_GOOD:
            hoped = True
        elif signal is Signal.DID and hoped:
            found.add(Signal.GOOD)
        elif signal is Signal.DID_NOT and hoped:
            found.add(Signal.NO_EFFECT)
        elif signal is not None and signal not in (Signal.DID, Signal.DID_NOT):
            found.add(signal)
    return found


# -- FINDINGS.md's bracket override ---------------------------------------------------------

_BRACKET_OUTCOME = re.compile(r"\[\s*([a-z _-]{3,20})\s*\]\s*$", re.IGNORECASE)
_OUTCOME_WORDS = {
    "resolves": Outcome.RESOLVES,
    "resolved": Outcome.RESOLVES,
    "fixes": Outcome.RESOLVES,
    "fixed": Outcome.RESOLVES,
    "works": Outcome.RESOLVES,
    "partial": Outcome.PARTIAL,
    "partially": Outcome.PARTIAL,
    "no effect": Outcome.NO_EFFECT,
    "no_effect": Outcome.NO_EFFECT,
    "no-effect": Outcome.NO_EFFECT,
    "did not help": Outcome.NO_EFFECT,
    "worse": Outcome.WORSE,
    "made it worse": Outcome.WORSE,
    "proposed": Outcome.PROPOSED,
    "untested": Outcome.PROPOSED,
    "to try": Outcome.PROPOSED,
}


def split_bracket_outcome(text: str) -> tuple[str, Outcome | None]:
    """`--x 1 [partial]` -> ("--x 1", PARTIAL); the FINDINGS.md override syntax."""
    match = _BRACKET_OUTCOME.search(text)
    if not match:
        return text, None
    outcome = _OUTCOME_WORDS.get(" ".join(match.group(1).lower().split()))
    if outcome is None:
        return text, None
    return text[: match.start()].rstrip(), outcome
