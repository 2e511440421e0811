"""A write-up is a story of episodes: a symptom, the attempts made against it, the next symptom.

The walk reads events in document order - error blocks, sentences that name a failure,
attempts (a change and, when the text gives one, its outcome), verdicts - and keeps a
stack of open symptoms:

- an attempt belongs to the symptom its own sentence names, else to the open symptom on top;
- an attempt that resolves its symptom closes it, and the one below is open again
  ("that cured the OOM; then, for the decode crash, ...");
- a different failure right after attempts without a verdict makes them `worse` for their
  symptom, and the new failure starts the next episode with the launch then in force.

Symptoms are told apart by failure class (out of memory, device-side assert, NaN, hang,
slow, build error, exception type) and by the identifiers they name (`set_kv_buffer`,
`memory_pool.py`), so the same crash told twice - as a log block and in a sentence - is one.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from decisiontree.documents.changes import summarize
from decisiontree.documents.model import ExtractedFix
from decisiontree.records import Change, ChangeAction, Outcome

# Failure classes; a mention with none of them ("it died") is not a symptom of its own.
_CLASSES = (
    ("oom", re.compile(r"out[ -]of[ -]memory|\bOOM|OutOfMemory|ALLOC_FAILED", re.I)),
    ("device_assert", re.compile(r"device[- ]side assert", re.I)),
    ("nan", re.compile(r"\bNaNs?\b|\bInf\b|inf, nan|probability tensor", re.I)),
    ("hang", re.compile(r"\b(?:hangs?|hung|hanging|deadlock\w*|stuck|watchdog|timed out)\b", re.I)),
    (
        "slow",
        re.compile(
            r"\bslow(?:er|ly|down)?\b|bottleneck|\d+(?:\.\d+)?\s?% of (?:the )?(?:\w+ )?time"
            r"|\bthroughput (?:is|was) (?:low|poor|bad)\b",
            re.I,
        ),
    ),
    ("build", re.compile(r"static_assert|\bnvcc\b|ninja|build (?:failed|stop)|no kernel image", re.I)),  # noqa: E501
    ("illegal_access", re.compile(r"illegal memory access", re.I)),
    ("unrecognized", re.compile(r"unrecognized arguments|no such option|unknown argument", re.I)),
)  # fmt: skip
_EXCEPTION = re.compile(r"\b((?:[A-Z][a-z]+)+(?:Error|Exception))\b")
_GENERIC_EXCEPTIONS = frozenset({"RuntimeError", "Exception", "CudaError", "AcceleratorError"})
_IDENTIFIER = re.compile(
    r"(?<![\w.-])([a-z][a-z0-9]*(?:_[a-z0-9]+){2,}|[\w-]+\.(?:py|cuh?|cpp|h))(?![\w-])"
)
_COMMON_IDENTIFIERS = frozenset({"kv_cache_dtype", "mem_fraction_static"})


@dataclass(frozen=True)
class Symptom:
    """What tells one failure from another."""

    classes: frozenset[str]
    identifiers: frozenset[str]

    def same_as(self, other: Symptom) -> bool:
        if self.identifiers & other.identifiers:
            return True
        both_named = bool(self.identifiers and other.identifiers)
        shared = self.classes & other.classes
        if any(not c.startswith("exc:") for c in shared):
            return not both_named or bool(shared - {"slow"})
        return bool(shared) and not both_named


# "not an out-of-memory error", "rather than a hang": a failure named to rule it out. The
# negation stands right before the name, a few words at most, with no punctuation between.
_RULED_OUT = re.compile(
    r"(?:\b(?:not|no|never|rather than|instead of|without)|n't)\s+(?:[\w-]+\s+){0,3}$", re.I
)


def _said(pattern: re.Pattern[str], text: str) -> Iterable[re.Match[str]]:
    """Where the text names a failure, leaving out the places it rules it out."""
    # The 60 characters before each name, sliced as such: slicing the text up to the name
    # first copied the whole document at every name (minutes on a 5 MB error log).
    return (
        m
        for m in pattern.finditer(text)
        if not _RULED_OUT.search(text[max(0, m.start() - 60) : m.start()])
    )


def symptom_of(text: str) -> Symptom | None:
    classes = {name for name, pattern in _CLASSES if any(_said(pattern, text))}
    named = {m.group(1) for m in _said(_EXCEPTION, text)}
    classes |= {f"exc:{name}" for name in named - _GENERIC_EXCEPTIONS}
    if "device_assert" in classes:
        classes.discard("exc:AssertionError")  # the CUDA assert, not a Python assert
    if not classes:
        return None
    names = {m.group(1) for m in _IDENTIFIER.finditer(text)} - _COMMON_IDENTIFIERS
    return Symptom(frozenset(classes), frozenset(names))


def kind_of(symptom: Symptom) -> str:
    # An exception whose name says a class it is told with (`OutOfMemoryError` beside "out
    # of memory") is that failure by name, not a second one.
    classes = {
        c
        for c in symptom.classes
        if not (c.startswith("exc:") and _classes_named(c.removeprefix("exc:")) & symptom.classes)
    }
    for name, kind in (("oom", "oom"), ("hang", "hang"), ("slow", "slow")):
        if name in classes and len(classes - {"slow"}) <= 1:
            return kind
    return "crash"


def _classes_named(text: str) -> set[str]:
    return {name for name, pattern in _CLASSES if pattern.search(text)}


# A failure told only in words is titled as a log would put it: the failure, then the stage.
_CLASS_NAMES = {
    "oom": "Out of memory",
    "device_assert": "CUDA device-side assert",
    "nan": "NaN or Inf in the output",
    "hang": "Hang",
    "slow": "Slow",
    "build": "Build error",
    "illegal_access": "Illegal memory access",
    "unrecognized": "Unrecognized argument",
}
STAGES_FILE = Path(__file__).parent / "data" / "stages.toml"


@dataclass(frozen=True)
class Stage:
    name: str
    told: re.Pattern[str]
    log: str


@cache
def stages() -> tuple[Stage, ...]:
    data = tomllib.loads(STAGES_FILE.read_text(encoding="utf-8"))
    return tuple(
        Stage(entry["name"], re.compile(entry["told"], re.IGNORECASE), entry["log"])
        for entry in data["stage"]
    )


def told_headline(clause: str) -> str | None:
    """ "an out-of-memory condition during CUDA graph capture" -> "Out of memory while
    capturing CUDA graphs": the failure the clause names and the stage in a log's words;
    None when it names no failure or no stage we know."""
    symptom = symptom_of(clause)
    if symptom is None:
        return None
    named = [_CLASS_NAMES[name] for name, _ in _CLASSES if name in symptom.classes]
    named += sorted(c.removeprefix("exc:") for c in symptom.classes if c.startswith("exc:"))
    stage = next((s for s in stages() if _at_stage(s, clause)), None)
    if not named or stage is None:
        return None
    return f"{named[0]} while {stage.log}"


# "during graph capture", "while loading the weights": the stage is when the failure came,
# not a thing mentioned on the way ("sent a warm-up query").
_WHEN = re.compile(
    r"\b(?:during|while|at|in|on|when|before|after)\s+(?:(?:the|an?|its)\s+)?$", re.I
)


def _at_stage(stage: Stage, clause: str) -> bool:
    return any(_WHEN.search(clause[: m.start()][-40:]) for m in stage.told.finditer(clause))


# -- events -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One step of the story, at a place in the document (line, then order within it)."""

    at: tuple[int, int]
    symptom: Symptom | None = None  # a failure shown or named here
    sample: str | None = None  # an error block shown here
    fixes: tuple[ExtractedFix | PendingFix, ...] = ()  # attempts made here
    verdict: Outcome | None = None  # an outcome said without a change
    text: str = ""
    restates: bool = False  # a launch command: it says every setting, changed or not


@dataclass(frozen=True)
class PendingFix:
    """An attempt whose outcome the text has not said (yet)."""

    text: str
    changes: tuple[Change, ...]
    summary: str = ""


@dataclass
class Episode:
    symptom: Symptom
    samples: list[str] = field(default_factory=list)
    mentions: list[str] = field(default_factory=list)
    fixes: list[ExtractedFix] = field(default_factory=list)
    flags: dict[str, str | None] = field(default_factory=dict)
    first_line: int = 0


@dataclass
class _Walk:
    episodes: list[Episode]
    in_force: dict[str, str | None]
    open: list[int] = field(default_factory=list)  # episode indexes, top last
    pending: list[tuple[int, PendingFix]] = field(default_factory=list)
    # Attempts a later sentence called a success ("the server loaded again"), with no other
    # attempt since: a new failure right after them is what they led to.
    provisional: list[tuple[int, ExtractedFix]] = field(default_factory=list)
    # Attempts said to make things worse, with no other attempt since: the next new
    # failure is the worse thing they brought.
    worsened: list[tuple[int, ExtractedFix]] = field(default_factory=list)
    early: list[ExtractedFix | PendingFix] = field(default_factory=list)  # before any symptom

    @property
    def current(self) -> int | None:
        return self.open[-1] if self.open else None


def walk(events: Iterable[Event], baseline: dict[str, str | None]) -> list[Episode]:
    state = _Walk([], dict(baseline))
    for event in sorted(events, key=lambda e: e.at):
        _step(state, event)
    _settle_pending(state, None)
    if state.early:
        if not state.episodes:
            state.episodes.append(Episode(Symptom(frozenset({"unnamed"}), frozenset())))
        first = state.episodes[0]
        first.fixes[:0] = [f for f in state.early if isinstance(f, ExtractedFix)]
    return state.episodes


def _step(state: _Walk, event: Event) -> None:
    known = len(state.episodes)
    named = _episode_for(state, event.symptom, event.at[0], event.sample)
    if event.sample is not None and named is not None:
        state.episodes[named].samples.append(event.sample)
    elif event.symptom is not None and named is not None:
        state.episodes[named].mentions.append(event.text)
    # A failure shown, first named, or named as the result of pending attempts is what
    # happens now; naming a known one again in passing ("not the assert any more") is not.
    happens = event.sample is not None or named == known or bool(state.pending)
    if named is not None and named != state.current and not event.fixes and happens:
        _new_failure(state, named)
    if event.fixes:
        state.provisional, state.worsened = [], []
        target = named if named is not None else state.current
        for fix in event.fixes:
            _attempt(state, target, fix, restated=event.restates)
    elif event.verdict is not None and state.pending:
        _settle_pending(state, event.verdict)


def _episode_for(
    state: _Walk, symptom: Symptom | None, line: int, sample: str | None = None
) -> int | None:
    if symptom is None:
        return None
    alike = [
        index
        for index, episode in enumerate(state.episodes)
        if episode.symptom.same_as(symptom)
        # an error shown after its shown look-alike was cured is the next failure
        and not (sample is not None and _cured(episode) and sample not in episode.samples)
    ]
    if alike:
        # "the OOM was cured, then the device-side assert": a mention naming two known
        # failures is about the one it shares most with, and it joins neither to the other.
        index = max(alike, key=lambda i: (_shared(state.episodes[i].symptom, symptom), -i))
        if len(alike) == 1:
            episode = state.episodes[index]
            episode.symptom = Symptom(
                episode.symptom.classes | symptom.classes,
                episode.symptom.identifiers | symptom.identifiers,
            )
        return index
    state.episodes.append(Episode(symptom, flags=_flags_only(state.in_force), first_line=line))
    return len(state.episodes) - 1


def _shared(one: Symptom, other: Symptom) -> int:
    return 2 * len(one.identifiers & other.identifiers) + len(one.classes & other.classes)


def _cured(episode: Episode) -> bool:
    """An error shown, then cured (a summary's "X fixed it" cures nothing shown yet)."""
    return bool(episode.samples) and any(f.outcome is Outcome.RESOLVES for f in episode.fixes)


def _new_failure(state: _Walk, index: int) -> None:
    """A failure shown after attempts with no verdict yet, or with only a success said of
    them: they made it worse for theirs."""
    _overturn(state, index)
    for target, fix in state.worsened:
        if target != index:
            state.episodes[index].fixes.append(fix)
    state.worsened = []
    if state.pending and state.pending[-1][0] != index:
        brought = [fix for _, fix in state.pending]
        _settle_pending(state, Outcome.WORSE)
        state.episodes[index].flags = _flags_only(state.in_force)
        # The change that brought this failure is known not to help against it either.
        for change in brought:
            done = ExtractedFix(change.text, change.changes, Outcome.WORSE, summary=change.summary)
            state.episodes[index].fixes.append(done)
    if index in state.open:
        state.open.remove(index)
    state.open.append(index)


def _attempt(
    state: _Walk, target: int | None, fix: ExtractedFix | PendingFix, *, restated: bool = False
) -> None:
    """An attempt on its symptom. Settings already in force are not changes: an attempt
    that only says them again ("--x fp8 forces the NSA backend") is none, and a relaunch
    command's attempt is what it changes. A sentence that names a setting in force beside
    a new one ("0.88 together with --y 128 fixed it") tells the combination that worked."""
    overlapping = [p for _, p in state.pending if set(p.changes) & set(fix.changes)]
    if not overlapping:
        changes = tuple(c for c in fix.changes if not _in_force(state.in_force, c))
        if not changes:
            return
        if restated and changes != fix.changes:
            fix = replace(fix, changes=changes, summary="")
    if target is None:  # a summary above the error ("`--x 64` fixed it"): the first symptom's
        state.early.append(fix)
        return
    if not fix.summary:
        fix = replace(fix, summary=summarize(fix.changes, state.in_force))
    if isinstance(fix, PendingFix):
        state.pending.append((target, fix))
        _apply(state.in_force, fix.changes)
        return
    if overlapping:  # "relaunched with X ..." then "so X did not change ...": one verdict
        _settle_pending(state, fix.outcome)
    state.episodes[target].fixes.append(fix)
    if fix.outcome is Outcome.WORSE:
        state.worsened.append((target, fix))
    if fix.outcome.tried:
        _apply(state.in_force, fix.changes)
    if fix.outcome is Outcome.RESOLVES and target in state.open and len(state.open) > 1:
        state.open.remove(target)  # cured: the symptom below is the open one again


def _settle_pending(state: _Walk, outcome: Outcome | None) -> None:
    for target, fix in state.pending:
        if outcome is not None:
            done = ExtractedFix(fix.text, fix.changes, outcome, summary=fix.summary)
            state.episodes[target].fixes.append(done)
            if outcome is Outcome.RESOLVES:
                state.provisional.append((target, done))
    state.pending = []


def _overturn(state: _Walk, index: int) -> None:
    """ "The server loaded again ... then it crashed with a different error": the success
    was a stage on the way, the new failure the result."""
    overturned = [(t, fix) for t, fix in state.provisional if t != index]
    for target, fix in overturned:
        held = state.episodes[target].fixes
        held[held.index(fix)] = replace(fix, outcome=Outcome.WORSE)
        state.episodes[index].fixes.append(replace(fix, outcome=Outcome.WORSE))
    state.provisional = []


_ENV = "env:"  # environment variables in force, beside the flags


def _flags_only(in_force: dict[str, str | None]) -> dict[str, str | None]:
    return {k: v for k, v in in_force.items() if not k.startswith(_ENV)}


def _in_force(flags: dict[str, str | None], change: Change) -> bool:
    if change.action is ChangeAction.SET_ENV:
        return flags.get(_ENV + change.name) == (change.value or "")
    if change.action is not ChangeAction.SET_FLAG or change.name not in flags:
        return False
    return (change.value if change.value is not None else "true") == (flags[change.name] or "true")


def _apply(flags: dict[str, str | None], changes: Sequence[Change]) -> None:
    for change in changes:
        if change.action is ChangeAction.SET_FLAG:
            flags[change.name] = change.value if change.value is not None else "true"
        elif change.action is ChangeAction.REMOVE_FLAG:
            flags.pop(change.name, None)
        elif change.action is ChangeAction.SET_ENV:
            flags[_ENV + change.name] = change.value or ""


def deduplicated(fixes: Sequence[ExtractedFix]) -> tuple[ExtractedFix, ...]:
    """One fix per change set on a symptom: a later, more certain verdict wins."""
    by_changes: dict[frozenset[Change], ExtractedFix] = {}
    for fix in fixes:
        key = frozenset(fix.changes)
        held = by_changes.get(key)
        if held is None or _certainty(fix.outcome) >= _certainty(held.outcome):
            by_changes.pop(key, None)
            by_changes[key] = fix
    return tuple(by_changes.values())


def _certainty(outcome: Outcome) -> int:
    return 0 if outcome is Outcome.PROPOSED else 1


def with_summary(fix: ExtractedFix, summary: str) -> ExtractedFix:
    return replace(fix, summary=summary)
