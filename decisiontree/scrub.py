"""Secrets out of a paste before it is stored or shared.

A launch command or a whole log carries what the server was started with: `--api-key`,
`HF_TOKEN=...`, a database URL with its password, SGLang's `server_args` dump with
`api_key='...'`. A stored diagnosis is a link anyone holding it opens, and a paste can
become a finding's sample that everyone sees: what looks like a credential is replaced
before either happens, as error trackers scrub events. Each shape below is a format the
issuer documents or a name that says "secret"; none decides a diagnosis (a secret is
random, it never matches anything), so a false hit costs a word, a miss costs a leak.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

MARK = "[redacted]"
# A name whose last word says its value is a secret: HF_TOKEN, api_key, DB_PASSWORD,
# AWS_SECRET_ACCESS_KEY. The last word only: max_num_batched_tokens, tokenizer and
# SECRET_KEY_FILE (a path) are not secrets.
_SECRET_NAME = re.compile(
    r"(?:^|[_.-])(?:token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|secret[_-]?key|"
    r"private[_-]?key|credentials?)$",
    re.IGNORECASE,
)
# A tokenizer's eos_token="</s>" is no credential; an issued token is long and random.
_RANDOM = re.compile(r"(?=[A-Za-z0-9_.-]*\d)(?=[A-Za-z0-9_.-]*[A-Za-z])[A-Za-z0-9_.-]{16,}")
# Every pattern runs in time linear in the paste (a paste is up to 2 MB of anything): a
# name starts only where a run of name characters starts, and a value that must be
# followed by something is bounded.
_NAME_START = r"(?<![A-Za-z0-9_.-])"
_MAX_QUOTED = 512


@dataclass(frozen=True)
class Shape:
    kind: str  # what the user is told was removed
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str]
    # Text every match holds: without one of them in the paste the pattern is not run (a
    # substring test costs a millisecond on 2 MB, a regex pass fifty).
    hints: tuple[str, ...] = ()


def _whole(match: re.Match[str]) -> str:
    return MARK


def _value(match: re.Match[str]) -> str:
    """Keep the name and what joins it to the value; replace the value."""
    return f"{match.group('name')}{match.group('join')}{MARK}"


def _quoted_value(match: re.Match[str]) -> str:
    quote = match.group("quote")
    return f"{match.group('name')}{match.group('join')}{quote}{MARK}{quote}"


SHAPES = (
    # Issued tokens, by their documented prefixes.
    Shape("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), _whole, ("hf_",)),
    Shape(
        "a GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{40,})"),
        _whole,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Shape("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), _whole, ("xox",)),
    Shape("an OpenAI-style API key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"), _whole, ("sk-",)),
    Shape(
        "an AWS access key id",
        re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        _whole,
        ("AKIA", "ASIA"),
    ),
    Shape("a FixGraph API token", re.compile(r"\bfxg_[A-Za-z0-9_-]{20,}"), _whole, ("fxg_",)),
    Shape(
        "a private key",
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
        ),
        _whole,
        ("PRIVATE KEY",),
    ),
    # Credentials by where they sit.
    Shape(
        "a password in a URL",
        re.compile(
            r"(?P<name>(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s:/@]+)(?P<join>:)[^\s@/]+(?=@)"
        ),
        _value,
        ("://",),
    ),
    Shape(
        "a bearer token",
        re.compile(r"(?P<name>\b[Bb]earer)(?P<join>\s+)[A-Za-z0-9._~+/-]{8,}=*"),
        _value,
        ("earer",),
    ),
    Shape(
        "an --api-key value",
        re.compile(
            r"(?P<name>--(?:api-key|token|hf-token|password|admin-api-key))(?P<join>[= ]+)"
            r"(?!\[redacted\])(?:'[^']*'|\"[^\"]*\"|\S+)"
        ),
        _value,
    ),
    # A secret-named setting with a quoted value: api_key='...', "hf_token": "...".
    Shape(
        "a secret setting",
        re.compile(
            rf"{_NAME_START}(?P<name>[A-Za-z0-9_.-]+['\"]?)(?P<join>\s*[=:]\s*)(?P<quote>['\"])"
            rf"(?!\[redacted\])[^'\"\n]{{4,{_MAX_QUOTED}}}(?P=quote)"
        ),
        _quoted_value,
    ),
    # NAME=value in an environment or a .env line: HF_TOKEN=..., DB_PASSWORD=...
    Shape(
        "a secret environment variable",
        re.compile(
            rf"{_NAME_START}(?P<name>[A-Za-z0-9_.-]+)(?P<join>=)(?!\[redacted\]|['\"])[^\s'\",)]{{4,}}"
        ),
        _value,
    ),
)
# Shapes that hold a secret only when the setting's name says so.
_BY_NAME = frozenset({"a secret setting", "a secret environment variable"})
# Values that name no secret: a setting printed as unset, a flag's placeholder.
_NOT_SECRETS = frozenset(
    {"none", "null", "nil", "false", "true", "0", "''", '""', "<token>", "***"}
)


@dataclass(frozen=True)
class Scrubbed:
    text: str
    kinds: tuple[str, ...]  # what was removed, each kind once, in the order of SHAPES


def scrub(text: str) -> Scrubbed:
    """`text` with what looks like a credential replaced by [redacted]."""
    kinds: list[str] = []
    for shape in SHAPES:
        if shape.hints and not any(hint in text for hint in shape.hints):
            continue

        def replace(match: re.Match[str], shape: Shape = shape) -> str:
            if MARK in match.group(0) or _no_secret(match, shape):  # scrubbed already, or no secret
                return match.group(0)
            if shape.kind not in kinds:
                kinds.append(shape.kind)
            return shape.replace(match)

        text = shape.pattern.sub(replace, text)
    return Scrubbed(text, tuple(kinds))


def _no_secret(match: re.Match[str], shape: Shape) -> bool:
    """Not a secret after all: a setting whose name is no secret's, a value that is unset,
    a placeholder or a count, or a "token" whose value is not random (a tokenizer's)."""
    names = match.groupdict()
    if "name" not in names:
        return False
    name = names["name"].rstrip("'\"")
    if shape.kind in _BY_NAME and not _SECRET_NAME.search(name):
        return True
    value = match.group(0)[len(names["name"]) + len(names.get("join") or "") :].strip("'\"")
    if value.lower() in _NOT_SECRETS or value.isdigit():
        return True
    return name.lower().endswith("token") and not _RANDOM.fullmatch(value)
