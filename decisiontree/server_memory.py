"""Where a server's GPU memory went on its way up, from the lines its log prints.

SGLang logs the free memory at each start-up stage ("Load weight end. ... avail mem=24.51
GB, mem usage=70.12 GB.", "KV Cache is allocated. ... KV size: 21.80 GB", "Capture cuda
graph begin. ... avail mem=1.92 GB"); vLLM what the weights took and what was left for
the KV cache ("Model loading took 30.71 GiB", "Available KV cache memory: -1.43 GiB").
Each tensor-parallel rank prints its own. Read in order, they say where a start-up that
ran out of memory stopped and how much room that stage had: the figure a memory fix
moves. (Both print binary units: SGLang's "GB" is bytes / 2**30.)

vLLM's refusal of a context its KV cache cannot hold gives the figures of the fix itself:
the longest --max-model-len that fits, and how much more KV memory the full one needs,
which a GPU of known size turns into a --gpu-memory-utilization.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from decisiontree.flag_values import FlagValue
from decisiontree.gpu_memory import MemoryReading, OutOfMemory, in_words, size_of

_NUMBER = r"(-?\d+(?:\.\d+)?)"

# stage -> the line that marks it; `free` and `used` groups where the line has them.
STAGES: dict[str, re.Pattern[str]] = {
    "loading weights": re.compile(rf"Load weight begin\. avail mem=(?P<free>{_NUMBER}) GB"),
    "weights loaded": re.compile(
        rf"Load weight end\..*?avail mem=(?P<free>{_NUMBER}) GB, mem usage=(?P<used>{_NUMBER}) GB"
        rf"|Model loading took (?P<used2>{_NUMBER}) GiB"  # vLLM: each name once a pattern
    ),
    "KV cache allocated": re.compile(
        rf"KV Cache is allocated\..*?(?:KV size: (?P<used>{_NUMBER}) GB"
        rf"|K size: (?P<k>{_NUMBER}) GB, V size: (?P<v>{_NUMBER}) GB)"
    ),
    "KV cache budget": re.compile(rf"Available KV cache memory: (?P<used>{_NUMBER}) GiB"),
    "memory pool ready": re.compile(rf"Memory pool end\. avail mem=(?P<free>{_NUMBER}) GB"),
    "capturing CUDA graphs": re.compile(
        rf"Capture cuda graph begin\..*?avail mem=(?P<free>{_NUMBER}) GB"
    ),
    "CUDA graphs captured": re.compile(
        rf"Capture cuda graph end\..*?mem usage=(?P<used>{_NUMBER}) GB\. "
        rf"avail mem=(?P<free>{_NUMBER}) GB"
    ),
}
# "[2026-02-18 22:41:03 DP3 TP3]", "(VllmWorker TP0 pid=2291)", "(Worker_TP3 pid=1502)"
RANK = re.compile(r"\bTP[ _]?(\d+)\b|Worker_TP(\d+)")
READINGS = (
    "no_kv_cache_room",
    "no_kv_pool_room",
    "capture_short",
    "kv_cache_short",
    "request_does_not_fit",
)
CONCURRENCY = re.compile(
    r"Maximum concurrency for (?P<tokens>[\d,]+) tokens per request: (?P<times>\d+(?:\.\d+)?)x"
)
# vLLM's check that one request of --max-model-len fits the KV cache
# (vllm/v1/core/kv_cache_utils.py; "models's" is its own spelling), and the older engine's.
KV_CACHE_SHORT = re.compile(
    rf"max seq len \((?P<length>\d+)\), \((?P<needed>{_NUMBER}) GiB KV cache is needed, which "
    rf"is larger than the available KV cache memory \((?P<available>{_NUMBER}) GiB\)\."
    r"(?: Based on the available memory, the estimated maximum model length is "
    r"(?P<estimate>\d+)\.)?"
    r"|max seq len \((?P<length2>\d+)\) is larger than the maximum number of tokens that can "
    r"be stored in KV cache \((?P<tokens>\d+)\)"
)
# The most of a GPU a --gpu-memory-utilization worked out here may ask for: vLLM's budget
# counts all its process holds, but the driver keeps some memory outside any process, and
# the starter findings advise at most 0.95 on a GPU nothing else uses. SGLang's
# --mem-fraction-static is the same kind of share and gets the same ceiling.
HIGHEST_UTILIZATION = 0.95
# SGLang's CUDA-graph runners wrap what failed in "Capture cuda graph failed: <error>"
# (0.5.9 and 0.5.23 alike).
CAPTURE_FAILED = "Capture cuda graph failed"
# SGLang's refusal to start with no room for one KV token (the model runner in 0.5.9, the
# pool configurator in 0.5.23), with the fraction it ran at where the message gives it.
NO_KV_POOL = re.compile(
    r"Not enough memory\. Please try to increase --mem-fraction-static\."
    r"(?: Current value: (?:self\.server_args\.)?mem_fraction_static=(?P<fraction>\d*\.?\d+))?"
)


@dataclass(frozen=True)
class MemoryStage:
    stage: str  # a key of STAGES
    free: int | None = None  # bytes free after it (SGLang); None where the line has none
    used: int | None = None  # bytes it took (for "KV cache budget": what was left for it)

    def describe(self) -> str:
        figures = []
        if self.used is not None:
            figures.append(in_words(self.used) if self.used >= 0 else f"-{in_words(-self.used)}")
        if self.free is not None:
            figures.append(f"{in_words(self.free)} free")
        return f"{self.stage} ({', '.join(figures)})" if figures else self.stage


@dataclass(frozen=True)
class RankMemory:
    """One rank's start-up stages, in the order its log printed them."""

    rank: str | None  # "TP0"; None for a log without ranks
    stages: tuple[MemoryStage, ...]

    @property
    def stopped_capturing(self) -> bool:
        """Its log began a CUDA-graph capture and shows no end of it."""
        return self.stages[-1].stage == "capturing CUDA graphs"

    def describe(self) -> str:
        """ "TP0: weights loaded (70.12 GiB, 24.51 GiB free) → KV cache allocated (21.80
        GiB) → capturing CUDA graphs (1.92 GiB free), not finished"."""
        steps = " → ".join(stage.describe() for stage in self.stages)
        if self.stopped_capturing:
            steps += ", not finished"
        return f"{self.rank}: {steps}" if self.rank else steps


def memory_log(text: str) -> tuple[RankMemory, ...]:
    """The first rank's start-up memory stages, and the rank that had the least room at
    its last stage where that is another (ranks of one model mostly print alike)."""
    by_rank: dict[str | None, list[MemoryStage]] = {}
    for line in text.splitlines():
        stage = _stage_of(line)
        if stage is None:
            continue
        rank = RANK.search(line)
        name = f"TP{rank[1] or rank[2]}" if rank else None
        stages = by_rank.setdefault(name, [])
        if not stages or stages[-1] != stage:
            stages.append(stage)
    ranks = [RankMemory(rank, tuple(stages)) for rank, stages in by_rank.items()]
    if not ranks:
        return ()
    first = ranks[0]
    tightest = min(ranks, key=_room_at_end)
    if _room_at_end(tightest) < _room_at_end(first):
        return (first, tightest)
    return (first,)


def _room_at_end(rank: RankMemory) -> float:
    free = rank.stages[-1].free
    return float("inf") if free is None else free


def _stage_of(line: str) -> MemoryStage | None:
    for stage, pattern in STAGES.items():
        match = pattern.search(line)
        if match is None:
            continue
        found = {k: v for k, v in match.groupdict().items() if v is not None}
        if "k" in found:  # SGLang's older line gives K and V apart
            found["used"] = str(float(found.pop("k")) + float(found.pop("v")))
        used = found.get("used") or found.get("used2")
        return MemoryStage(
            stage,
            # SGLang's "GB" is bytes / 2**30 too
            free=size_of(found["free"], "GiB") if "free" in found else None,
            used=size_of(used, "GiB") if used is not None else None,
        )
    return None


def log_readings(
    ranks: tuple[RankMemory, ...],
    text: str,
    *,
    gpu_total: int | None = None,
    utilization: str | None = None,
    fraction: str | None = None,
    memory: Sequence[OutOfMemory] = (),
) -> tuple[MemoryReading, ...]:
    """What the start-up figures show: no room left for vLLM's or SGLang's KV cache, or
    not room enough for one request of the full context. `gpu_total` (bytes of one GPU)
    and the launch's `utilization` turn a KV shortfall into the --gpu-memory-utilization
    it needs; SGLang's stages and the launch's --mem-fraction-static (`fraction`) give
    the fraction its KV pool needs, or, where a CUDA-graph capture ran out of `memory`,
    the fraction that frees what it lacked."""
    found: list[MemoryReading] = []
    if (refused := NO_KV_POOL.search(text)) and (
        pool := _kv_pool_short(ranks, refused["fraction"] or fraction)
    ):
        found.append(pool)
    if CAPTURE_FAILED in text and (capture := _capture_short(ranks, memory, fraction)):
        found.append(capture)
    for rank in ranks:
        budget = next((s for s in rank.stages if s.stage == "KV cache budget"), None)
        if budget is None or budget.used is None or budget.used > 0:
            continue
        weights = next((s for s in rank.stages if s.stage == "weights loaded"), None)
        took = (
            f" after the weights took {in_words(weights.used)}" if weights and weights.used else ""
        )
        short = f" ({in_words(-budget.used)} short)" if budget.used < 0 else ""
        said = (
            f"{rank.rank + ': ' if rank.rank else ''}the --gpu-memory-utilization share "
            f"left no room for the KV cache{short}{took}: the weights and the "
            "activation peak already fill it."
        )
        # One byte past the shortfall: the least share with any room at all.
        share = _share_for(-budget.used + 1, gpu_total, utilization)
        if share is not None and share <= HIGHEST_UTILIZATION:
            assert gpu_total is not None  # _share_for needs it
            said += (
                f" The least share with any room is {share:.2f} instead of {utilization} on "
                f"a GPU of {in_words(gpu_total)}; at it, vLLM says what one request of the "
                "full length needs. Or spread the model over more GPUs, or load it quantized."
            )
            value = FlagValue(
                "gpu-memory-utilization",
                f"{share:.2f}",
                "at_least",
                "the least share that leaves the KV cache any room",
            )
            found.append(MemoryReading("no_kv_cache_room", said, values=(value,)))
            break
        said += (
            " Raise --gpu-memory-utilization if the GPU has room, or spread the model over "
            "more GPUs, or load it quantized."
        )
        found.append(MemoryReading("no_kv_cache_room", said))
        break
    if refused := KV_CACHE_SHORT.search(text):
        found.append(_kv_cache_short(refused, gpu_total, utilization))
    elif (concurrency := CONCURRENCY.search(text)) and float(concurrency["times"]) < 1:
        found.append(
            MemoryReading(
                "request_does_not_fit",
                f"The KV cache holds {concurrency['times']} of one "
                f"{concurrency['tokens']}-token request: "
                "a request of the full context length does not fit; lower --max-model-len or "
                "give the KV cache more memory.",
            )
        )
    return tuple(found)


def _kv_cache_short(
    short: re.Match[str], gpu_total: int | None, utilization: str | None
) -> MemoryReading:
    """vLLM refused a --max-model-len its KV cache cannot hold once: what fits instead,
    and what the full length would take."""
    length = short["length"] or short["length2"]
    fits = short["estimate"] or short["tokens"]
    values = []
    if fits and int(fits) > 0:
        values.append(
            FlagValue(
                "max-model-len", fits, "at_most", "the longest context the KV cache had room for"
            )
        )
    if short["needed"] is None:
        text = f"The KV cache holds {fits} tokens, fewer than one request of {length} tokens."
        return MemoryReading("kv_cache_short", text, values=tuple(values))
    needed, available = size_of(short["needed"], "GiB"), size_of(short["available"], "GiB")
    lacking = needed - available
    text = (
        f"One request of {length} tokens needs {in_words(needed)} of KV cache on each GPU, "
        f"and {in_words(available)} was left for it"
        + (f": --max-model-len {fits} fits what was left." if fits else ".")
    )
    share = _share_for(lacking, gpu_total, utilization)
    if share is not None and share <= HIGHEST_UTILIZATION:
        assert gpu_total is not None and utilization is not None  # _share_for needs them
        text += (
            f" Keeping {length} takes {in_words(lacking)} more on each GPU: "
            f"--gpu-memory-utilization {share:.2f} instead of {utilization} on a GPU of "
            f"{in_words(gpu_total)}, if nothing else uses it."
        )
        values.append(
            FlagValue(
                "gpu-memory-utilization",
                f"{share:.2f}",
                "at_least",
                f"the share that gives the KV cache the {in_words(lacking)} it lacked",
            )
        )
    elif share is not None:
        text += (
            f" Keeping {length} takes {in_words(lacking)} more on each GPU, more than "
            f"--gpu-memory-utilization can give ({share:.2f}): spread the model over more "
            "GPUs, or store the KV cache in FP8."
        )
    else:
        text += f" Keeping {length} takes {in_words(lacking)} more on each GPU."
    return MemoryReading("kv_cache_short", text, values=tuple(values))


def _kv_pool_short(ranks: tuple[RankMemory, ...], fraction: str | None) -> MemoryReading | None:
    """SGLang's KV pool is the memory free after the weights less (1 − --mem-fraction-static)
    of what was free before them (kept for activations and CUDA graphs; the same in 0.5.9
    and 0.5.23). With both figures of a rank, the fraction below which no KV token fits."""
    sized = [
        (1 - after / before, rank, before, after)
        for rank in ranks
        for before, after in [(_free_at(rank, "loading weights"), _free_at(rank, "weights loaded"))]
        if before and after is not None
    ]
    if not sized:
        return None
    lowest, rank, before, after = max(sized, key=lambda found: found[0])
    least = math.floor(round(lowest * 100, 6)) / 100 + 0.01  # above it, in two decimals
    where = f"{rank.rank}: " if rank.rank else ""
    text = (
        f"{where}the weights left {in_words(after)} free of the {in_words(before)} free before "
        f"them. SGLang keeps (1 − --mem-fraction-static) of the {in_words(before)} for "
        "activations and CUDA graphs and gives the KV cache the rest"
    )
    launched = _number(fraction)
    pool = round(after - before * (1 - launched)) if launched is not None else None
    if pool is not None:
        shown = in_words(pool) if pool >= 0 else f"-{in_words(-pool)}"
        text += f": at {fraction} that is {shown}"
    text += f". A KV cache fits only above {lowest:.2f}; each 0.01 more gives it "
    text += f"{in_words(round(before / 100))}."
    if least > HIGHEST_UTILIZATION:
        text += (
            " That leaves activations too little: spread the model over more GPUs "
            "(a larger --tp-size) or load it quantized."
        )
        return MemoryReading("no_kv_pool_room", text)
    value = FlagValue(
        "mem-fraction-static",
        f"{least:.2f}",
        "at_least",
        f"the least that leaves SGLang's KV cache room ({where}{in_words(after)} free after "
        f"the weights, of {in_words(before)})",
    )
    return MemoryReading("no_kv_pool_room", text, values=(value,))


def _capture_short(
    ranks: tuple[RankMemory, ...], memory: Sequence[OutOfMemory], fraction: str | None
) -> MemoryReading | None:
    """SGLang's CUDA-graph capture ran out of memory: each 0.01 off --mem-fraction-static
    shrinks the KV pool by 1 % of the memory free before the weights (the pool's formula,
    see `_kv_pool_short`) and leaves that to the capture. The least lowering that frees
    what the failed allocation lacked; the capture may ask for more after it."""
    oom = next((m for m in memory if m.free is not None), None)
    if oom is None or oom.free is None or oom.requested <= oom.free:
        return None
    lacking = oom.requested - oom.free
    before = next((free for rank in ranks if (free := _free_at(rank, "loading weights"))), None)
    text = (
        f"The CUDA-graph capture asked for {in_words(oom.requested)} with {in_words(oom.free)} "
        f"free: {in_words(lacking)} short. Each 0.01 off --mem-fraction-static gives it "
    )
    if before is None:
        if not oom.total:
            return None
        # The GPU's size is a little more than was free before the weights: a figure to
        # go by, not one to write into the launch.
        text += (
            f"about {in_words(round(oom.total / 100))} of the KV cache's memory (the log's "
            '"Load weight begin" line gives the exact figure).'
        )
        return MemoryReading("capture_short", text)
    text += f"{in_words(round(before / 100))} of the KV cache's memory"
    launched = _number(fraction)
    if launched is None:
        return MemoryReading("capture_short", text + ".")
    most = math.floor(round((launched - lacking / before) * 100, 6)) / 100
    if most <= 0:
        return MemoryReading("capture_short", text + ".")
    text += f": {most:.2f} or lower instead of {fraction}, more if the capture asks again."
    value = FlagValue(
        "mem-fraction-static",
        f"{most:.2f}",
        "at_most",
        f"the most that frees the {in_words(lacking)} the CUDA-graph capture lacked",
    )
    return MemoryReading("capture_short", text, values=(value,))


def _free_at(rank: RankMemory, stage: str) -> int | None:
    return next((s.free for s in rank.stages if s.stage == stage), None)


def _share_for(lacking: int, gpu_total: int | None, utilization: str | None) -> float | None:
    """The --gpu-memory-utilization that adds `lacking` bytes to the budget, rounded up to
    two decimals; None without the GPU's size or the launch's share."""
    launched = _number(utilization)
    if not gpu_total or launched is None:
        return None
    return math.ceil(round((launched + lacking / gpu_total) * 100, 6)) / 100


def _number(value: str | None) -> float | None:
    """A share the launch gave; None for none, or for a value that is no number."""
    try:
        return float(value) if value else None
    except ValueError:
        return None


__all__ = ["READINGS", "MemoryStage", "RankMemory", "log_readings", "memory_log"]
