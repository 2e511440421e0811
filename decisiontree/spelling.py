"""One spelling of each flag per answer: the one the user's framework release reads.

The graph holds every flag by its newest name (`dsa-decode-backend`); a user on
SGLang 0.5.9 types `--nsa-decode-backend`. Chips, corrected commands, headings
and questions all go through `spell_flag` (over `decisiontree.flags.spell`), so an
answer never mixes the two. When the release is unknown the newest spelling is
used and `older_spellings` says the other, so the user sees both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from decisiontree import flags
from decisiontree.conditions import in_words
from decisiontree.records import Change, ChangeAction, Condition

# `--name` in prose; not inside a longer word or path ("a--b", "/x--y").
FLAG_IN_TEXT = re.compile(r"(?<![\w/.-])--[A-Za-z][\w-]*[A-Za-z0-9]")


def spell_flag(name: str, framework: str | None, version: str | None) -> str:
    """ "--nsa-decode-backend" for sglang 0.5.9, "--dsa-decode-backend" otherwise."""
    spelled = flags.spell(name, framework, version) if framework else name
    return "--" + spelled.lstrip("-")


def spell_change(change: Change, framework: str | None, version: str | None) -> str:
    if change.action not in (ChangeAction.SET_FLAG, ChangeAction.REMOVE_FLAG):
        return change.describe()
    flag = spell_flag(change.name, framework, version)
    if change.action is ChangeAction.REMOVE_FLAG:
        return f"remove {flag}"
    return flag if change.value in (None, "true") else f"{flag} {change.value}"


def condition_in_words(
    condition: Condition | Mapping[str, Any], framework: str | None, version: str | None
) -> str:
    """A condition in words, its flag named as this release writes it."""
    key = condition.key if isinstance(condition, Condition) else condition["key"]
    family, _, name = str(key).partition(".")
    subject = spell_flag(name, framework, version) if family == "flag" and name else None
    return in_words(condition, subject=subject)


def respell(
    text: str, framework: str | None, version: str | None, source: str | None = None
) -> str:
    """`text` with every flag it names written as the user's release writes it. A flag
    the user's framework lacks, read in `source` (the framework the text was written
    for), gets its newest name there: the name its withheld change and conditions show."""
    if framework is None:
        return text

    def spelled(found: re.Match[str]) -> str:
        hit = flags.lookup(found.group(0), framework)
        release = version
        if hit is None and source not in (None, framework):
            hit, release = flags.lookup(found.group(0), source), None
        # A negation (`--no-enable-prefix-caching`) stays as written: spelled by its
        # flag's name it would say the opposite.
        if hit is None or hit.negated:
            return found[0]
        return spell_flag(hit.spec.name, framework, release)

    return FLAG_IN_TEXT.sub(spelled, text)


def older_spellings(
    names: Iterable[str], framework: str | None, version: str | None
) -> tuple[str, ...]:
    """When the release is unknown: the older names of these flags, and until when.

    E.g. "--dsa-decode-backend is --nsa-decode-backend in sglang 0.5.9 and older".
    """
    if framework is None or version:
        return ()
    notes: list[str] = []
    for name in dict.fromkeys(names):
        spec = flags.flag(name, framework)
        if spec is not None:
            notes += [f"--{spec.name} is {old}" for old in older_names(spec, framework)]
    return tuple(notes)


def older_names(spec: flags.FlagSpec, framework: str) -> tuple[str, ...]:
    """ "--nsa-decode-backend in sglang 0.5.9 and older": the flag's names before a rename."""
    return tuple(f"--{old} in {framework} {last} and older" for old, last in spec.renamed)


def flag_names(changes: Iterable[Change]) -> tuple[str, ...]:
    return tuple(
        c.name for c in changes if c.action in (ChangeAction.SET_FLAG, ChangeAction.REMOVE_FLAG)
    )


__all__ = [
    "condition_in_words",
    "flag_names",
    "older_names",
    "older_spellings",
    "respell",
    "spell_change",
    "spell_flag",
]
