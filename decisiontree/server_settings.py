"""The settings a server prints when it starts, and the launch command they imply.

SGLang logs `server_args=ServerArgs(model_path=..., tp_size=8, ...)` with every field;
vLLM logs `non-default args: {...}` (what the user changed; releases before 0.9 log
`args: Namespace(...)` with every field instead) and `LLM engine (v0.x) with config:
...` (the resolved engine config). `settings_dumps` reads them all;
`context` takes facts from them, and `rebuilt_command` writes a launch command from
the last SGLang or vLLM argument printout, so a whole log attached without the
command that started it still gets a corrected command.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from decisiontree import flags
from decisiontree.launch import FoundCommand, flag_setting
from decisiontree.recipes import recipe_for

# Engine-config fields whose name differs from the flag that sets them.
VLLM_FIELDS = {"max_seq_len": "max-model-len", "model": "model"}
# Fields that name the model being served; the command's head carries it.
_MODEL_FIELDS = ("model_path", "model", "model_tag")  # in the order they are read


@dataclass(frozen=True)
class SettingsDump:
    framework: str  # "sglang" | "vllm"
    kind: str  # "ServerArgs" | "non-default args" | "Namespace" | "engine config" | "engine call"
    pairs: tuple[tuple[str, str], ...]  # (field, value as printed: a Python literal)


# A printout is a few kilobytes (SGLang's ServerArgs about 10 KB); one that runs on is cut.
MAX_DUMP_CHARS = 100_000
# A log holds one printout a start; of many restarts the last ones tell what ran. (The
# bound keeps a paste of the marker repeated a million times from costing minutes.)
MAX_DUMPS = 4


def settings_dumps(text: str) -> Iterator[SettingsDump]:
    for found in _last(re.finditer(r"ServerArgs\(", text)):
        yield SettingsDump("sglang", "ServerArgs", _pairs(text, found.end(), ")"))
    for found in _last(re.finditer(r"non-default args:\s*\{", text)):
        yield SettingsDump("vllm", "non-default args", _pairs(text, found.end(), "}"))
    # The log line's own "args:" tells vLLM's server from a benchmark script, which
    # prints a bare Namespace of its own options.
    for found in _last(re.finditer(r"\bargs:\s*Namespace\(", text)):
        yield SettingsDump("vllm", "Namespace", _pairs(text, found.end(), ")"))
    for found in _last(re.finditer(r"LLM engine.{0,200}?with config:\s*(.*)$", text, re.M)):
        yield SettingsDump("vllm", "engine config", _pairs(found.group(1)))


# The offline engines' constructors, whose keyword arguments are the server's settings:
# vLLM's `LLM(model=..., tensor_parallel_size=4)` (also `EngineArgs`, `AsyncEngineArgs`),
# SGLang's `sgl.Engine(model_path=..., tp_size=8)`. A class named LLM or Engine is common;
# the framework must be named in the paste too (an import, a path).
_ENGINE_CALLS = (
    ("vllm", re.compile(r"(?<![\w.])(?:vllm\.)?(?:LLM|AsyncEngineArgs|EngineArgs)\(")),
    ("sglang", re.compile(r"(?<![\w.])(?:sgl\.|sglang\.)?Engine\(")),
)


def engine_calls(text: str, *, named: bool = True) -> Iterator[SettingsDump]:
    """The settings a script gave an offline engine: `LLM("Qwen/Qwen3-8B", max_model_len=8192)`.

    `named`: only where the text names the framework too; a snippet given as the launch
    itself (the launch check's field) needs not."""
    lowered = text.lower()
    for framework, pattern in _ENGINE_CALLS:
        if named and framework not in lowered:
            continue
        for found in _last(pattern.finditer(text)):
            call = text
            parts, closed = _top_level_parts(text, found.end(), ")")
            if not closed:  # Python before 3.11 prints a statement's first line only
                end = text.find("\n", found.end())
                call = text if end < 0 else text[:end]
                parts, _ = _top_level_parts(call, found.end(), None)
            first = parts[0].strip() if parts else ""
            positional = (("model", first),) if re.fullmatch(r"(['\"]).+\1", first) else ()
            # Literals only: `EngineArgs(model=model, **kwargs)` inside vLLM's own frames
            # passes variables, which say nothing.
            given = tuple(pair for pair in _pairs(call, found.end(), ")") if _is_literal(pair[1]))
            if positional or given:
                yield SettingsDump(framework, "engine call", positional + given)


def is_engine_call(text: str) -> bool:
    """Is `text` a script's offline engine call rather than a command line?"""
    return next(engine_calls(text, named=False), None) is not None


def _is_literal(raw: str) -> bool:
    try:
        ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _last(found: Iterator[re.Match[str]]) -> list[re.Match[str]]:
    # Not all of them held: a 2 MB log of one printout a line has a hundred thousand.
    return list(deque(found, maxlen=MAX_DUMPS))


# An object printing itself with keyword fields, as dataclasses and named tuples do in
# an error message: `AttentionSelectorConfig(head_size=576, kv_cache_dtype=auto, ...)`.
# Only at a word's start: a run of capitals is one candidate, not one per letter.
_OBJECT_REPR = re.compile(r"(?<![\w.])[A-Z][A-Za-z0-9]{0,80}\((?=\s*[a-z_][a-z0-9_]*=)")


def stated_settings(text: str, framework: str) -> dict[str, str]:
    """Flag values (canonical name -> value) that the object reprs of `text` state.

    A repr's field holds what the process ran with, where it has a flag's exact name
    and a value that flag can take. A value must be printed as a literal, or be one of
    the flag's choices: a call in a script's source passes names (`block_size=bs`),
    which say nothing."""
    found: dict[str, str] = {}
    for start in _last(_OBJECT_REPR.finditer(text)):
        for name, raw in _pairs(text, start.end(), ")"):
            hit = _exact_flag(name, framework)
            value = flags.python_value(raw)
            if hit is None or value is None or hit.spec.name == "model":
                continue
            if not (hit.spec.choices or _is_literal(raw)):
                continue
            checked = flags.checked_value(hit.spec, value)
            if checked is not None:
                found[hit.spec.name] = checked
    return found


# ---------------------------------------------------------------- a command from them


def rebuilt_command(
    dumps: Iterable[SettingsDump], version: str | None = None
) -> FoundCommand | None:
    """The launch command the last argument printout of a log implies (`dumps`, as
    `settings_dumps` reads them): the server's
    entry point, the model, and every setting that differs from the flag's default
    (vLLM prints only those; SGLang prints all, defaults included).

    Tuning knobs SGLang decides at start-up when they are not given are written too
    (the log shows what ran) and named in `server_chosen`: the value may be its own.
    `version` picks flag spellings; a printout's own field names win, as they are
    the spellings of the release that printed them.
    """
    printouts = [d for d in dumps if d.kind != "engine config"]
    if not printouts:
        return None
    dump = printouts[-1]
    recipe = recipe_for(dump.framework)
    values = {name: _literal(raw) for name, raw in dump.pairs}
    model = next((str(values[f]) for f in _MODEL_FIELDS if values.get(f)), None)
    if model is None:
        return None  # no command to run without one (a printout cut before its start)
    head = list(recipe.entry)
    if recipe.model_flag:
        head += [flags.spell(recipe.model_flag, dump.framework, version), model]
    else:
        head.append(model)
    words, chosen, left_out = [], [], []
    for name, value in values.items():
        if name in _MODEL_FIELDS or value is None or value == "" or value == model:
            continue  # unset; or the model again (SGLang's tokenizer_path defaults to it)
        hit = _exact_flag(VLLM_FIELDS.get(name, name), dump.framework)
        if hit is None or _is_default(value, hit.spec.default):
            continue
        spelled = "--" + flags.flag_key(VLLM_FIELDS.get(name, name))
        if isinstance(value, (list, tuple)) and hit.spec.type != "json":
            # Several values after one flag (argparse's nargs), as the user types them.
            scalars = all(isinstance(item, (int, float, str)) for item in value)
            setting = " ".join([spelled, *map(shlex.quote, map(str, value))]) if scalars else ""
        else:
            setting = flag_setting(hit.spec, spelled, _as_flag_value(value))
        if not setting:
            left_out.append(flags.flag_key(name))
            continue
        words.append(setting)
        if dump.kind == "ServerArgs" and _decided_at_start(hit.spec):
            chosen.append(spelled.removeprefix("--"))
    command = " ".join([*(shlex.quote(word) for word in head), *words])
    return FoundCommand(command, dump.kind, tuple(chosen), tuple(left_out))


def _decided_at_start(spec: flags.FlagSpec) -> bool:
    """A tuning knob with no default (a number, or one of a few choices): SGLang sets it
    from the GPU and the model when it is not given. A free-text setting (a path, a
    key, a name) with no default stays unset instead."""
    return spec.default is None and (spec.type in ("int", "float") or bool(spec.choices))


def _exact_flag(field: str, framework: str) -> flags.FlagHit | None:
    """The flag a printed field names: exactly one of its spellings, never a prefix
    (argparse's abbreviations are for typing, and an internal field is no flag)."""
    hit = flags.lookup(field, framework)
    if hit is None or hit.negated:
        return None
    spellings = {hit.spec.name, *hit.spec.aliases, *(old for old, _ in hit.spec.renamed)}
    return hit if flags.flag_key(field) in {flags.flag_key(s) for s in spellings} else None


def _literal(raw: str) -> Any:
    """A printed value as Python reads it; what is no literal (torch.bfloat16, an
    object's repr) stays text."""
    try:
        return ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return flags.python_value(raw)


def _is_default(value: Any, default: str | None) -> bool:
    if default is None:
        return False
    if isinstance(value, bool):
        return default.lower() == str(value).lower()
    if isinstance(value, (int, float)):
        try:
            return float(default) == float(value)
        except ValueError:
            return False
    if isinstance(value, (list, tuple, set, dict)):
        try:
            loaded = json.loads(default)
        except ValueError:
            return False
        return bool(loaded == (list(value) if not isinstance(value, dict) else value))
    return str(value) == default


def _as_flag_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    return str(value)


# ---------------------------------------------------------------- reading printouts


def _pairs(text: str, start: int = 0, closer: str | None = None) -> tuple[tuple[str, str], ...]:
    """`a='x', b=[1, 2], 'c': 3` -> (("a", "'x'"), ("b", "[1, 2]"), ("c", "3")): the
    printout from `start` to the bracket `closer` that closes it (the text's end when
    None). Where a printout was cut short, its last value may be cut too: it is not taken."""
    parts, closed = _top_level_parts(text, start, closer)
    pairs = []
    for part in parts if closed else parts[:-1]:
        found = re.match(r"\s*['\"]?([A-Za-z_][\w.]*)['\"]?\s*(?:=|:)\s*(.*)$", part, re.S)
        if found:
            pairs.append((found.group(1), found.group(2).strip()))
    return tuple(pairs)


def _top_level_parts(text: str, start: int, closer: str | None) -> tuple[list[str], bool]:
    """The comma-separated parts outside brackets and quotes, and whether `closer` ended
    them (no closer: the text's end does)."""
    parts: list[str] = []
    depth, quote, part_start = 0, "", start
    end = min(len(text), start + MAX_DUMP_CHARS)
    for i in range(start, end):
        char = text[i]
        if quote:
            quote = "" if char == quote and text[i - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0 and char == closer:
                return [*parts, text[part_start:i]], True
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[part_start:i])
            part_start = i + 1
    return [*parts, text[part_start:end]], closer is None


__all__ = [
    "SettingsDump",
    "VLLM_FIELDS",
    "engine_calls",
    "is_engine_call",
    "rebuilt_command",
    "settings_dumps",
    "stated_settings",
]
