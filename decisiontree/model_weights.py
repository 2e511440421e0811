"""How much of each GPU a model's weights take, worked out before anything runs.

The weights are the one large figure known before a server starts: parameters times the
bits each takes, split over the GPUs that share one copy. A model's name mostly states
its parameter count ("Llama-3.1-70B-Instruct"; "Qwen3-235B-A22B" holds all 235B, not
the 22B a token uses); for lines whose names do not state their total (GLM-5, Kimi-K2,
Mixtral-8x7B, Llama-4-Scout-17B-16E) the vocabulary keeps the model card's count and the
precision the line is published in. Its quantization (the name's, or --quantization) gives the
bits (models.json); an unquantized model takes 16 bits, or 32 with --dtype float32.
Tensor- and pipeline-parallel ranks split one copy; vLLM's expert parallelism spreads
the experts over its data-parallel ranks too (SGLang's stays inside the tensor-parallel
group), so those ranks divide the figure as well, which makes it a lower bound there:
attention stays whole on each.

The figure is "about": names round their count (8.03B is "8B"), and a quantized
checkpoint keeps its embeddings and norms, often its output head, in 16 bits, so its
figure is a least. A verdict is said only outside a band around the share the weights
must fit in (`weights.fit_band` in models.json, measured by bench/weights_estimate.py):
vLLM's --gpu-memory-utilization holds weights, activations, CUDA graphs and the KV
cache; SGLang's --mem-fraction-static holds the weights and the KV pool (left unset,
SGLang picks it at start-up from the GPU, keeping back at least what `_sglang_keeps_back`
works out: the GPU less that is the bound).

A start-up log that measured the weights (SGLang's "Load weight end ... mem usage", vLLM's
"Model loading took") gives the figure itself; the estimate is for a launch not yet run
and a log that stopped before the weights were in.
"""

from __future__ import annotations

from dataclasses import dataclass

from decisiontree import flags, versions
from decisiontree.context import Context
from decisiontree.flag_values import FlagValue
from decisiontree.flags import canonical_flag
from decisiontree.gpu_memory import MemoryReading, in_words
from decisiontree.setup import launched_or_default, normal_value
from decisiontree.spelling import spell_flag
from decisiontree.vocabulary import Vocabulary

MOST_TENSOR_PARALLEL = 64  # no split is suggested past this many GPUs
BITS_OF_DTYPE = {"fp32": 32.0}  # unquantized weights take 16 bits, unless float32
SHARE_FLAGS = {"vllm": "gpu-memory-utilization", "sglang": "mem-fraction-static"}
SGLANG_RESERVE_READ_FROM = "0.5.9"  # the oldest release whose start-up share rule was read
READINGS = ("weights_do_not_fit", "weights_fill_share", "weights_fit")


@dataclass(frozen=True)
class Weights:
    """A model's weights as one launch loads them."""

    total: int  # bytes of one whole copy
    source: str  # how the figure is known: "70B parameters in bf16", "the log"
    model: str | None
    quantized: bool  # a quantized estimate is a least (16-bit layers stay)
    tensor_parallel: int
    pipeline_parallel: int = 1
    experts_over: int = 1  # vLLM data-parallel ranks its expert parallelism spreads over
    bits: float | None = None  # bits a weight takes; None where the log gave the figure

    @property
    def ways(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel * self.experts_over

    def per_gpu(self, tensor_parallel: int | None = None) -> int:
        """Bytes on each GPU, split `tensor_parallel` ways (the launch's by default)."""
        tp = tensor_parallel or self.tensor_parallel
        return self.total // (tp * self.pipeline_parallel * self.experts_over)


def weights_of(
    context: Context, vocabulary: Vocabulary, measured: int | None = None
) -> Weights | None:
    """The weights a launch loads: `measured` (bytes on each GPU, as a start-up log gave
    them), else the estimate from the model's name; None where neither is known."""
    experts_over = 1
    if context.framework == "vllm" and normal_value(
        launched_or_default(context, "enable-expert-parallel")
    ) in ("true", "1"):
        experts_over = _count(launched_or_default(context, "data-parallel-size"))
    tp = _count(_parallel(context, "tensor-parallel-size"))
    pp = _count(_parallel(context, "pipeline-parallel-size"))
    info = vocabulary.model_info(context.model) if context.model else None
    model = info.name if info else context.model
    if measured:
        total = measured * tp * pp * experts_over
        return Weights(total, "the log", model, False, tp, pp, experts_over, None)
    if info is None or not info.parameters:
        return None
    if context.quantization:
        bits = vocabulary.quantization_bits(context.quantization)
        form, quantized = context.quantization, True
    else:
        dtype = normal_value(launched_or_default(context, "dtype"))
        dtype = "fp32" if dtype == "float" else dtype  # both frameworks' name for it
        form = dtype if dtype in ("fp16", "bf16", "fp32") else "16-bit"
        bits, quantized = BITS_OF_DTYPE.get(dtype, 16.0), False
    if bits is None:
        return None
    total = round(info.parameters * 1e9 * bits / 8)
    source = f"{info.parameters:g}B parameters in {form}"
    return Weights(total, source, model, quantized, tp, pp, experts_over, bits)


def weights_reading(
    context: Context,
    vocabulary: Vocabulary,
    gpu_total: int | None,
    *,
    failed: bool = False,
    measured: int | None = None,
) -> MemoryReading | None:
    """Whether the weights fit the share of each GPU they must fit in, in a sentence; a
    split that holds them where they do not. `failed`: said of a start that ran out of
    memory (weights that fit are then not what ran out); `measured`: the bytes the log
    says the weights took on each GPU. None where the weights' size or the GPU's is not
    known."""
    weights = weights_of(context, vocabulary, measured)
    if weights is None or not gpu_total:
        return None
    share = _budget(context, gpu_total)
    budget, share_words = share.budget, share.words
    each = weights.per_gpu()
    tp_flag = spell_flag(
        canonical_flag("tensor-parallel-size", context.framework),
        context.framework,
        context.spelling_version,
    )
    split = _split_words(weights, context, tp_flag)
    where = f"{in_words(each)} on each GPU at {split}" if weights.ways > 1 else None
    if weights.source == "the log":
        of_model = f" of {weights.model}" if weights.model else ""
        said = (
            f"The weights{of_model} took {where or f'{in_words(each)} on its one GPU ({split})'}"
            ", as the log measured them"
        )
    else:
        about = "at least about" if weights.quantized else "about"
        said = (
            f"The weights of {weights.model} are {weights.source}: {about} "
            f"{in_words(weights.total)}, {where or f'all on one GPU ({split})'}"
        )
    band = vocabulary.weights_fit_band
    if each > budget * (1 + band):
        said += f", more than {share_words}: the weights alone do not fit."
        return _with_split(weights, said, "weights_do_not_fit", context, tp_flag, budget, band)
    if each >= budget * (1 - band):
        said += f", about all of {share_words}: little or nothing is left for the KV cache."
        return _with_split(weights, said, "weights_fill_share", context, tp_flag, budget, band)
    said += (
        f", of {share_words}: about {in_words(round(budget - each))} is left for "
        f"{share.beside}" + (", so the weights alone are not what ran out." if failed else ".")
    )
    return MemoryReading("weights_fit", said, helps=False)


def _with_split(  # noqa: PLR0913 - the reading's parts, each used once
    weights: Weights,
    said: str,
    kind: str,
    context: Context,
    tp_flag: str,
    budget: float,
    band: float,
) -> MemoryReading:
    """The reading, with the fewest GPUs (a power of two) whose split holds the weights,
    as a value for the tensor-parallel flag; and, where that split is inside `band` of
    the budget, the next one too, since the estimate cannot promise the first."""
    ways = weights.tensor_parallel * 2
    while ways <= MOST_TENSOR_PARALLEL and weights.per_gpu(ways) >= budget:
        ways *= 2
    if ways > MOST_TENSOR_PARALLEL:
        smaller = _fewer_bits(weights)
        return MemoryReading(
            kind,
            f"{said} Serve {smaller}."
            if smaller
            else f"{said} No split of up to {MOST_TENSOR_PARALLEL} GPUs holds them.",
        )
    each = weights.per_gpu(ways)
    split = (
        f"{tp_flag} {ways} puts about {in_words(each)} on each GPU, leaving about "
        f"{in_words(round(budget - each))}"
    )
    if each >= budget * (1 - band):
        split += f" (little: {ways * 2} puts about {in_words(weights.per_gpu(ways * 2))})"
    count = context.gpu_count
    if count and weights.ways // weights.tensor_parallel * ways > count:
        smaller = _fewer_bits(weights)
        return MemoryReading(
            kind,
            f"{said} {split}: more GPUs than the {count} here. Add GPUs"
            + (f", or serve {smaller}." if smaller else "."),
        )
    value = FlagValue(
        canonical_flag("tensor-parallel-size", context.framework),
        str(ways),
        "at_least",
        f"the fewest GPUs that hold the weights ({in_words(each)} each)",
    )
    return MemoryReading(kind, f"{said} {split}.", values=(value,))


def _fewer_bits(weights: Weights) -> str | None:
    """A checkpoint that takes fewer bits a weight, in words; None where the weights
    already take about four."""
    bits = weights.bits
    if bits is None:
        return "a checkpoint in fewer bits"
    if bits <= 5:
        return None
    if bits > 8:
        return "a quantized checkpoint (FP8 weights take half as much, 4-bit ones a quarter)"
    return f"a 4-bit checkpoint (about half as much as {bits:g}-bit)"


def _split_words(weights: Weights, context: Context, tp_flag: str) -> str:
    """ "--tensor-parallel-size 8 × --pipeline-parallel-size 2"."""
    parts = [f"{tp_flag} {weights.tensor_parallel}"]
    framework, version = context.framework, context.spelling_version
    if weights.pipeline_parallel > 1:
        pp_flag = canonical_flag("pipeline-parallel-size", framework)
        parts.append(f"{spell_flag(pp_flag, framework, version)} {weights.pipeline_parallel}")
    if weights.experts_over > 1:
        dp_flag = spell_flag("data-parallel-size", framework, version)
        parts.append(f"{dp_flag} {weights.experts_over} (experts)")
    return " × ".join(parts)


@dataclass(frozen=True)
class _Share:
    """The bytes of each GPU the weights must fit in, said in words, and what else the
    share holds: vLLM's also holds activations and CUDA graphs, SGLang's only the KV pool."""

    budget: float
    words: str
    beside: str = "activations, CUDA graphs and the KV cache"


def _budget(context: Context, gpu_total: int) -> _Share:
    """The share of each GPU the weights must fit in. A default that changed between
    releases, for a release not known, is the newest one's, and said so."""
    framework = context.framework
    flag = SHARE_FLAGS.get(framework or "")
    size = in_words(gpu_total)
    whole = _Share(float(gpu_total), f"the GPU's {size}")
    if flag is None:
        return whole
    beside = "the KV cache" if framework == "sglang" else _Share.beside
    spelled = spell_flag(flag, framework, context.spelling_version)
    share = _share(launched_or_default(context, flag))
    note = ""
    if share is None:
        spec = flags.flag(flag, framework)
        default = flags.default_in(spec, context.framework_version) if spec else None
        if default is None or default.changed is None:
            kept = _sglang_keeps_back(context, gpu_total) if framework == "sglang" else None
            if kept is None or kept >= gpu_total:
                return _Share(
                    whole.budget, f"{whole.words} ({framework} picks {spelled} at start-up)"
                )
            return _Share(
                gpu_total - kept,
                f"the {in_words(gpu_total - kept)} of {size} that SGLang gives at most where "
                f"{spelled} is unset (it keeps at least {in_words(kept)} back)",
                beside,
            )
        share = _share(default.value)
        if share is None:
            return whole
        note = f" ({default.describe()}; your release is not known)"
    budget = gpu_total * share
    return _Share(
        budget,
        f"the {in_words(round(budget))} that {spelled} {share:g} gives of {size}{note}",
        beside,
    )


def _sglang_keeps_back(context: Context, gpu_total: int) -> int | None:
    """The least SGLang keeps outside --mem-fraction-static when it picks the share at
    start-up (server_args of 0.5.9 and 0.5.23 alike): 512 MiB, 1.5 MiB per token of a
    prefill chunk (2048 at least), 1 GiB per eight tensor x pipeline ranks, and on a GPU
    over 60 GiB no less than 10 GiB. CUDA graphs, DP attention and speculative decoding
    take more on top, left out: a floor, so the share it gives is a most. None for a
    release before 0.5.9, whose rule was not read."""
    version = context.framework_version
    if version and versions.sort_key(version) < versions.sort_key(SGLANG_RESERVE_READ_FROM):
        return None
    chunk = _count(launched_or_default(context, "chunked-prefill-size"))
    if _number(context.flags.get("chunked-prefill-size")) <= 0:  # -1: chunking off
        chunk = _count(launched_or_default(context, "max-prefill-tokens"))
    ranks = _count(_parallel(context, "tensor-parallel-size")) * _count(
        _parallel(context, "pipeline-parallel-size")
    )
    mib = 512 + 1.5 * max(chunk, 2048) + ranks / 8 * 1024
    if gpu_total > 60 * 1024**3:
        mib = max(mib, 10 * 1024)
    return round(mib * 1024**2)


def _parallel(context: Context, flag: str) -> str | None:
    return launched_or_default(context, canonical_flag(flag, context.framework))


def _number(value: str | None) -> int:
    """An integer flag value as launched; 1 where unset or unreadable."""
    try:
        return int(value or "1")
    except ValueError:
        return 1


def _count(value: str | None) -> int:
    """A parallel size or token count as launched; 1 where unset, unreadable or below 1."""
    return max(_number(value), 1)


def _share(value: str | None) -> float | None:
    try:
        share = float(value or "")
    except ValueError:
        return None
    return share if 0 < share <= 1 else None


__all__ = ["READINGS", "Weights", "weights_of", "weights_reading"]
