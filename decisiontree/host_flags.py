"""Which launch flags may reach a GPU host, and with which values.

A validation run starts a framework's server with a finding's launch flags and a fix's
changes, both written by people. The vocabulary already refuses a flag the framework does
not know; this is the policy for the ones it does (`data/host_flags.json`, each entry with
its reason), the flags' counterpart of `server_env` for environment variables:

- flags that make the server run code nobody reviewed, or delete files, are refused;
- a flag that takes free text passes only when listed (free text can name a file, a
  module, a class or an address), or when its value is a plain number;
- every value is a word, a number, a list or a small JSON object: no `/` or `~`, no `$`,
  quotes or backslashes, and no leading `-` (the parser would read another flag).

The diagnosis still shows every fix as written; this decides only what runs on a host.
Read by `recipes.build_launch`, the last check before a command for a host is built.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from decisiontree.flags import FlagSpec

POLICY_FILE = Path(__file__).resolve().parent / "data" / "host_flags.json"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?[KkMmGgTt]?")
_FREE_TEXT_TYPES = frozenset({"str", "json"})


@dataclass(frozen=True)
class FlagPolicy:
    refused: dict[str, str]  # flag -> why
    free_text: frozenset[str]
    value: re.Pattern[str]


@cache
def policy() -> FlagPolicy:
    data = json.loads(POLICY_FILE.read_text(encoding="utf-8"))
    return FlagPolicy(
        refused={entry["name"]: entry["why"] for entry in data["refused"]},
        free_text=frozenset(entry["name"] for entry in data["free_text"]),
        value=re.compile(data["value_pattern"]),
    )


def flag_problem(spec: FlagSpec, value: str | None, allowed: Collection[str] = ()) -> str | None:
    """Why `--flag value` may not be passed to a server on a GPU host; None when it may.

    `allowed`: refused flags the host's operator allows on that host (`Host.allowed_flags`,
    `hosts add --allow-flag`); their values are still checked."""
    rules = policy()
    flag = f"--{spec.name}"
    if spec.name in rules.refused and spec.name not in allowed:
        return (
            f"{flag} is not run on a host: it {rules.refused[spec.name]} (a host's operator "
            f"may allow it there: hosts add --allow-flag {spec.name})"
        )
    if value is None or spec.type == "bool":
        return None
    if value.startswith("-") and not _NUMBER.fullmatch(value):
        return f"{flag} {value!r}: a value starting with '-' would be read as another flag"
    if not rules.value.fullmatch(value):
        return (
            f"{flag} {value!r}: a value on a host holds words, numbers, lists or small JSON "
            "only (at most 500 characters): no /, ~, $, single quotes or backslashes, so "
            "it never names a file on the host"
        )
    free_text = spec.type in _FREE_TEXT_TYPES and not spec.choices
    if free_text and spec.name not in rules.free_text and not _NUMBER.fullmatch(value):
        return (
            f"{flag} takes free text, which could name a file, a module or an address: it "
            "is not among the flags vetted to run on a host (decisiontree/data/host_flags.json)"
        )
    return None


def allowed_flags_problem(names: Iterable[str]) -> str | None:
    """Why a host may not be set to allow these flags: only refused flags need allowing."""
    unknown = sorted(set(names) - set(policy().refused))
    if unknown:
        choices = ", ".join(sorted(policy().refused))
        return f"only refused flags can be allowed on a host ({choices}), not {', '.join(unknown)}"
    return None


def model_problem(model: str) -> str | None:
    """Why `model` may not be the model a host's server loads; None when it may."""
    if model.startswith("-"):
        return f"model {model!r} starts with '-': the server would read it as a flag"
    return None
