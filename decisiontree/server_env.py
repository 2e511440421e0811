"""Which environment variables may reach a GPU host, and how.

Two kinds of environment meet on a host:
- a host's own environment (`Host.env`, set by whoever registers the host): any name
  that is a plain shell identifier, any value (always quoted);
- a fix's `set_env` changes, written by whoever wrote the finding: only the vetted
  knobs of `data/server_env.json` (CUDA/NCCL/framework switches), with values that
  cannot name a file. `PYTHONPATH`, `LD_PRELOAD`, `PYTHONWARNINGS`, `BROWSER`,
  `PERL5OPT` and the like change which code runs, so they never come from a fix.

Every reader (ingest, the API, the admin, the launch builder) asks `fix_env_problem`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from decisiontree.records import Change, ChangeAction

POLICY_FILE = Path(__file__).resolve().parent / "data" / "server_env.json"
# A name a shell reads as one word in `NAME=value` and `export NAME=...`.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class EnvPolicy:
    names: frozenset[str]
    patterns: tuple[re.Pattern[str], ...]
    refused: Mapping[str, str]  # name -> why
    refused_suffixes: Mapping[str, str]  # suffix -> why
    value: re.Pattern[str]


@cache
def policy() -> EnvPolicy:
    data = json.loads(POLICY_FILE.read_text(encoding="utf-8"))
    return EnvPolicy(
        names=frozenset(entry["name"] for entry in data["names"]),
        patterns=tuple(re.compile(entry["pattern"]) for entry in data["patterns"]),
        refused={entry["name"]: entry["why"] for entry in data["refused"]},
        refused_suffixes={entry["suffix"]: entry["why"] for entry in data["refused_suffixes"]},
        value=re.compile(data["value_pattern"]),
    )


def is_env_name(name: str) -> bool:
    return ENV_NAME.fullmatch(name) is not None


def env_name_problem(name: str) -> str | None:
    """Why `name` cannot be an environment variable name in a shell command; else None."""
    if not is_env_name(name):
        return f"{name!r} is not an environment variable name (letters, digits, _; no digit first)"
    return None


def fix_env_problem(name: str, value: str | None) -> str | None:
    """Why a fix may not set `name=value` on a GPU host; None when it may."""
    problem = env_name_problem(name)
    if problem:
        return problem
    rules = policy()
    if name in rules.refused:
        return f"{name} is refused: {rules.refused[name]}"
    if name not in rules.names:
        if not any(p.fullmatch(name) for p in rules.patterns):
            return (
                f"{name} is not a vetted serving knob (CUDA, NCCL, PyTorch allocator, "
                "SGLang or vLLM switches); a fix cannot set it"
            )
        for suffix, why in rules.refused_suffixes.items():
            if name.endswith(suffix):
                return f"{name} is refused: it {why}"
    if not rules.value.fullmatch(value or ""):
        return (
            f"the value of {name} may only hold letters, digits, spaces and . , : ; = + @ % ^ * _ -"
            " (at most 200 characters): no paths, quotes or `$`"
        )
    return None


def change_problem(change: Change) -> str | None:
    """Why a fix's change cannot be run by validation; None for anything but set_env."""
    if change.action is not ChangeAction.SET_ENV:
        return None
    return fix_env_problem(change.name, change.value)


def runnable_changes(changes: Iterable[Change]) -> tuple[Change, ...]:
    """The changes with every refused `set_env` kept as text only (an OTHER change):
    what the write-up says is remembered, but validation never sets it on a host."""
    return tuple(
        Change(ChangeAction.OTHER, change.name, f"{change.describe()} (not run: {problem})")
        if (problem := change_problem(change))
        else change
        for change in changes
    )
