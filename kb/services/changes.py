"""How a fix's changes read on a page: one chip per change, each said once.

A flag change reads as the finding's framework release spells it (`--nsa-decode-backend`
on SGLang 0.5.9, `--dsa-decode-backend` later). A chip that would only repeat the fix's
summary is left out; a summary that only lists the chips is not shown beside them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from decisiontree import flags
from kb.models import Fix

COMMAND_ACTIONS = ("set_flag", "remove_flag", "set_env")


@dataclass(frozen=True)
class FixLine:
    fix: Fix
    chips: tuple[str, ...]
    summary_shown: bool  # False when the chips already say all the summary says


def fix_line(fix: Fix, framework: str | None, version: str | None) -> FixLine:
    chips = tuple(
        label
        for change in fix.changes or ()
        if (label := change_label(change, framework, version))
        # A patch told in words is its summary: the chip would say it twice.
        and (change.get("action") in COMMAND_ACTIONS or not same_words(label, fix.summary))
    )
    summary_shown = not chips or not same_flags(fix.summary, " ".join(chips), framework)
    return FixLine(fix, chips, summary_shown)


def change_label(change: Mapping[str, Any], framework: str | None, version: str | None) -> str:
    """`--flag value`, `remove --flag`, `NAME=value`, or the change in its own words."""
    action, name = change.get("action"), str(change.get("name") or "")
    value = "" if change.get("value") is None else str(change["value"])
    if action in ("set_flag", "remove_flag"):
        flag = spelled(name, framework, version)
        return f"remove {flag}" if action == "remove_flag" else f"{flag} {value}".strip()
    if action == "set_env":
        return f"{name}={value}"
    if action == "other":  # a step in words; "other" is its kind, not its name
        return value
    # A patch or a version pin: its words often already name it ("patch the …").
    return value if name.lower() in value.lower() else f"{name} {value}".strip()


def spelled(name: str, framework: str | None, version: str | None) -> str:
    return flags.spell(name, framework, version) if framework else f"--{name}"


def same_words(a: str, b: str) -> bool:
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


FLAG_WORD = re.compile(r"^--?([\w.-]+)$")


def same_flags(a: str, b: str, framework: str | None) -> bool:
    """The two texts set the same flags to the same values, whatever the spelling."""
    return flag_words(a, framework) == flag_words(b, framework)


def flag_words(text: str, framework: str | None) -> list[str]:
    words = []
    for word in text.split():
        if FLAG_WORD.match(word):
            word = "--" + flags.canonical_flag(word, framework)
        words.append(word.lower())
    return sorted(words)
