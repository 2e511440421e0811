"""Conditions: what a cause needs of a deployment, e.g. `gpu.arch = sm_120`.

One reader for every place a person writes one (a FINDINGS.md "When:" line, the
review form, the admin, the API), so a condition means the same wherever it was
typed: keys are mapped to the keys the diagnosis reads (`arch` -> `gpu.arch`),
flags to their canonical name (`flag.nsa-decode-backend` -> `flag.dsa-decode-backend`),
architectures to `sm_NNN`, package names to their version key (`version.PyTorch`
-> `version.torch`). A key nothing reads is refused with a message that says so.

Keys: the fixed ones in `KEYS`, and three families with a name after the dot:
`flag.<flag>`, `version.<package>`, `env.<VARIABLE>`. Values of `framework.version`
and `version.*` are version requirements (`decisiontree.versions.satisfies`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from decisiontree import flags, versions
from decisiontree.records import Condition
from decisiontree.server_env import is_env_name
from decisiontree.vocabulary import load

KEYS = (
    "gpu.arch",
    "gpu.capability",
    "gpu.name",
    "gpu.count",
    "framework",
    "framework.version",
    "model.name",
    "model.arch",
    "model.quantization",
)
FAMILIES = ("flag", "version", "env")
# Short forms people write; each is the key the diagnosis reads.
_ALIASES = {
    "arch": "gpu.arch",
    "capability": "gpu.capability",
    "compute_capability": "gpu.capability",
    "gpu": "gpu.name",
    "gpus": "gpu.count",
    "model": "model.name",
    "quantization": "model.quantization",
    "version": "framework.version",
}
_LINE = re.compile(r"^\s*([A-Za-z][\w.-]*)\s*(!=|==|=|:)\s*(.+?)\s*$")
# After a condition written as a line: the finding was seen there, the cause may not need it.
SEEN_MARK = "(seen)"
_SEEN = re.compile(r"\s*" + re.escape(SEEN_MARK) + r"\s*$", re.IGNORECASE)
MAX_VALUE_CHARS = 200
EXAMPLE = "gpu.arch = sm_120"


class ConditionError(ValueError):
    """A condition nothing could read; str(e) says what to write instead."""


def canonical_key(key: str, framework: str | None = None) -> str:
    """The key the diagnosis reads for `key` as written; ConditionError if there is none."""
    written = key.strip()
    lowered = written.lower()
    lowered = _ALIASES.get(lowered, lowered)
    if lowered in KEYS:
        return lowered
    family, dot, name = written.partition(".")
    family = family.lower()
    if dot and name and family == "flag":
        return "flag." + flags.canonical_flag(name, framework)
    if dot and name and family == "version":
        return "version." + versions.package_key(name)
    if dot and family == "env" and is_env_name(name):
        return "env." + name
    known = ", ".join(KEYS + tuple(f"{f}.<name>" for f in FAMILIES))
    raise ConditionError(f"“{written}” is not a condition key; the keys are {known}.")


def condition(
    key: str,
    value: str,
    negate: bool = False,
    framework: str | None = None,
    *,
    derived: bool = False,
) -> Condition:
    """A condition with its key and value in the form the diagnosis compares."""
    canonical = canonical_key(key, framework)
    text = value.strip().strip("`'\"").strip()
    if not text:
        raise ConditionError(f"“{key.strip()}” needs a value, e.g. {EXAMPLE}.")
    if len(text) > MAX_VALUE_CHARS:
        raise ConditionError(f"the value of “{canonical}” is over {MAX_VALUE_CHARS} characters.")
    return Condition(canonical, canonical_value(canonical, text), negate, derived)


def canonical_value(key: str, value: str) -> str:
    """`gpu.arch`: "SM120" / "RTX PRO 6000" -> "sm_120"; `framework`: lower case."""
    if key == "gpu.arch":
        return load().arch_of(value) or value
    if key == "framework":
        return value.lower()
    return value


def is_version_key(key: str) -> bool:
    """Values of these keys are releases, compared as versions, not as text: a compute
    capability too ("<8.0": every GPU before Ampere; ">=8.0,<9.0": Ampere and Ada)."""
    return key in ("framework.version", "gpu.capability") or key.startswith("version.")


def is_condition_line(text: str) -> bool:
    """Does `text` have the shape `key = value` (whether or not the key is one)?"""
    return _LINE.match(text) is not None


def parse_line(line: str, framework: str | None = None) -> Condition:
    """ "arch = sm_120", "flag.kv-cache-dtype != bf16", "version.torch: >=2.8";
    "gpu.arch = sm_120 (seen)" is a derived one (where the finding was seen)."""
    stated = _SEEN.sub("", line)
    match = _LINE.match(stated)
    if match is None:
        raise ConditionError(
            f"“{line.strip()}” is not a condition: write key = value or key != value, "
            f"e.g. {EXAMPLE}"
        )
    key, operator, value = match.groups()
    return condition(key, value, operator == "!=", framework, derived=stated != line)


@functools.lru_cache(maxsize=8192)
def canonical(item: Condition, framework: str | None = None) -> Condition:
    """A stored condition in today's form (flag renames move on; old rows keep matching).

    A condition that no longer reads (a key since dropped) is kept as it was; a derived
    one stays derived.
    """
    try:
        fresh = condition(item.key, item.value, item.negate, framework, derived=item.derived)
    except ConditionError:
        return item
    return item if fresh == item else fresh


def checked(items: Any, framework: str | None = None) -> list[dict[str, Any]]:
    """Conditions given as JSON (`[{"key", "value", "negate", "derived"}]`) in their stored form.

    The one check behind the API, the admin and the review form; ConditionError
    names the first condition that does not read.
    """
    if not isinstance(items, list):
        raise ConditionError('conditions are a list of {"key": …, "value": …} objects.')
    return [as_dict(_from_dict(item, framework)) for item in items]


def _from_dict(item: Any, framework: str | None) -> Condition:
    if not isinstance(item, Mapping) or not all(
        isinstance(item.get(k), str) for k in ("key", "value")
    ):
        raise ConditionError('each condition needs string fields "key" and "value".')
    for name in ("negate", "derived"):
        if not isinstance(item.get(name, False), bool):
            raise ConditionError(f'"{name}" is true or false.')
    negate, derived = item.get("negate", False), item.get("derived", False)
    return condition(item["key"], item["value"], negate, framework, derived=derived)


def as_dict(item: Condition) -> dict[str, Any]:
    """The stored form; `"derived": true` only on a derived condition, so a stated one
    is stored as it always was."""
    stored: dict[str, Any] = {"key": item.key, "value": item.value, "negate": item.negate}
    if item.derived:
        stored["derived"] = True
    return stored


def as_line(item: Condition | Mapping[str, Any]) -> str:
    """The line `parse_line` reads back, with its mark when the condition is derived."""
    condition_ = from_stored(item)
    line = condition_.describe()
    return f"{line} {SEEN_MARK}" if condition_.derived else line


def from_stored(item: Condition | Mapping[str, Any]) -> Condition:
    """A condition as stored (`as_dict`: key, value, negate and derived, each checked) or read."""
    if isinstance(item, Condition):
        return item
    return Condition(
        str(item["key"]), str(item["value"]), bool(item.get("negate")), bool(item.get("derived"))
    )


def framework_of(items: Iterable[Condition]) -> str | None:
    """The framework a set of conditions names (flags are read in its table)."""
    for item in items:
        if item.key == "framework" and not item.negate:
            return item.value.lower()
    return None


__all__ = [
    "FAMILIES",
    "KEYS",
    "SEEN_MARK",
    "ConditionError",
    "as_dict",
    "as_line",
    "canonical",
    "canonical_key",
    "canonical_value",
    "checked",
    "condition",
    "framework_of",
    "from_stored",
    "is_condition_line",
    "is_version_key",
    "parse_line",
]


# How a reader names each fixed key, for pages that show a condition in words.
_KEY_WORDS = {
    "gpu.arch": "GPU architecture",
    "gpu.capability": "GPU compute capability",
    "gpu.name": "GPU",
    "gpu.count": "GPU count",
    "framework": "framework",
    "framework.version": "framework release",
    "model.name": "model",
    "model.arch": "model architecture",
    "model.quantization": "quantization",
}


def _subject_words(key: str) -> str:
    family, _, name = key.partition(".")
    if family == "flag" and name:
        return f"--{name}"
    if family == "version" and name:
        return f"{name} release"
    if family == "env" and name:
        return name
    return _KEY_WORDS.get(key, key)


def in_words(item: Condition | Mapping[str, Any], subject: str | None = None) -> str:
    """A condition as a reader says it: `flag.kv-cache-dtype != bf16` reads
    `--kv-cache-dtype is not bf16`; a version requirement keeps its operator.
    `subject` replaces the key's words (a flag in the user's framework spelling)."""
    condition = from_stored(item)
    key, value, negate = condition.key, condition.value, condition.negate
    subject = subject or _subject_words(key)
    if is_version_key(key) and versions.is_specifier(value):
        return f"{subject} {'not ' if negate else ''}{value}"
    return f"{subject} {'is not' if negate else 'is'} {value}"
