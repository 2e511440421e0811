"""Entities in text: GPUs, models, framework and package versions, launch commands, metrics."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from decisiontree.documents._vocab import ModelInfoLike, VocabularyLike
from decisiontree.documents.model import GpuMention, Metrics
from decisiontree.launch import RELEASE_IMAGE_IN_TEXT, command_at, launch_start
from decisiontree.versions import VERSION_TEXT, package_key

# -- GPUs ---------------------------------------------------------------------------------


def gpus_in(text: str, vocabulary: VocabularyLike) -> tuple[GpuMention, ...]:
    """GPU mentions merged by name; the largest count said wins ("8x H100", later "the H100")."""
    counts: dict[str, int] = {}
    arches: dict[str, str | None] = {}
    mentions: dict[str, int] = {}
    for gpu, count in (hit for chunk in _chunks(text) for hit in vocabulary.gpus_in_text(chunk)):
        counts[gpu.name] = max(count, counts.get(gpu.name, 0))
        arches[gpu.name] = gpu.arch
        mentions[gpu.name] = mentions.get(gpu.name, 0) + 1
    for name in list(counts):
        # "4x H100" and "NVIDIA H100 80GB HBM3" are one GPU: the precise name, the larger count.
        precise = [other for other in counts if other != name and other.startswith(name + " ")]
        if precise and arches[precise[0]] == arches[name]:
            counts[precise[0]] = max(counts[precise[0]], counts.pop(name))
            mentions[precise[0]] += mentions.pop(name)
    found = [GpuMention(name, arches[name], counts[name]) for name in counts]
    return tuple(_subject_hardware(found, mentions))


def _subject_hardware(found: list[GpuMention], mentions: dict[str, int]) -> list[GpuMention]:
    """The architecture the write-up is about, when others are only compared against
    ("it ran fine on our H100s"): the one deployed several at a time, then the most named."""
    weights: dict[str | None, tuple[bool, int]] = {}
    for gpu in found:
        several, named = weights.get(gpu.arch, (False, 0))
        weights[gpu.arch] = (several or gpu.count > 1, named + mentions[gpu.name])
    if len(weights) < 2:
        return found
    best = max(weights.values())
    return [gpu for gpu in found if weights[gpu.arch] == best]


_CHUNK = 4000


def _chunks(text: str) -> list[str]:
    """Paragraph-sized pieces: the vocabulary's GPU scan looks back over all text before a
    mention, so one call on a megabyte would be quadratic; GPU counts never span paragraphs."""
    pieces = []
    for paragraph in text.split("\n\n"):
        pieces += [paragraph[i : i + _CHUNK] for i in range(0, len(paragraph), _CHUNK)]
    return pieces


# -- Frameworks and packages ---------------------------------------------------------------

# "sglang 0.5.9", "vllm==0.10.2", "sglang[all]==0.4.9.post2", "lmsysorg/sglang:v0.5.4-cu129"
_FRAMEWORK_VERSION = re.compile(
    r"(?<![\w.-])(sglang|vllm|tensorrt[-_]llm|lmdeploy)(?:\[[\w,]{1,40}\])?(?![\w/-])"
    r"(?:\s*(?:==|=|:|@)\s*|\s+(?:version\s+|release\s+)?)" + VERSION_TEXT,
    re.IGNORECASE,
)
_FRAMEWORK_WORD = re.compile(
    r"(?<![\w-])(sglang|vllm|tensorrt[-_]llm|lmdeploy)(?![\w-])", re.IGNORECASE
)
_PACKAGE_VERSION = re.compile(
    r"(?<![\w/.-])(transformers|flashinfer(?:[-_]python)?|torch|pytorch|cuda|triton|nccl"
    r"|sgl[-_]kernel"
    r"|nvidia driver|driver|python|deep_?gemm|xformers|flash[-_]attn|cudnn|vllm[-_]flash[-_]attn)"
    r"(?![\w-])(?:\s*(?:==|=|:)\s*|\s+(?:version\s+|v)?|\s+is\s+)" + VERSION_TEXT,
    re.IGNORECASE,
)
_FRAMEWORK_NAMES = {"tensorrt_llm": "tensorrt-llm"}


def framework_name(raw: str) -> str:
    name = raw.lower()
    return _FRAMEWORK_NAMES.get(name, name)


def framework_in(text: str, launched: str | None = None) -> tuple[str | None, str | None]:
    """(framework, version): the launched framework wins, else the one written about most."""
    mentions = Counter(framework_name(m.group(1)) for m in _FRAMEWORK_WORD.finditer(text))
    framework = launched or (mentions.most_common(1)[0][0] if mentions else None)
    if framework is None:
        return None, None
    # A release-tagged server image (`vllm/vllm-openai:v0.6.3`) says the release as well.
    stated = [
        (match.start(), match.group(2))
        for pattern in (_FRAMEWORK_VERSION, RELEASE_IMAGE_IN_TEXT)
        for match in pattern.finditer(text)
        if framework_name(match.group(1)) == framework
    ]
    return framework, min(stated)[1] if stated else None


def versions_in(text: str) -> dict[str, str]:
    """Other packages' versions ("Transformers 5.2.0", "CUDA 13.1"); the first mention wins."""
    found: dict[str, str] = {}
    for match in _PACKAGE_VERSION.finditer(text):
        found.setdefault(package_key(match.group(1)), match.group(2))
    return found


# -- Models -------------------------------------------------------------------------------

_REPO_ID = re.compile(
    r"(?<![\w./-])([A-Za-z0-9][\w.-]{0,38}[A-Za-z0-9])/([A-Za-z0-9][\w.-]{1,90}[A-Za-z0-9])(?![\w/-])"
)
_NOT_REPO_ORGS = frozenset(
    [
        "srt",
        "python",
        "lib",
        "lib64",
        "usr",
        "home",
        "site-packages",
        "dist-packages",
        "root",
        "opt",
        "tmp",
        "mnt",
        "data",
        "models",
        "model",
        "src",
        "bin",
        "etc",
        "var",
        "cache",
        "checkpoints",
        "weights",
        "layers",
        "sglang",
        "vllm",
        "torch",
        "csrc",
        "ops",
        "kernels",
        "utils",
        "tok",
        "tokens",
        "prefill",
        "decode",
        "input",
        "output",
        "read",
        "write",
    ]
)
_FILE_SUFFIX = re.compile(
    r"\.(?:py|pyc|json|txt|log|sh|md|cu|cuh|cpp|h|so|yaml|yml|safetensors|bin|pt|gguf)$"
)
_DTYPE = re.compile(r"^(?:fp|bf|int|uint|nvfp|mxfp|e4m3|e5m2|sm_?|w\d)\d*", re.IGNORECASE)
_MODEL_NAME = re.compile(
    r"(?<![\w/.-])([A-Za-z][A-Za-z0-9]{0,30}(?:[-.][A-Za-z0-9]{1,30}){1,8})(?![\w/-])"
)
_ARCH_ID = re.compile(
    r"(?:model[_ ]type|architecture"
    r"|arch(?:itecture)? id)\W{0,6}([a-z][a-z0-9]{1,30}(?:_[a-z0-9]{1,20}){1,5})\b"
    r"|\b([A-Z][A-Za-z0-9]{2,40}For(?:CausalLM|ConditionalGeneration))\b",
)
_QUANT_IN_NAME = re.compile(
    r"(nvfp4|mxfp4|fp8|fp4|awq|gptq|int4|int8|w4a16|w8a8|gguf|bnb)", re.IGNORECASE
)


@dataclass(frozen=True)
class ModelFacts:
    model: str | None = None
    arch: str | None = None
    quantization: str | None = None


def repo_ids_in(text: str) -> list[str]:
    return [
        f"{m.group(1)}/{m.group(2)}"
        for m in _REPO_ID.finditer(text)
        if _looks_like_repo(m.group(1), m.group(2))
    ]


def _looks_like_repo(org: str, name: str) -> bool:
    if org.lower() in _NOT_REPO_ORGS or _FILE_SUFFIX.search(name) or len(name) < 3:
        return False
    if not re.search(r"[A-Za-z]", org) or (_DTYPE.match(org) and _DTYPE.match(name)):
        return False
    return "-" in name or bool(re.search(r"\d", name))


def model_in(text: str, vocabulary: VocabularyLike, launched: str | None = None) -> ModelFacts:
    """The model a document is about: launched > known repo id > known name > any repo id."""
    repos = repo_ids_in(text)
    known = {repo for repo in set(repos) if _of_known_kind(vocabulary.model_info(repo))}
    known_repos = [repo for repo in repos if repo in known]
    model = (
        _launched_model(launched, text)
        or _most_common(known_repos)
        or _known_name(text, vocabulary)
        or _most_common(repos)
    )
    return facts_of_model(model, text, vocabulary)


def _of_known_kind(info: ModelInfoLike | None) -> bool:
    """A family or quantization the vocabulary knows: a size alone names no model."""
    return info is not None and bool(info.family or info.quantization)


def facts_of_model(model: str | None, text: str, vocabulary: VocabularyLike) -> ModelFacts:
    info = vocabulary.model_info(model) if model else None
    arch = (info.arch if info else None) or _arch_in(text)
    quantization = info.quantization if info else None
    if quantization is None and model:
        found = _QUANT_IN_NAME.search(model.rsplit("/", 1)[-1])
        quantization = found.group(1).lower() if found else None
    return ModelFacts(model, arch, quantization)


def _launched_model(launched: str | None, text: str) -> str | None:
    if not launched:
        return None
    if launched.startswith(("/", "~", ".")):
        base = launched.rstrip("/").rsplit("/", 1)[-1]
        repos = [
            repo for repo in repo_ids_in(text) if repo.rsplit("/", 1)[-1].lower() == base.lower()
        ]
        return repos[0] if repos else base
    return launched


def _known_name(text: str, vocabulary: VocabularyLike) -> str | None:
    counts = Counter(m.group(1) for m in _MODEL_NAME.finditer(text) if re.search(r"\d", m.group(1)))
    for name, _ in counts.most_common(200):
        info = vocabulary.model_info(name)
        if info is not None and (info.family or info.arch):
            return name
    return None


def _arch_in(text: str) -> str | None:
    match = _ARCH_ID.search(text)
    return (match.group(1) or match.group(2)) if match else None


def _most_common(items: list[str]) -> str | None:
    return Counter(items).most_common(1)[0][0] if items else None


# -- Launch commands ----------------------------------------------------------------------

# `> log 2>&1 &`: shell plumbing, not arguments (the vocabulary mis-reads the value before it).
_REDIRECTION = re.compile(r"\s(?:\d?>>?|&>)\s*(?:&\d|[^\s'\"]+)|\s&(?=\s*['\"]?\s*$)", re.MULTILINE)


@dataclass(frozen=True)
class Launch:
    start: int  # first line index
    end: int  # one past the last line
    command: str
    framework: str | None
    model: str | None
    flags: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    inline: bool = False  # quoted inside a sentence, e.g. `vllm serve ... --x 1`


def launches_in(lines: list[str], vocabulary: VocabularyLike) -> list[Launch]:
    """Every server launch command, with its backslash/quote continuation lines."""
    found: list[Launch] = []
    starts = [i for i, line in enumerate(lines) if launch_start(line[:4000]) is not None]
    if len(starts) > _MAX_LAUNCHES:  # a pasted shell history: the first and last tell the story
        starts = starts[: _MAX_LAUNCHES // 2] + starts[-_MAX_LAUNCHES // 2 :]
    i = 0
    for start in starts:
        if start < i:
            continue
        i = start
        end, command, inline = command_at(lines, i)
        parsed = vocabulary.parse_launch_command(_REDIRECTION.sub(" ", command))
        env = dict(getattr(parsed, "env", {}))
        found.append(
            Launch(i, end, command, parsed.framework, parsed.model, dict(parsed.flags), env, inline)
        )
        i = end
    return found


_MAX_LAUNCHES = 40


# -- Metrics ------------------------------------------------------------------------------

_NUMBER = r"(\d+(?:[.,]\d+)?)"
_THROUGHPUT = re.compile(
    _NUMBER + r"(k)?\s*(?:output\s+)?(?:tok(?:en)?s?\s*/\s*s(?:ec)?|tokens? per second|tps)\b",
    re.IGNORECASE,
)
_TTFT = re.compile(r"\bTTFT\b[^\d\n]{0,30}" + _NUMBER + r"\s*(ms|s)\b", re.IGNORECASE)
_ITL = re.compile(r"\b(?:ITL|TPOT)\b[^\d\n]{0,30}" + _NUMBER + r"\s*(ms|s)\b", re.IGNORECASE)
_CONCURRENCY = re.compile(
    r"\bconcurrency\b\D{0,12}(\d{1,5})\b|\b(\d{1,5})\s+concurrent\b", re.IGNORECASE
)
_FROM_TO_METRIC = re.compile(
    r"\bfrom\s+(?:~|about\s+)?"
    + _NUMBER
    + r"\s*(tok(?:en)?s?/s|ms|s)?\s+to\s+(?:~|about\s+)?"
    + _NUMBER
    + r"\s*(tok(?:en)?s?/s|ms|s)\b",
    re.IGNORECASE,
)


def number(raw: str) -> float:
    return float(raw.replace(",", ""))


def metrics_in(text: str) -> Metrics:
    """Throughput/TTFT/ITL as last reported (the figure after the fix), and a before->after pair."""
    throughput = _last(_THROUGHPUT.finditer(text))
    ttft = _last_ms(_TTFT.finditer(text))
    itl = _last_ms(_ITL.finditer(text))
    concurrency = _last(_CONCURRENCY.finditer(text))
    before_after = _last_match(_FROM_TO_METRIC.finditer(text))
    metrics = Metrics(
        throughput_tok_s=throughput,
        ttft_ms=ttft,
        itl_ms=itl,
        concurrency=int(concurrency) if concurrency is not None else None,
    )
    if before_after is None:
        return metrics
    unit = (before_after.group(4) or before_after.group(2) or "").lower() or None
    return Metrics(
        throughput_tok_s=metrics.throughput_tok_s,
        ttft_ms=ttft,
        itl_ms=itl,
        concurrency=metrics.concurrency,
        before=f"{before_after.group(1)} {unit or ''}".strip(),
        after=f"{before_after.group(3)} {unit or ''}".strip(),
        before_value=number(before_after.group(1)),
        after_value=number(before_after.group(3)),
        unit=unit,
    )


def _last(matches: Iterable[re.Match[str]]) -> float | None:
    match = _last_match(matches)
    if match is None:
        return None
    groups = [group for group in match.groups() if group]
    scale = 1000.0 if len(groups) > 1 and groups[1].lower() == "k" else 1.0
    return number(groups[0]) * scale


def _last_ms(matches: Iterable[re.Match[str]]) -> float | None:
    match = _last_match(matches)
    if match is None:
        return None
    value = number(match.group(1))
    return value * 1000 if match.group(2).lower() == "s" else value


def _last_match(matches: Iterable[re.Match[str]]) -> re.Match[str] | None:
    last = None
    for last in matches:  # noqa: B007 - only the final match is wanted
        pass
    return last
