"""Launch flags: every spelling of a flag, read as one canonical name.

People write `--nsa-decode-backend` (the name before SGLang 0.5.10), `--tp` (argparse
takes a unique prefix), `-tp` (vLLM's short form), `kv_cache_dtype` (a Python dump)
or `--disable-prefix-caching` (a negation). The flag tables in
`decisiontree/data/{sglang,vllm}_flags.json` list names, aliases, renames and
negations; this module is the one place that reads them:

- `canonical_flag(written, framework)`: the canonical name, or the written name
  tidied (no dashes, lower case) when no table knows it;
- `known_flag(written, framework)`: the canonical name, or None;
- `lookup` / `flag`: the flag's spec (type, choices, default, renames); `whole_name`
  without argparse's prefixes, for a word of prose;
- `spell(canonical, framework, version)`: how a release spells it;
- `flags_in_text(text)`: the flags a sentence or log line mentions.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from decisiontree import versions

DATA_DIR = Path(__file__).resolve().parent / "data"
FRAMEWORKS = ("sglang", "vllm")


@dataclass(frozen=True)
class FlagSpec:
    framework: str
    name: str  # canonical: no dashes, newest spelling
    aliases: tuple[str, ...]  # other spellings, old names included ("-tp" keeps its dash)
    type: str  # bool | int | float | str | json
    choices: tuple[str, ...]
    default: str | None
    renamed: tuple[tuple[str, str], ...]  # (old_name, last version that used it)
    negations: tuple[str, ...] = ()  # spellings that set a bool flag to false
    deprecated: bool = False
    last_version: str | None = None  # set when the newest release no longer has the flag
    description: str | None = None
    model_archs: tuple[str, ...] = ()  # model architectures it acts on; () = every model
    # (default, last release known to have it) before the newest release's `default`;
    # a None release: every release before the newest.
    earlier_default: tuple[str, str | None] | None = None


@dataclass(frozen=True)
class FlagHit:
    """What a written name means: the flag, and whether the spelling negates it (`--no-x`)."""

    spec: FlagSpec
    negated: bool


@dataclass(frozen=True)
class CrossAlias:
    concept: str
    sglang: str
    vllm: str
    relation: str  # "same" | "approximate"


def flag_key(name: str) -> str:
    """`--KV_Cache_Dtype` -> "kv-cache-dtype"; a single-dash short form keeps its dash."""
    name = name.strip().strip("'\"")
    if re.fullmatch(r"-[A-Za-z]\w*", name):
        return name.lower()
    return name.lstrip("-").lower().replace("_", "-")


def _written_name(written: str) -> str:
    """The name part of "--mem_fraction_static=0.8" or "mem-fraction-static 0.8"."""
    words = written.strip().split("=", 1)[0].split()
    return words[0] if words else ""


# ---------------------------------------------------------------- lookups


@functools.lru_cache(maxsize=8192)
def lookup(written: str, framework: str | None = None) -> FlagHit | None:
    """The flag a spelling means in `framework` (in either framework when None)."""
    # Cached whole: every diagnosis and every finding of a rebuild spells the same flags.
    return _lookup(flag_key(_written_name(written)), framework)


def whole_name(written: str, framework: str | None = None) -> FlagHit | None:
    """As `lookup`, but only a flag's whole name: a word of prose ("max_model") is not the
    command line, where argparse would take it as a prefix."""
    return _lookup(flag_key(_written_name(written)), framework, prefixes=False)


def flag(written: str, framework: str | None = None) -> FlagSpec | None:
    """The spec of the flag any spelling means: "kv_cache_dtype", "--nsa-decode-backend", "-tp"."""
    hit = lookup(written, framework)
    return hit.spec if hit else None


def known_flag(written: str, framework: str | None = None) -> str | None:
    """The canonical name of a flag the tables know; None for any other name."""
    spec = flag(written, framework)
    return spec.name if spec else None


def canonical_flag(written: str, framework: str | None = None) -> str:
    """The canonical name: "--nsa-decode-backend" -> "dsa-decode-backend", "--tp" -> "tp-size".

    A name no table knows is kept, tidied the same way ("--My_Flag" -> "my-flag"), so
    two spellings of an unknown flag still compare equal.
    """
    return known_flag(written, framework) or flag_key(_written_name(written))


@dataclass(frozen=True)
class ReleaseDefault:
    """A flag's default as a user's release has it."""

    value: str | None  # that release's default; the newest's when the release is not known
    # When the release does not settle it, how the default changed: "0.92 in 0.33.0, 0.9 before".
    changed: str | None = None

    def describe(self) -> str:
        """ "default 256"; "default 0.92 in 0.33.0, 0.9 before"; "" with no default."""
        if self.changed:
            return f"default {self.changed}"
        return f"default {self.value}" if self.value is not None else ""


def default_in(spec: FlagSpec, version: str | None) -> ReleaseDefault:
    """The default of `spec` in release `version` (None: not known). The tables hold the
    newest release's defaults and, for the few that changed, the one before."""
    if spec.earlier_default is None:
        return ReleaseDefault(spec.default)
    earlier, until = spec.earlier_default
    newest = latest_version(spec.framework) or ""
    if version and versions.at_or_before(newest, version):
        return ReleaseDefault(spec.default)
    if version and (until is None or versions.at_or_before(version, until)):
        return ReleaseDefault(earlier)
    now = spec.default if spec.default is not None else "none"
    before = f"{earlier} in {until}" if until else f"{earlier} before"
    return ReleaseDefault(spec.default, f"{now} in {newest}, {before}")


def flags_of(framework: str) -> tuple[FlagSpec, ...]:
    return _tables().specs.get(framework, ())


def latest_version(framework: str) -> str | None:
    return _tables().latest.get(framework)


@functools.lru_cache(maxsize=8192)
def _lookup(key: str, framework: str | None, *, prefixes: bool = True) -> FlagHit | None:
    # Cached: a large knowledge base names the same few hundred flags over and over.
    tables = _tables()
    frameworks = (framework,) if framework else FRAMEWORKS
    # Without a framework, a canonical name anywhere beats an alias elsewhere:
    # "tensor-parallel-size" is vLLM's own name but only an alias in SGLang.
    for fw in frameworks:
        hit = tables.index.get(fw, {}).get(key)
        if hit and hit.spec.name == key:
            return hit
    for fw in frameworks:
        hit = tables.index.get(fw, {}).get(key)
        if hit:
            return hit
    for fw in frameworks if prefixes else ():
        hit = _prefix_hit(key, fw)
        if hit:
            return hit
    return None


def _prefix_hit(key: str, framework: str) -> FlagHit | None:
    """argparse accepts a unique prefix of a long option: SGLang's `--tp 8` is `--tp-size`."""
    if len(key) < 2 or key.startswith("-"):
        return None
    index = _tables().index.get(framework, {})
    specs = {hit.spec for k, hit in index.items() if k.startswith(key) and not hit.negated}
    return FlagHit(specs.pop(), negated=False) if len(specs) == 1 else None


def spell(canonical: str, framework: str, version: str | None) -> str:
    """How to write a flag for a release: "--nsa-decode-backend" for sglang 0.5.9,
    "--dsa-decode-backend" for 0.5.23 or an unknown version (newest)."""
    spec = flag(canonical, framework)
    if spec is None:
        return "--" + flag_key(canonical)
    if version:
        # The oldest rename whose old name was still in use at `version`.
        in_use = [(last, old) for old, last in spec.renamed if versions.at_or_before(version, last)]
        if in_use:
            return "--" + min(in_use, key=lambda pair: versions.sort_key(pair[0]))[1]
    return "--" + spec.name


def equivalent_flag(written: str, source: str, target: str) -> CrossAlias | None:
    """The cross-framework row for a flag: sglang `tp-size` <-> vllm `tensor-parallel-size`."""
    name = known_flag(written, source)
    for row in _tables().cross_aliases:
        if name and getattr(row, source) == name:
            return row
    return None


# ---------------------------------------------------------------- flags in prose and logs

_NUMERIC = re.compile(r"^-?\d+(?:\.\d+)?(?:e-?\d+)?$")
_VALUE_STOPWORDS = {
    "and", "or", "to", "the", "a", "an", "is", "was", "were", "with", "but", "in", "on",
    "for", "of", "flag", "option", "which", "that", "this", "it", "as", "by", "from", "not",
    "so", "then", "when", "if", "still", "also", "only", "too", "are", "be", "has", "had",
}  # fmt: skip


def is_option(token: str) -> bool:
    """A command-line word that names an option ("-tp", "--x=1"), not a negative number."""
    return token.startswith("-") and len(token) > 1 and not _NUMERIC.match(token)


def flags_in_text(text: str, framework: str | None = None) -> list[tuple[str, str | None]]:
    """Known flags mentioned in prose or logs, as (canonical, value or None).

    Sees `--flag value`, `--flag=value`, "set --flag to 0.88", "-tp 8" and
    Python-style `flag_name='value'` (server_args= and config dumps). A bare
    boolean mention has value None; its negated spelling (`--no-x`) gives "false".
    """
    found: list[tuple[int, str, str | None]] = []
    found += _dashed_flags(text, framework)
    found += _keyword_flags(text, framework)
    seen: dict[tuple[str, str | None], int] = {}
    for position, name, value in sorted(found, key=lambda f: f[0]):
        seen.setdefault((name, value), position)
    return list(seen)


def _dashed_flags(text: str, framework: str | None) -> list[tuple[int, str, str | None]]:
    found = []
    pattern = r"(?<![\w/.-])(--[A-Za-z][\w-]*[A-Za-z0-9]|-(?:tp|pp|dp|ep|cc|ac))(=\S+)?"
    for match in re.finditer(pattern, text):
        hit = lookup(match.group(1), framework)
        if hit is None:
            continue
        raw = match.group(2)[1:] if match.group(2) else _value_in_prose(text[match.end() :])
        found.append((match.start(), hit.spec.name, _checked_value(hit, raw)))
    return found


def _keyword_flags(text: str, framework: str | None) -> list[tuple[int, str, str | None]]:
    found = []
    value = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|\{[^}]*\}|[^\s,(){}\[\]=]+"
    pattern = rf"(?<![\w.-])['\"]?([a-z][a-z0-9]*_[a-z0-9_]+)['\"]?\s*(?:=|:\s)\s*({value})"
    for match in re.finditer(pattern, text):
        hit = lookup(match.group(1), framework)
        if hit is None:
            continue
        found.append((match.start(), hit.spec.name, python_value(match.group(2))))
    return found


def python_value(raw: str) -> str | None:
    """A value from a Python repr or prose: quotes off, True/False/None normalised."""
    raw = raw.strip().rstrip(",;")
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    if raw in ("None", "null", ""):
        return None
    if raw in ("True", "False"):
        return raw.lower()
    return raw.removeprefix("torch.")  # vLLM prints dtype=torch.bfloat16


def _value_in_prose(after: str) -> str | None:
    """The value that follows a flag in a sentence: "to 0.88", "from 0.95 to 0.88", " triton"."""
    words = after[:120].split()
    if len(words) >= 4 and words[0] == "from" and words[2] == "to":
        return words[3]
    if len(words) >= 2 and words[0] in {"to", "=", ":", "at", "of", "as"}:
        return words[1]
    if after[:1] in (" ", "\t") and words:
        return words[0]
    return None


def _checked_value(hit: FlagHit, raw: str | None) -> str | None:
    return checked_value(hit.spec, raw, negated=hit.negated)


def takes_value(spec: FlagSpec) -> bool:
    """A bool flag is a switch; every other type is followed by its value."""
    return spec.type != "bool"


def checked_value(spec: FlagSpec, raw: str | None, *, negated: bool = False) -> str | None:
    """A value read from prose, kept only when it fits the flag's type and choices
    ("whatever --attention-backend says" sets nothing); a choice comes back as the
    table spells it."""
    if not takes_value(spec):
        return "false" if negated else None
    if raw is None:
        return None
    value = raw.strip("'\"`.,;:()[]")
    if (
        not value
        or value.lower() in _VALUE_STOPWORDS
        or value.startswith("-")
        and not _NUMERIC.match(value)
    ):
        return None
    if spec.choices:
        lowered = {c.lower(): c for c in spec.choices}
        return lowered.get(value.lower())
    if spec.type in ("int", "float"):
        return value if re.fullmatch(r"-?\d+(?:\.\d+)?[kKmM]?", value) else None
    return value if re.fullmatch(r"[\w./:@+-]+", value) else None


def value_problem(spec: FlagSpec, value: str) -> str | None:
    """What is wrong with a flag's value as written, for a reviewer: not of the flag's type,
    or none of its choices in the table (which may lag a release: a note, not a refusal)."""
    if not takes_value(spec) or checked_value(spec, value) is not None:
        return None
    if spec.choices:
        return f"--{spec.name} {value}: not one of the choices known ({', '.join(spec.choices)})"
    if spec.type in ("int", "float"):
        return f"--{spec.name} {value}: takes a number"
    return None


# ---------------------------------------------------------------- the tables


@dataclass(frozen=True)
class _Tables:
    specs: Mapping[str, tuple[FlagSpec, ...]]
    index: Mapping[str, Mapping[str, FlagHit]]  # framework -> flag_key of a spelling -> hit
    latest: Mapping[str, str]
    cross_aliases: tuple[CrossAlias, ...]


def _read(name: str) -> Any:
    return json.loads((DATA_DIR / name).read_text(encoding="utf-8"))


@functools.cache
def _tables() -> _Tables:
    """The flag tables of the bundled data files (read once per process)."""
    files = {fw: _read(f"{fw}_flags.json") for fw in FRAMEWORKS}
    specs = {fw: tuple(_spec_from(fw, row) for row in data["flags"]) for fw, data in files.items()}
    return _Tables(
        specs=specs,
        index={fw: _index(rows) for fw, rows in specs.items()},
        latest={fw: data["latest_version"] for fw, data in files.items()},
        cross_aliases=tuple(CrossAlias(**row) for row in _read("cross_aliases.json")["aliases"]),
    )


def _spec_from(framework: str, row: Mapping[str, Any]) -> FlagSpec:
    return FlagSpec(
        framework=framework,
        name=row["name"],
        aliases=tuple(row.get("aliases", ())),
        type=row.get("type", "str"),
        choices=tuple(row.get("choices", ())),
        default=row.get("default"),
        renamed=tuple((old, last) for old, last in row.get("renamed", ())),
        negations=tuple(row.get("negations", ())),
        deprecated=bool(row.get("deprecated", False)),
        last_version=row.get("last_version"),
        description=row.get("description"),
        model_archs=tuple(row.get("model_archs", ())),
        earlier_default=_earlier_default(row.get("earlier_default")),
    )


def _earlier_default(pair: list[str | None] | None) -> tuple[str, str | None] | None:
    if not pair or pair[0] is None:
        return None
    return pair[0], pair[1]


def _index(specs: tuple[FlagSpec, ...]) -> dict[str, FlagHit]:
    index: dict[str, FlagHit] = {}
    for spec in specs:
        for alias in spec.aliases:
            index.setdefault(flag_key(alias), FlagHit(spec, negated=False))
        for negation in spec.negations:
            index.setdefault(flag_key(negation), FlagHit(spec, negated=True))
        if spec.type == "bool":  # BooleanOptionalAction spells the opposite `--no-<name>`
            index.setdefault("no-" + spec.name, FlagHit(spec, negated=True))
    for spec in specs:
        index[spec.name] = FlagHit(spec, negated=False)
    return index


__all__ = [
    "FRAMEWORKS",
    "CrossAlias",
    "FlagHit",
    "FlagSpec",
    "canonical_flag",
    "equivalent_flag",
    "flag",
    "flag_key",
    "flags_in_text",
    "flags_of",
    "is_option",
    "known_flag",
    "latest_version",
    "lookup",
    "python_value",
    "spell",
    "whole_name",
]
