"""A launch command with a fix's flag changes applied, for the copy button.

Flags are compared by their canonical name, so `--nsa-decode-backend` in the
user's command is replaced by the fix's `--dsa-decode-backend` spelling (or
the other way round) instead of being doubled.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from decisiontree.vocabulary import load

FLAG_ACTIONS = ("set_flag", "remove_flag")


def corrected_command(
    command: str, fix: dict[str, Any], framework: str | None = None
) -> str | None:
    """`command` with the fix's flag and env changes applied; None if nothing applies."""
    tokens = split_command(command)
    if not tokens:
        return None
    pairs = list(zip(fix.get("changes", []), fix.get("command_changes", []), strict=False))
    if not any(change["action"] in (*FLAG_ACTIONS, "set_env") for change, _ in pairs):
        return None
    for change, spelled in pairs:
        tokens = apply_change(tokens, change, spelled, framework)
    return shlex.join(tokens)


def split_command(command: str) -> list[str]:
    joined = command.replace("\\\r\n", " ").replace("\\\n", " ")
    try:
        return shlex.split(joined)
    except ValueError:  # an unbalanced quote: fall back to words
        return joined.split()


def apply_change(
    tokens: list[str], change: dict[str, Any], spelled: str, framework: str | None
) -> list[str]:
    action = change["action"]
    if action == "set_env":
        return [
            f"{change['name']}={change.get('value') or ''}",
            *(t for t in tokens if not t.startswith(f"{change['name']}=")),
        ]
    if action not in FLAG_ACTIONS:
        return tokens
    kept = without_flag(tokens, change["name"], framework)
    if action == "remove_flag":
        return kept
    return [*kept, *spelled.split()]


def without_flag(tokens: Sequence[str], name: str, framework: str | None) -> list[str]:
    wanted = canonical(name, framework)
    kept: list[str] = []
    skip_value = False
    for token in tokens:
        if skip_value and not token.startswith("-"):
            skip_value = False
            continue
        skip_value = False
        if token.startswith("--") and canonical(token, framework) == wanted:
            skip_value = "=" not in token
            continue
        kept.append(token)
    return kept


def canonical(flag: str, framework: str | None) -> str:
    name = flag.split("=", 1)[0].lstrip("-")
    return load().canonical_flag(name, framework) or name
