"""What the vocabulary can tell about the flags of a launch, without any finding.

A server that refuses its command line prints argparse's own message and stops:
`error: unrecognized arguments: --kv-cache-dytpe fp8_e4m3`, or
`error: argument --kv-cache-dtype: invalid choice: 'fp9' (choose from ...)`. The usual
causes need no knowledge base: a misspelt flag, a flag the running release names
otherwise (`--nsa-prefill-backend` became `--dsa-prefill-backend`), a value that is not
one of the flag's choices. Those are read here from the paste and from the flags of the
launch command that no release of the framework knows.

An error that does start often says which setting to change ("Try increasing
`gpu_memory_utilization` or decreasing `max_model_len`", "try to increase
--mem-fraction-static"): `named_flags` reads those names as the launch flags they are,
with the value this launch gave each, so no knowledge base is needed for that step either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

from decisiontree import flags, versions
from decisiontree.context import Context
from decisiontree.logline import strip_prefix
from decisiontree.spelling import older_names

# argparse's messages (Lib/argparse.py), after the program name: "prog: error: ...".
UNRECOGNIZED = re.compile(r"\berror: unrecognized arguments: (?P<args>.+)$")
INVALID_VALUE = re.compile(
    r"\berror: argument (?P<names>-[\w/-]+): invalid (?:choice|\w+ value): '(?P<value>[^']*)'"
)
ARGPARSE_MESSAGE = re.compile(r"error: (?:unrecognized arguments|argument -)")
# A setting an error message names: a dashed option, or a Python name made of two or more
# words (`max_model_len`; one word, "dtype", is too often plain prose). A name followed by
# `=` or `: ` is a value being dumped (a config repr), not advice, unless it opens a quote:
# "pass `trust_remote_code=True`" is advice written as code.
NAMED_SETTING = re.compile(
    r"(?<![\w./-])(--[A-Za-z][\w-]*[A-Za-z0-9]|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w-])"
    r"(?!\s*=|:\s)"
    r"|(?<=[`'\"])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?==)"
)
# A typo is a key or two off: a letter missed, added, swapped or two transposed. Two edits
# (Damerau-Levenshtein) on a name of 8 or more characters, one on a shorter one; farther
# than that the closest name is another flag, not the one meant, and none is offered.
TYPO_EDITS, SHORT_NAME = 2, 8


@dataclass(frozen=True)
class FlagProblem:
    written: str  # the flag as written: "--kv-cache-dytpe", or "--kv-cache-dtype fp9"
    why: str  # "not a flag of sglang"
    instead: str | None  # what to write: "--kv-cache-dtype"; None when nothing is close
    refused: bool  # the paste shows the server refusing it

    def describe(self) -> str:
        """ "--kv-cache-dytpe: not a flag of sglang; use --kv-cache-dtype"."""
        return f"{self.written}: {self.why}" + (f"; use {self.instead}" if self.instead else "")


@dataclass(frozen=True)
class NamedFlag:
    """A launch flag the error's message names, and where this launch stands on it."""

    flag: str  # as the user's release spells it: "--gpu-memory-utilization"
    written: str  # as the message wrote it: "gpu_memory_utilization"
    value: str | None  # what the launch (or the log) gave it; None: not set, or not known
    default: flags.ReleaseDefault  # the default of the user's release, for a flag not set
    # With the release unknown, the flag's names before a rename: "--cuda-graph-max-bs in
    # sglang 0.5.9 and older".
    older: tuple[str, ...] = ()
    # Whether the paste or the form showed the launch: without it, a flag it does not
    # name may well be set, and "not set" would be a guess.
    launch_known: bool = True

    def describe(self) -> str:
        """ "--gpu-memory-utilization (yours: 0.5)", "--max-num-seqs (not set; default 256)"."""
        if self.value is not None:
            notes = [f"yours: {self.value}"]
        else:
            notes = ["not set" if self.launch_known else "value not known"]
        if self.value is None and self.default.describe():
            notes.append(self.default.describe())
        return f"{self.flag} ({'; '.join([*notes, *self.older])})"


def named_flags(messages: Sequence[str], context: Context) -> tuple[NamedFlag, ...]:
    """The launch flags the error's messages name, in the order named."""
    framework = context.framework
    found: dict[str, NamedFlag] = {}
    for message in messages:
        for match in NAMED_SETTING.finditer(message):
            written = match[1] or match[2]
            hit = flags.whole_name(written, framework)
            if hit is None or hit.spec.name in found:
                continue
            spec = hit.spec
            spelled = flags.spell(spec.name, framework or spec.framework, context.spelling_version)
            value = context.flags.get(spec.name)
            default = flags.default_in(spec, context.framework_version)
            older = () if context.spelling_version else older_names(spec, spec.framework)
            found[spec.name] = NamedFlag(
                spelled, written, value, default, older, launch_known=context.launch_seen
            )
    return tuple(found.values())


def flag_problems(text: str, context: Context) -> tuple[FlagProblem, ...]:
    """The refused arguments of the paste first, then the launch's unknown flags."""
    framework = context.framework
    problems: dict[str, FlagProblem] = {}
    for name in refused_flags(text):
        problems.setdefault(name, _refused(name, framework, context.spelling_version))
    for name, value in invalid_values(text):
        problem = _invalid(name, value, framework)
        if problem is not None:
            problems.setdefault(problem.written, problem)
    for name in context.unknown_flags:
        if name not in problems:
            problems[name] = _unknown(name, framework, refused=False)
    return tuple(problems.values())


def refused_flags(text: str) -> list[str]:
    """The options of argparse's "unrecognized arguments" lines ("--x" of "--x=1")."""
    found: list[str] = []
    for line in _error_lines(text):
        match = UNRECOGNIZED.search(line)
        if match:
            options = (arg.split("=", 1)[0] for arg in match["args"].split())
            found += [o for o in options if o.startswith("-") and len(o) > 1 and o not in found]
    return found


def invalid_values(text: str) -> list[tuple[str, str]]:
    """(the option's long name, the value) of argparse's "invalid choice/value" lines."""
    found: list[tuple[str, str]] = []
    for line in _error_lines(text):
        match = INVALID_VALUE.search(line)
        if match:
            names = match["names"].split("/")
            found.append((max(names, key=len), match["value"]))
    return found


def _error_lines(text: str) -> Iterable[str]:
    """The lines of argparse's refusals, log prefixes off: found by one scan in C, not
    line by line (a log runs to 2 MB)."""
    for match in ARGPARSE_MESSAGE.finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        yield strip_prefix(text[start : end if end >= 0 else len(text)])


def _refused(name: str, framework: str | None, version: str | None) -> FlagProblem:
    hit = flags.lookup(name, framework)
    if hit is None:
        return _unknown(name, framework, refused=True)
    spec = hit.spec
    written = flags.flag_key(name)
    where = framework or spec.framework
    renamed = dict(spec.renamed)  # old name -> the last release that took it
    if written in renamed:
        return FlagProblem(
            name,
            f"{where} took this name until {renamed[written]}; later releases renamed it",
            f"--{spec.name}",
            refused=True,
        )
    if written == spec.name and renamed:
        old, last = max(renamed.items(), key=lambda pair: versions.sort_key(pair[1]))
        return FlagProblem(
            name,
            f"a newer name, which {where} {last} and older do not take",
            f"--{old}",
            refused=True,
        )
    release = f" {version}" if version else ""
    return FlagProblem(
        name,
        f"a flag of {where}, but not of the release that ran ({where}{release}): "
        "it may be newer or older than that release",
        None,
        refused=True,
    )


def _invalid(name: str, value: str, framework: str | None) -> FlagProblem | None:
    spec = flags.flag(name, framework)
    if spec is None:
        return None
    choices = list(spec.choices)
    close = closest(value, choices)
    why = f"not one of its values ({', '.join(choices)})" if choices else "not a value it takes"
    instead = f"--{spec.name} {close}" if close else None
    return FlagProblem(f"--{spec.name} {value}", why, instead, refused=True)


def _unknown(name: str, framework: str | None, *, refused: bool) -> FlagProblem:
    where = framework or "SGLang or vLLM"
    why = f"not a flag of {where}"
    latest = flags.latest_version(framework) if framework else None
    if not refused and latest:  # the tables may lag a release the server runs
        why += f" up to {latest}"
    close = closest(flags.flag_key(name), _names(framework))
    return FlagProblem(name, why, f"--{close}" if close else None, refused)


def closest(written: str, names: Sequence[str]) -> str | None:
    """The name `written` is a typo of, if any (see TYPO_EDITS)."""
    edits = TYPO_EDITS if len(written) >= SHORT_NAME else 1
    found = process.extractOne(
        written, names, scorer=DamerauLevenshtein.distance, score_cutoff=edits
    )
    return str(found[0]) if found else None


@cache
def _names(framework: str | None) -> Sequence[str]:
    """Every name a flag of `framework` (or of either) is written with, without dashes."""
    frameworks = (framework,) if framework in flags.FRAMEWORKS else flags.FRAMEWORKS
    names = {
        name.lstrip("-")
        for fw in frameworks
        for spec in flags.flags_of(fw)
        for name in (spec.name, *spec.aliases)
    }
    return sorted(names)


__all__ = [
    "FlagProblem",
    "NamedFlag",
    "flag_problems",
    "invalid_values",
    "named_flags",
    "refused_flags",
]
