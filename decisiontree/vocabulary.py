"""The built-in vocabulary: GPUs, model families, quantizations; flags and launches by proxy.

Everything people write about a deployment, in many spellings, is mapped here
to one canonical form: "RTX PRO 6000" -> the nvidia-smi name and `sm_120`;
"GLM-5-NVFP4" -> glm / nvfp4. Flags (`--nsa-decode-backend` -> `dsa-decode-backend`)
live in `decisiontree.flags` and launch commands in `decisiontree.launch`; a
`Vocabulary` hands their lookups on, so a reader that takes a vocabulary needs
only one object. The data lives in `decisiontree/data/*.json` and is loaded once
(`load()`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from decisiontree import flags, launch
from decisiontree.flags import FRAMEWORKS, CrossAlias, FlagSpec
from decisiontree.launch import LaunchCommand
from decisiontree.versions import sort_key

DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Gpu:
    name: str  # as nvidia-smi prints it
    arch: str  # "sm_120"
    compute_capability: str  # "12.0"
    family: str  # "Blackwell"
    memory_gb: float | None


@dataclass(frozen=True)
class ModelInfo:
    name: str
    family: str | None
    arch: str | None  # config.json model_type, e.g. "glm_moe_dsa"
    quantization: str | None  # canonical: nvfp4, mxfp4, fp8, awq, gptq, int4, ...
    parameters: float | None = None  # billions, all experts counted; None: not known


@dataclass(frozen=True)
class _ModelFamily:
    family: str
    arch: str
    classes: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    native_quantization: str | None


@dataclass(frozen=True)
class _StatedSize:
    """A model line's total parameter count, as its model card states it (models.json)."""

    pattern: re.Pattern[str]
    parameters: float  # billions, every expert counted
    native_quantization: str | None  # the precision the line is published in
    name_counts_active: bool  # the count in its names is what a token uses, not the total


# ---------------------------------------------------------------- text helpers

_GPU_NOISE = {"nvidia", "geforce", "tesla", "quadro"}
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "sixteen": 16,
    "single": 1, "dual": 2, "quad": 4,
}  # fmt: skip


def gpu_key(text: str) -> str:
    """Lowercase tokens without vendor words: "NVIDIA A100-SXM4-80GB" -> "a100 sxm4 80gb"."""
    text = re.sub(r"(\d)\s+(gb|g)\b", r"\1\2", text.lower())
    tokens = re.findall(r"[a-z0-9.]+", text.replace("_", " "))
    return " ".join(t for t in tokens if t not in _GPU_NOISE)


def _number(word: str) -> int | None:
    """ "8" or "eight"; `_count_before` has already set the x of "8x" apart ("six" keeps its x)."""
    return int(word) if word.isdigit() else _NUMBER_WORDS.get(word.lower())


def _alias_pattern(key: str) -> str:
    """Regex for a gpu_key: tokens may be joined by spaces, hyphens or underscores."""
    parts = []
    for token in key.split(" "):
        size = re.fullmatch(r"(\d+)(gb|g)", token)
        parts.append(rf"{size.group(1)}\s*gb?" if size else re.escape(token))
    return r"[\s_-]*".join(parts)


# ---------------------------------------------------------------- the vocabulary


class Vocabulary:
    """Lookups over the built-in data. Build with `load()`; it is immutable and cached."""

    def __init__(
        self,
        gpus: list[dict[str, Any]],
        arch_names: Mapping[str, str],
        models: Mapping[str, Any],
        cuda_releases: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self._gpus = tuple(_gpu_from(g) for g in gpus)
        self._gpu_keys = _gpu_index(gpus, self._gpus)
        self._gpu_regex = _gpu_regex(self._gpu_keys)
        # The regex lets a name's words run together ("rtx4060ti"): found by its letters.
        self._joined_keys = {key.replace(" ", ""): gpu for key, gpu in self._gpu_keys.items()}
        self.arch_names: Mapping[str, str] = dict(arch_names)
        releases = cuda_releases or {}
        self._cuda_first: Mapping[str, str] = dict(releases.get("first", {}))
        self._cuda_last: Mapping[str, str] = dict(releases.get("last", {}))
        self.latest_versions: Mapping[str, str] = {
            fw: version for fw in FRAMEWORKS if (version := flags.latest_version(fw))
        }
        self._families = tuple(_family_from(row) for row in models["families"])
        self._stated_sizes = tuple(
            _StatedSize(
                re.compile(row["pattern"], re.I),
                float(row["parameters_b"]),
                row.get("native_quantization"),
                row.get("name_counts") == "active",
            )
            for row in models["stated_sizes"]
        )
        self._quantizations: dict[str, str] = {
            alias: row["name"] for row in models["quantizations"] for alias in row["aliases"]
        }
        self._quantization_bits: dict[str, float | None] = {
            row["name"]: row.get("bits") for row in models["quantizations"]
        }
        # The weights estimate's uncertainty band (models.json says why).
        self.weights_fit_band: float = float(models["weights"]["fit_band"])

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

    def mentions_gpu(self, text: str) -> bool:
        """Whether any GPU name or alias stands in the text (a cheap test before lookups)."""
        return self._gpu_regex.search(text) is not None

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
            key = gpu_key(match.group("gpu"))
            gpu = self._gpu_keys.get(key) or self._joined_keys.get(key.replace(" ", ""))
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

    def cuda_range(self, arch: str) -> tuple[str | None, str | None]:
        """The CUDA releases whose compiler builds machine code that runs on `arch`: (the
        first, the last), None where no bound is known. Machine code runs on the GPUs of
        its major version from its minor up (sm_121 runs sm_120's, so CUDA 12.8 builds
        for it; sm_89 runs sm_80's, so any CUDA does)."""
        if capability_of(arch) is None:
            return None, None
        runs = [name for name in self.arch_names if machine_code_runs(name, arch)]
        firsts = [self._cuda_first.get(name) for name in runs or [arch]]
        first = None if None in firsts else min(firsts, key=sort_key)  # type: ignore[arg-type]
        return first, self._cuda_last.get(arch)

    # ---- flags and launch commands (see decisiontree.flags and decisiontree.launch)

    def flag(self, name: str, framework: str | None = None) -> FlagSpec | None:
        return flags.flag(name, framework)

    def flags_of(self, framework: str) -> tuple[FlagSpec, ...]:
        return flags.flags_of(framework)

    def spell(self, canonical: str, framework: str, version: str | None) -> str:
        return flags.spell(canonical, framework, version)

    def equivalent_flag(self, name: str, source: str, target: str) -> CrossAlias | None:
        return flags.equivalent_flag(name, source, target)

    def flags_in_text(
        self, text: str, framework: str | None = None
    ) -> list[tuple[str, str | None]]:
        return flags.flags_in_text(text, framework)

    def parse_launch_command(self, cmd: str) -> LaunchCommand:
        return launch.parse_launch_command(cmd)

    # ---- models

    def model_info(self, text: str) -> ModelInfo | None:
        """Family, architecture, quantization and parameter count of a repo id, path, name
        or arch id."""
        text = text.strip().rstrip("/")
        if not text:
            return None
        family = self._family(text)
        quantization = self.quantization(text)
        name = _model_name(text)
        parameters = parameters_in_name(name)
        # An architecture id or class ("DeepseekV3ForCausalLM") names no one model line.
        stated = None if self._names_architecture(text) else self._stated_size(text)
        native = family.native_quantization if family else None
        if stated and (parameters is None or stated.name_counts_active):
            parameters, native = stated.parameters, stated.native_quantization or native
        if family is None and quantization is None and parameters is None:
            return None
        return ModelInfo(
            name=name,
            family=family.family if family else None,
            arch=family.arch if family else None,
            quantization=quantization or native,
            parameters=parameters,
        )

    def model_classes(self, arch: str) -> tuple[str, ...]:
        """The model classes (config.json architectures[]) of a model_type: "deepseek_v3" ->
        ("DeepseekV3ForCausalLM",); () where the vocabulary does not know it."""
        lowered = arch.strip().lower()
        return next((f.classes for f in self._families if f.arch == lowered), ())

    def _names_architecture(self, text: str) -> bool:
        lowered = text.lower()
        return any(
            lowered == f.arch or any(c.lower() == lowered for c in f.classes)
            for f in self._families
        )

    def _stated_size(self, text: str) -> _StatedSize | None:
        lowered = text.lower()
        return next((s for s in self._stated_sizes if s.pattern.search(lowered)), None)

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

    def quantization_bits(self, quantization: str) -> float | None:
        """Bits one weight takes in a quantization, scales included (models.json); None
        for a format of several widths, or one the data does not know."""
        return self._quantization_bits.get(self.quantization(quantization) or quantization)


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
    """Every alias, longest first, behind optional vendor words.

    The aliases are grouped by their first character: at a position only one group can
    match, so the engine tries a handful of aliases there instead of all of them (7x
    faster over a 2 MB log, bench/log_speed.py). Longest-first holds within each group,
    which is all that order decides.
    """
    groups: dict[str, list[str]] = {}
    for key in sorted(index, key=len, reverse=True):
        groups.setdefault(key[0], []).append(_alias_pattern(key))
    alternatives = "|".join(f"(?:{'|'.join(group)})" for group in groups.values())
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


# Chinese counts cards with a measure word after the number: "4 张 A100", "8卡 H100".
_MEASURE_WORD = "[张块卡台]"


def _count_before(before: str) -> int | None:
    """ "8x ", "8 x ", "2× ", "eight ", "4 张 " right before a GPU name."""
    found = re.search(
        rf"(?:^|[\s(,:，：])([0-9]{{1,3}}|[A-Za-z]+)\s*(?:[x×*]\s*|{_MEASURE_WORD}\s*)?$", before
    )
    if not found:
        return None
    word = found.group(1)
    counted = re.search(rf"(?:[x×*]|{_MEASURE_WORD})\s*$", before)
    if word.isdigit() and not counted and not before.endswith(" "):
        return None
    count = _number(word)
    return count if count and count <= 1024 else None


def _count_after(after: str) -> int | None:
    """ "H100 x 8", "H100 ×8", "H100 (x8)", "A100 4张"."""
    found = re.match(rf"\s*\(?\s*(?:[x×*]\s*(\d{{1,3}})\b|(\d{{1,3}})\s*{_MEASURE_WORD})", after)
    return int(found.group(1) or found.group(2)) if found else None


def _family_from(row: Mapping[str, Any]) -> _ModelFamily:
    return _ModelFamily(
        family=row["family"],
        arch=row["arch"],
        classes=tuple(row.get("classes", ())),
        patterns=tuple(re.compile(p, re.I) for p in row["patterns"]),
        native_quantization=row.get("native_quantization"),
    )


# A parameter count as model names write it: "70B", "0.5b", "235B" of "Qwen3-235B-A22B".
# Not "A22B" (the experts active per token: all of them are held) nor "8x7B" (experts
# share their attention, so the product overstates), both glued to a letter before them.
_PARAMETERS = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)[bB](?![A-Za-z0-9])")


def capability_of(arch: str | None) -> str | None:
    """The compute capability an architecture id stands for: "sm_120" -> "12.0",
    "sm_89" -> "8.9" (the inverse of `Vocabulary.arch_from_capability`)."""
    found = re.fullmatch(r"sm_(\d+)(\d)", arch or "")
    return f"{found.group(1)}.{found.group(2)}" if found else None


def machine_code_runs(built: str, arch: str) -> bool:
    """Whether machine code built for `built` runs on a GPU of `arch`: the same major
    version, a minor not above the GPU's ("sm_120" on "sm_121", "sm_80" on "sm_89")."""
    have, want = capability_of(built), capability_of(arch)
    if have is None or want is None:
        return False
    (major, minor), (gpu_major, gpu_minor) = (c.split(".") for c in (have, want))
    return major == gpu_major and int(minor) <= int(gpu_minor)


def parameters_in_name(name: str) -> float | None:
    """Billions of parameters a model name states ("Llama-3.1-70B-Instruct" -> 70.0);
    the largest where it states several (a vision tower's beside the model's)."""
    counts = [float(m[1]) for m in _PARAMETERS.finditer(name.rstrip("/").rsplit("/", 1)[-1])]
    return max(counts) if counts and max(counts) > 0 else None


def _model_name(text: str) -> str:
    """A repo id stays as is; a local path or a phrase gives its model-looking token."""
    token = next((t for t in text.split() if "/" in t or "-" in t), text.split()[0])
    token = token.strip("'\",;()")
    if token.startswith(("/", "~", ".")):
        return token.rstrip("/").rsplit("/", 1)[-1]
    return token


def _read(name: str) -> Any:
    return json.loads((DATA_DIR / name).read_text(encoding="utf-8"))


@cache
def load() -> Vocabulary:
    """The vocabulary built from the bundled data files (read once per process)."""
    gpus = _read("gpus.json")
    return Vocabulary(
        gpus=gpus["gpus"],
        arch_names=gpus["arch_names"],
        models=_read("models.json"),
        cuda_releases=gpus["cuda_releases"],
    )


__all__ = [
    "capability_of",
    "CrossAlias",
    "FlagSpec",
    "Gpu",
    "LaunchCommand",
    "ModelInfo",
    "Vocabulary",
    "gpu_key",
    "load",
    "machine_code_runs",
]
