"""The built-in vocabulary: GPUs, launch flags, model families, quantizations.

Everything people write about a deployment, in many spellings, is mapped here
to one canonical form: "RTX PRO 6000" -> the nvidia-smi name and `sm_120`;
`--nsa-decode-backend` -> `dsa-decode-backend`; "GLM-5-NVFP4" -> glm / nvfp4.
The data lives in `decisiontree/data/*.json` and is loaded once (`load()`).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"
FRAMEWORKS = ("sglang", "vllm")


@dataclass(frozen=True)
class Gpu:
    name: str  # as nvidia-smi prints it
    arch: str  # "sm_120"
    compute_capability: str  # "12.0"
    family: str  # "Blackwell"
    memory_gb: float | None


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


@dataclass(frozen=True)
class LaunchCommand:
    framework: str | None
    model: str | None
    flags: Mapping[str, str]  # canonical name -> value as launched ("true" for bare booleans)
    unknown_flags: tuple[str, ...]  # as written, e.g. "--nsa-foo"
    env: Mapping[str, str]  # VAR=value prefixes, `export`, `docker -e`


@dataclass(frozen=True)
class ModelInfo:
    name: str
    family: str | None
    arch: str | None  # config.json model_type, e.g. "glm_moe_dsa"
    quantization: str | None  # canonical: nvfp4, mxfp4, fp8, awq, gptq, int4, ...


@dataclass(frozen=True)
class CrossAlias:
    concept: str
    sglang: str
    vllm: str
    relation: str  # "same" | "approximate"


@dataclass(frozen=True)
class _ModelFamily:
    family: str
    arch: str
    classes: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    native_quantization: str | None


@dataclass(frozen=True)
class _FlagHit:
    spec: FlagSpec
    negated: bool


# ---------------------------------------------------------------- text helpers

_GPU_NOISE = {"nvidia", "geforce", "tesla", "quadro"}
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "sixteen": 16,
    "single": 1, "dual": 2, "quad": 4,
}  # fmt: skip
_VALUE_STOPWORDS = {
    "and", "or", "to", "the", "a", "an", "is", "was", "were", "with", "but", "in", "on",
    "for", "of", "flag", "option", "which", "that", "this", "it", "as", "by", "from", "not",
    "so", "then", "when", "if", "still", "also", "only", "too", "are", "be", "has", "had",
}  # fmt: skip


def gpu_key(text: str) -> str:
    """Lowercase tokens without vendor words: "NVIDIA A100-SXM4-80GB" -> "a100 sxm4 80gb"."""
    text = re.sub(r"(\d)\s+(gb|g)\b", r"\1\2", text.lower())
    tokens = re.findall(r"[a-z0-9.]+", text.replace("_", " "))
    return " ".join(t for t in tokens if t not in _GPU_NOISE)


def flag_key(name: str) -> str:
    """`--KV_Cache_Dtype` -> "kv-cache-dtype"; a single-dash short form keeps its dash."""
    name = name.strip().strip("'\"")
    if re.fullmatch(r"-[A-Za-z]\w*", name):
        return name.lower()
    return name.lstrip("-").lower().replace("_", "-")


def version_tuple(version: str) -> tuple[int, ...]:
    """ "v0.5.9.post1" -> (0, 5, 9); unparseable -> ()."""
    found = re.search(r"\d+(?:\.\d+)*", version)
    return tuple(int(p) for p in found.group(0).split(".")) if found else ()


def _number(word: str) -> int | None:
    word = word.lower().rstrip("x×")
    if word.isdigit():
        return int(word)
    return _NUMBER_WORDS.get(word)


def _alias_pattern(key: str) -> str:
    """Regex for a gpu_key: tokens may be joined by spaces, hyphens or underscores."""
    parts = []
    for token in key.split(" "):
        size = re.fullmatch(r"(\d+)(gb|g)", token)
        parts.append(rf"{size.group(1)}\s*gb?" if size else re.escape(token))
    return r"[\s_-]*".join(parts)


# ---------------------------------------------------------------- launch-command helpers

_ENTRY_POINTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("sglang", re.compile(r"^(?:sglang\.launch_server|sglang_router\.launch_server)$")),
    ("sglang", re.compile(r"sglang/launch_server\.py$")),
    ("vllm", re.compile(r"^vllm\.entrypoints\.(?:openai\.)?api_server$")),
    ("vllm", re.compile(r"vllm/entrypoints/(?:openai/)?api_server\.py$")),
)
_SERVE_CLIS = {"sglang": "sglang", "vllm": "vllm"}
_DOCKER_IMAGES = (("vllm", re.compile(r"^vllm/vllm-openai(?::\S+)?$")),)
_CONTROL = {";", "&&", "||", "|", "&"}
# "> log", "2>&1", "&> out", "< in": where output goes says nothing about the server.
_REDIRECT = re.compile(r"(?<![\w=-])\d?(?:>>?|&>|<)(?:&\d|\s*[^\s;&|<>]+)")
_ENV_ASSIGN = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$", re.S)
_NUMERIC = re.compile(r"^-?\d+(?:\.\d+)?(?:e-?\d+)?$")
_BOOL_WORDS = {"true": "true", "false": "false", "1": "true", "0": "false"}


def _shell_tokens(cmd: str) -> list[str]:
    """Split like a shell would, keeping control operators (`;`, `&&`, `|`, `&`) apart."""
    cmd = re.sub(r"\\\r?\n", " ", cmd)
    cmd = re.sub(r"^\s*[$#>]\s+", "", cmd, flags=re.M)  # prompt characters of a pasted session
    cmd = _REDIRECT.sub(" ", cmd)
    lexer = shlex.shlex(cmd, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quote in a truncated paste
        return cmd.split()


def _find_entry(tokens: list[str]) -> tuple[str, int] | None:
    """(framework, index of the first argument) of the server entry point, if any."""
    for i, token in enumerate(tokens):
        for framework, pattern in _ENTRY_POINTS:
            if pattern.search(token):
                return framework, i + 1
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        base = token.rsplit("/", 1)[-1]
        if base in _SERVE_CLIS and nxt == "serve":
            return _SERVE_CLIS[base], i + 2
        for framework, pattern in _DOCKER_IMAGES:
            if pattern.match(token):
                return framework, i + 1
    return None


def _env_assignments(tokens: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for token in tokens:
        found = _ENV_ASSIGN.match(token)
        if found:
            env[found.group(1)] = found.group(2)
    return env


def _args_until_control(tokens: list[str]) -> list[str]:
    args: list[str] = []
    for token in tokens:
        if token in _CONTROL:
            break
        args.append(token)
    return args


def _is_option(token: str) -> bool:
    return token.startswith("-") and len(token) > 1 and not _NUMERIC.match(token)


def _bool_value(word: str) -> str | None:
    return _BOOL_WORDS.get(word.lower())


def _clean_value(raw: str) -> str | None:
    """A value from a Python repr or prose: quotes off, True/False/None normalised."""
    raw = raw.strip().rstrip(",;")
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    if raw in ("None", "null", ""):
        return None
    if raw in ("True", "False"):
        return raw.lower()
    return raw.removeprefix("torch.")  # vLLM prints dtype=torch.bfloat16


# ---------------------------------------------------------------- the vocabulary


class Vocabulary:
    """Lookups over the built-in data. Build with `load()`; it is immutable and cached."""

    def __init__(
        self,
        gpus: list[dict[str, Any]],
        arch_names: Mapping[str, str],
        flags: Mapping[str, list[dict[str, Any]]],
        latest_versions: Mapping[str, str],
        cross_aliases: list[dict[str, str]],
        models: Mapping[str, Any],
    ) -> None:
        self._gpus = tuple(_gpu_from(g) for g in gpus)
        self._gpu_keys = _gpu_index(gpus, self._gpus)
        self._gpu_regex = _gpu_regex(self._gpu_keys)
        self.arch_names: Mapping[str, str] = dict(arch_names)
        self.latest_versions: Mapping[str, str] = dict(latest_versions)
        self._flags = {fw: tuple(_flag_from(fw, f) for f in rows) for fw, rows in flags.items()}
        self._flag_index = {fw: _flag_index(specs) for fw, specs in self._flags.items()}
        self.cross_aliases = tuple(CrossAlias(**row) for row in cross_aliases)
        self._families = tuple(_family_from(row) for row in models["families"])
        self._quantizations: dict[str, str] = {
            alias: row["name"] for row in models["quantizations"] for alias in row["aliases"]
        }

    # ---- GPUs

    @property
    def gpus(self) -> tuple[Gpu, ...]:
        return self._gpus

    def gpu(self, text: str) -> Gpu | None:
        """The GPU a name or short name means: "rtx pro 6000", "NVIDIA_H100_80GB_HBM3", "H200".

        A bare architecture ("sm_120") names no single GPU: None (see `arch_of`).
        """
        key = gpu_key(text)
        if key in self._gpu_keys:
            return self._gpu_keys[key]
        found = self._gpu_mentions(text, strict=False)
        return next(found, (None, 0, 0))[0]

    def gpu_named(self, text: str) -> Gpu | None:
        """Exact lookup only (an nvidia-smi name or a listed short name); no searching."""
        return self._gpu_keys.get(gpu_key(text))

    def gpus_in_text(self, text: str) -> list[tuple[Gpu, int]]:
        """GPUs mentioned in prose with how many: "8x NVIDIA RTX PRO 6000 Blackwell" -> 8.

        A GPU mentioned several times keeps its largest count. Bare model numbers
        ("4090") count only next to a GPU word or a count ("2x 4090", "4090 GPUs").
        """
        counts: dict[str, int] = {}
        order: dict[str, Gpu] = {}
        for gpu, count, _ in self._gpu_mentions(text, strict=True):
            order.setdefault(gpu.name, gpu)
            counts[gpu.name] = max(counts.get(gpu.name, 0), count)
        return [(gpu, counts[name]) for name, gpu in order.items()]

    def _gpu_mentions(self, text: str, *, strict: bool) -> Iterator[tuple[Gpu, int, int]]:
        for match in self._gpu_regex.finditer(text):
            gpu = self._gpu_keys.get(gpu_key(match.group("gpu")))
            if gpu is None:
                continue
            # A count sits right next to the name: look a few words around it, not at the
            # whole text (slicing all of it per mention made long documents quadratic).
            before = text[max(0, match.start() - _COUNT_WINDOW) : match.start()]
            after = text[match.end() : match.end() + _COUNT_WINDOW]
            count = _count_before(before) or _count_after(after)
            if strict and count is None and _bare_number(match, after):
                continue  # "4090" alone is as likely a port or a duration as a GPU
            yield gpu, count or 1, match.start()

    def arch_of(self, text: str) -> str | None:
        """ "sm120", "SM 120", "sm_120a", "compute capability 12.0", a GPU name -> "sm_120"."""
        found = re.search(r"(?<![A-Za-z0-9])sm[\s_]?(\d{2,3})[af]?(?![0-9])", text, re.I)
        if found and f"sm_{found.group(1)}" in self.arch_names:
            return f"sm_{found.group(1)}"
        found = re.search(
            r"(?:compute[\s_]*cap(?:ability)?|capability|cc)\s*[:=]?\s*\(?(\d{1,2})\s*[.,]\s*(\d)",
            text,
            re.I,
        )
        if found and f"sm_{found.group(1)}{found.group(2)}" in self.arch_names:
            return f"sm_{found.group(1)}{found.group(2)}"
        gpu = self.gpu(text)
        return gpu.arch if gpu else None

    def arch_from_capability(self, capability: str) -> str | None:
        """ "9.0" -> "sm_90"; anything else -> None."""
        found = re.fullmatch(r"\s*(\d{1,2})\.(\d)\s*", capability)
        arch = f"sm_{found.group(1)}{found.group(2)}" if found else None
        return arch if arch in self.arch_names else None

    # ---- flags

    def flag(self, name: str, framework: str | None = None) -> FlagSpec | None:
        """The flag any spelling means: "kv_cache_dtype", "--nsa-decode-backend", "-tp"."""
        hit = self._flag_hit(name, framework)
        return hit.spec if hit else None

    def canonical_flag(self, name: str, framework: str | None = None) -> str | None:
        spec = self.flag(name, framework)
        return spec.name if spec else None

    def flags_of(self, framework: str) -> tuple[FlagSpec, ...]:
        return self._flags.get(framework, ())

    def _flag_hit(self, name: str, framework: str | None) -> _FlagHit | None:
        key = flag_key(name)
        frameworks = (framework,) if framework else FRAMEWORKS
        # Without a framework, a canonical name anywhere beats an alias elsewhere:
        # "tensor-parallel-size" is vLLM's own name but only an alias in SGLang.
        for fw in frameworks:
            spec = next((s for s in self._flags.get(fw, ()) if s.name == key), None)
            if spec:
                return _FlagHit(spec, negated=False)
        for fw in frameworks:
            hit = self._flag_index.get(fw, {}).get(key)
            if hit:
                return hit
        for fw in frameworks:
            hit = self._prefix_hit(key, fw)
            if hit:
                return hit
        return None

    def _prefix_hit(self, key: str, framework: str) -> _FlagHit | None:
        """argparse accepts a unique prefix of a long option: SGLang's `--tp 8` is `--tp-size`."""
        if len(key) < 2 or key.startswith("-"):
            return None
        index = self._flag_index.get(framework, {})
        specs = {hit.spec for k, hit in index.items() if k.startswith(key) and not hit.negated}
        return _FlagHit(specs.pop(), negated=False) if len(specs) == 1 else None

    def spell(self, canonical: str, framework: str, version: str | None) -> str:
        """How to write a flag for a release: "--nsa-decode-backend" for sglang 0.5.9,
        "--dsa-decode-backend" for 0.5.23 or an unknown version (newest)."""
        spec = self.flag(canonical, framework)
        if spec is None:
            return "--" + flag_key(canonical)
        wanted = version_tuple(version) if version else ()
        if wanted:
            # The oldest rename whose old name was still in use at `version`.
            older = [(version_tuple(last), old) for old, last in spec.renamed]
            fitting = sorted(pair for pair in older if wanted <= pair[0])
            if fitting:
                return "--" + fitting[0][1]
        return "--" + spec.name

    def equivalent_flag(self, canonical: str, source: str, target: str) -> CrossAlias | None:
        """The cross-framework row for a flag: sglang `tp-size` <-> vllm `tensor-parallel-size`."""
        name = self.canonical_flag(canonical, source)
        for row in self.cross_aliases:
            if name and getattr(row, source) == name:
                return row
        return None

    # ---- launch commands

    def parse_launch_command(self, cmd: str) -> LaunchCommand:
        """Flags, model and environment of a server launch, however it was pasted."""
        tokens = _shell_tokens(cmd)
        nested = self._nested_command(tokens)
        if nested is not None:
            return nested
        entry = _find_entry(tokens)
        if entry is None:
            return self._parse_bare_flags(tokens)
        framework, start = entry
        env = _env_assignments(tokens[:start])
        args = _args_until_control(tokens[start:])
        return self._parse_args(args, framework, env)

    def _nested_command(self, tokens: list[str]) -> LaunchCommand | None:
        """`ssh host '...'` and `bash -c "..."`: the server command is one quoted token."""
        if _find_entry(tokens) is not None and not any(" " in t for t in tokens):
            return None
        for i, token in enumerate(tokens):
            if " " in token and _find_entry(_shell_tokens(token)):
                inner = self.parse_launch_command(token)
                outer_env = _env_assignments(tokens[:i])
                return LaunchCommand(
                    inner.framework, inner.model, inner.flags, inner.unknown_flags,
                    {**outer_env, **inner.env},
                )  # fmt: skip
        return None

    def _parse_bare_flags(self, tokens: list[str]) -> LaunchCommand:
        """No entry point: pick the framework whose vocabulary knows more of the flags."""
        start = next((i for i, t in enumerate(tokens) if _is_option(t)), len(tokens))
        env = _env_assignments(tokens[:start])
        args = _args_until_control(tokens[start:])
        parsed = {fw: self._parse_args(args, fw, env) for fw in FRAMEWORKS}
        sglang, vllm = parsed["sglang"], parsed["vllm"]
        if len(sglang.unknown_flags) == len(vllm.unknown_flags):
            return LaunchCommand(None, sglang.model, sglang.flags, sglang.unknown_flags, env)
        return min(parsed.values(), key=lambda p: len(p.unknown_flags))

    def _parse_args(self, args: list[str], framework: str, env: dict[str, str]) -> LaunchCommand:
        flags: dict[str, str] = {}
        unknown: list[str] = []
        positional: list[str] = []
        i = 0
        while i < len(args):
            token = args[i]
            if not _is_option(token):
                positional.append(token)
                i += 1
                continue
            i = self._read_option(args, i, framework, flags, unknown)
        model = flags.get("model-path") or flags.get("model")
        if model is None and framework == "vllm" and positional:
            model = positional[0]
        return LaunchCommand(framework, model, flags, tuple(unknown), env)

    def _read_option(
        self, args: list[str], i: int, framework: str, flags: dict[str, str], unknown: list[str]
    ) -> int:
        """Store the option at args[i] (and its value); return the index after them."""
        name, eq, inline = args[i].partition("=")
        base, dot, sub = name.partition(".") if name.startswith("-") else (name, "", "")
        hit = self._flag_hit(base, framework)
        values, j = ([inline], i + 1) if eq else _following_values(args, i + 1)
        if hit is None:
            unknown.append(name)
            return j
        key = hit.spec.name + (f".{sub}" if dot else "")
        if hit.spec.type == "bool" and not eq:
            explicit = _bool_value(values[0]) if values else None
            value = explicit or "true"
            j = i + 2 if explicit else i + 1
        else:
            value = " ".join(values) if values else "true"
        if hit.negated:
            value = "false" if value == "true" else "true" if value == "false" else value
        flags[key] = value
        return j

    # ---- flags in prose and logs

    def flags_in_text(
        self, text: str, framework: str | None = None
    ) -> list[tuple[str, str | None]]:
        """Known flags mentioned in prose or logs, as (canonical, value or None).

        Sees `--flag value`, `--flag=value`, "set --flag to 0.88", "-tp 8" and
        Python-style `flag_name='value'` (server_args= and config dumps). A bare
        boolean mention has value None; its negated spelling (`--no-x`) gives "false".
        """
        found: list[tuple[int, str, str | None]] = []
        found += self._dashed_flags(text, framework)
        found += self._keyword_flags(text, framework)
        seen: dict[tuple[str, str | None], int] = {}
        for position, name, value in sorted(found, key=lambda f: f[0]):
            seen.setdefault((name, value), position)
        return list(seen)

    def _dashed_flags(self, text: str, framework: str | None) -> list[tuple[int, str, str | None]]:
        found = []
        pattern = r"(?<![\w/.-])(--[A-Za-z][\w-]*[A-Za-z0-9]|-(?:tp|pp|dp|ep|cc|ac))(=\S+)?"
        for match in re.finditer(pattern, text):
            hit = self._flag_hit(match.group(1), framework)
            if hit is None:
                continue
            raw = match.group(2)[1:] if match.group(2) else _value_in_prose(text[match.end() :])
            found.append((match.start(), hit.spec.name, _checked_value(hit, raw)))
        return found

    def _keyword_flags(self, text: str, framework: str | None) -> list[tuple[int, str, str | None]]:
        found = []
        value = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|\{[^}]*\}|[^\s,(){}\[\]=]+"
        pattern = rf"(?<![\w.-])['\"]?([a-z][a-z0-9]*_[a-z0-9_]+)['\"]?\s*(?:=|:\s)\s*({value})"
        for match in re.finditer(pattern, text):
            hit = self._flag_hit(match.group(1), framework)
            if hit is None:
                continue
            cleaned = _clean_value(match.group(2))
            found.append((match.start(), hit.spec.name, cleaned))
        return found

    # ---- models

    def model_info(self, text: str) -> ModelInfo | None:
        """Family, architecture and quantization of a repo id, path, name or arch id."""
        text = text.strip().rstrip("/")
        if not text:
            return None
        family = self._family(text)
        quantization = self.quantization(text)
        if family is None and quantization is None:
            return None
        if quantization is None and family is not None:
            quantization = family.native_quantization
        return ModelInfo(
            name=_model_name(text),
            family=family.family if family else None,
            arch=family.arch if family else None,
            quantization=quantization,
        )

    def _family(self, text: str) -> _ModelFamily | None:
        lowered = text.lower()
        for family in self._families:
            if lowered == family.arch or any(c.lower() in lowered for c in family.classes):
                return family
        for family in self._families:
            if any(p.search(lowered) for p in family.patterns):
                return family
        return None

    def quantization(self, text: str) -> str | None:
        """Canonical quantization in text: "GLM-5-NVFP4" and "modelopt_fp4" -> "nvfp4"."""
        lowered = text.lower()
        if lowered in self._quantizations:
            return self._quantizations[lowered]
        tokens = set(re.split(r"[^a-z0-9_]+", lowered)) | set(re.split(r"[^a-z0-9]+", lowered))
        for alias, name in self._quantizations.items():
            if alias in tokens:
                return name
        return None


# ---------------------------------------------------------------- construction


def _gpu_from(row: Mapping[str, Any]) -> Gpu:
    memory = row.get("memory_gb")
    return Gpu(
        name=row["name"],
        arch=row["arch"],
        compute_capability=row["compute_capability"],
        family=row["family"],
        memory_gb=float(memory) if memory is not None else None,
    )


def _gpu_index(rows: list[dict[str, Any]], gpus: tuple[Gpu, ...]) -> dict[str, Gpu]:
    """gpu_key -> Gpu; exact nvidia-smi names win over the short names people type."""
    index: dict[str, Gpu] = {}
    for row, gpu in zip(rows, gpus, strict=True):
        for alias in row.get("aliases", []):
            index.setdefault(gpu_key(alias), gpu)
    for gpu in gpus:
        index[gpu_key(gpu.name)] = gpu
    return index


def _gpu_regex(index: Mapping[str, Gpu]) -> re.Pattern[str]:
    alternatives = "|".join(_alias_pattern(k) for k in sorted(index, key=len, reverse=True))
    vendor = r"(?P<vendor>(?:nvidia|geforce|tesla|quadro)[\s_-]+)*"
    return re.compile(
        rf"(?<![A-Za-z0-9.]){vendor}(?P<gpu>{alternatives})(?:s)?(?![A-Za-z0-9]|\.\d)", re.I
    )


def _bare_number(match: re.Match[str], after: str) -> bool:
    """A model number with no vendor word before it and no GPU word after it."""
    if not match.group("gpu").strip().isdigit() or match.group("vendor"):
        return False
    return not re.match(r"s?\s*(?:gpus?|cards?)\b", after, re.I)


_COUNT_WINDOW = 48


def _count_before(before: str) -> int | None:
    """ "8x ", "8 x ", "2× ", "eight " right before a GPU name."""
    found = re.search(r"(?:^|[\s(,:])([0-9]{1,3}|[A-Za-z]+)\s*(?:[x×*]\s*)?$", before)
    if not found:
        return None
    word = found.group(1)
    if word.isdigit() and not re.search(r"[x×*]\s*$", before) and not before.endswith(" "):
        return None
    count = _number(word)
    return count if count and count <= 1024 else None


def _count_after(after: str) -> int | None:
    """ "H100 x 8", "H100 ×8", "H100 (x8)"."""
    found = re.match(r"\s*\(?\s*[x×*]\s*(\d{1,3})\b", after)
    return int(found.group(1)) if found else None


def _flag_from(framework: str, row: Mapping[str, Any]) -> FlagSpec:
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
    )


def _flag_index(specs: tuple[FlagSpec, ...]) -> dict[str, _FlagHit]:
    index: dict[str, _FlagHit] = {}
    for spec in specs:
        for alias in spec.aliases:
            index.setdefault(flag_key(alias), _FlagHit(spec, negated=False))
        for negation in spec.negations:
            index.setdefault(flag_key(negation), _FlagHit(spec, negated=True))
        if spec.type == "bool":  # BooleanOptionalAction spells the opposite `--no-<name>`
            index.setdefault("no-" + spec.name, _FlagHit(spec, negated=True))
    for spec in specs:
        index[spec.name] = _FlagHit(spec, negated=False)
    return index


def _family_from(row: Mapping[str, Any]) -> _ModelFamily:
    return _ModelFamily(
        family=row["family"],
        arch=row["arch"],
        classes=tuple(row.get("classes", ())),
        patterns=tuple(re.compile(p, re.I) for p in row["patterns"]),
        native_quantization=row.get("native_quantization"),
    )


def _model_name(text: str) -> str:
    """A repo id stays as is; a local path or a phrase gives its model-looking token."""
    token = next((t for t in text.split() if "/" in t or "-" in t), text.split()[0])
    token = token.strip("'\",;()")
    if token.startswith(("/", "~", ".")):
        return token.rstrip("/").rsplit("/", 1)[-1]
    return token


def _following_values(args: list[str], start: int) -> tuple[list[str], int]:
    """Values after an option: every non-option token (nargs='+' flags take several)."""
    values: list[str] = []
    j = start
    while j < len(args) and not _is_option(args[j]):
        values.append(args[j])
        j += 1
    return values, j


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


def _checked_value(hit: _FlagHit, raw: str | None) -> str | None:
    """Keep a prose value only when it fits the flag's type and choices."""
    if hit.spec.type == "bool":
        return "false" if hit.negated else None
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
    if hit.spec.choices:
        lowered = {c.lower(): c for c in hit.spec.choices}
        return lowered.get(value.lower())
    if hit.spec.type in ("int", "float"):
        return value if re.fullmatch(r"-?\d+(?:\.\d+)?[kKmM]?", value) else None
    return value if re.fullmatch(r"[\w./:@+-]+", value) else None


def _read(name: str) -> Any:
    return json.loads((DATA_DIR / name).read_text(encoding="utf-8"))


@cache
def load() -> Vocabulary:
    """The vocabulary built from the bundled data files (read once per process)."""
    gpus = _read("gpus.json")
    flag_files = {fw: _read(f"{fw}_flags.json") for fw in FRAMEWORKS}
    return Vocabulary(
        gpus=gpus["gpus"],
        arch_names=gpus["arch_names"],
        flags={fw: data["flags"] for fw, data in flag_files.items()},
        latest_versions={fw: data["latest_version"] for fw, data in flag_files.items()},
        cross_aliases=_read("cross_aliases.json")["aliases"],
        models=_read("models.json"),
    )


__all__ = [
    "CrossAlias",
    "FlagSpec",
    "Gpu",
    "LaunchCommand",
    "ModelInfo",
    "Vocabulary",
    "flag_key",
    "gpu_key",
    "load",
    "version_tuple",
]
