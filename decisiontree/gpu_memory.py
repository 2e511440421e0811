"""What an out-of-memory message says about the GPU's memory when the allocation failed.

PyTorch's caching allocator prints the numbers that decide the fix: how much was asked
for, the GPU's size and what was free, how much this process held and how much of that
PyTorch had cached without using it, and, where NVML lists them, the other processes on
the GPU. Read together they tell apart causes that one message text shares:

- the allocation is larger than the whole GPU: no memory setting makes it fit;
- other processes held memory that would have made room (a server left running, another
  tenant): stop them before lowering the server's own memory settings;
- PyTorch held enough cached-but-unused memory, in pieces too small: fragmentation, where
  `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (the message's own hint) helps;
- cached and free memory together fall short of the request: that hint cannot help.
vLLM's check before it loads anything ("Free memory on device ... is less than desired
GPU memory utilization") is read the same way: what was in use before it started, and the
largest --gpu-memory-utilization that fits what was free.

Every reading is arithmetic on the message's numbers; none needs a finding.

The message's shapes, oldest first (c10/cuda/CUDACachingAllocator.cpp):
    Tried to allocate 16.00 MiB (GPU 0; 4.00 GiB total capacity; 1.40 GiB already
      allocated; 0 bytes free; 16.43 MiB cached)
    Tried to allocate 160.00 MiB (GPU 0; 79.35 GiB total capacity; 78.58 GiB already
      allocated; 145.19 MiB free; 78.58 GiB reserved in total by PyTorch)
    Tried to allocate 3.09 GiB. GPU 0 has a total capacity of 139.80 GiB of which
      159.12 MiB is free. [Process 4242 has 100.00 GiB memory in use. ]Including
      non-PyTorch memory, this process has 139.64 GiB memory in use. Of the allocated
      memory 139.05 GiB is allocated by PyTorch, and 87.19 MiB is reserved by PyTorch but
      unallocated.
In a container NVML reports host process ids, so PyTorch may not find itself among the
processes: every one is then "Process N", this one too.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from decisiontree.flag_values import FlagValue

_SIZE = r"(\d+(?:\.\d+)?)\s*(bytes|[KMGT]i?B)"
_UNITS = {"bytes": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
_UNITS |= {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}

# Memory running out, as the stacks FixGraph serves say it: CUDA's and PyTorch's "out of
# memory", an allocator or cuBLAS that could not allocate, a server with not enough memory
# left for its KV cache, the kernel's OOM killer. A finding of kind "oom" is about one.
RAN_OUT = re.compile(
    r"out[ _-]of[ _-]memory|OutOfMemory|\bOOM|_ALLOC_FAILED|MemoryAllocation|bad_alloc"
    r"|RESOURCE_EXHAUSTED|\b(?:not enough|insufficient|no available) (?:\w+ )?memory"
    r"|(?:cannot|can't|could not|failed to|unable to) allocate|memory (?:is )?exhausted"
    r"|\b(?:pool|memory) is full|Killed process",
    re.IGNORECASE,
)
REQUEST = re.compile(rf"Tried to allocate {_SIZE}")
# The older shape: "(GPU 0; 4.00 GiB total capacity; ...; 16.43 MiB cached)".
OLD_FIGURES = re.compile(r"\(GPU (\d+); ([^)]*total capacity[^)]*)\)")
OLD_PART = re.compile(rf"^\s*{_SIZE} (.+?)\s*$")
# The newer one, sentence by sentence (2.1 spelled it "capacty").
CAPACITY = re.compile(rf"GPU (\d+) has a total capac\w* of {_SIZE} of which {_SIZE} is free")
PROCESS = re.compile(rf"Process (\d+) has {_SIZE} memory in use")
THIS_PROCESS = re.compile(rf"this process has {_SIZE} memory in use")
HELD = re.compile(
    rf"Of the allocated memory {_SIZE} is allocated by PyTorch, and {_SIZE} is reserved"
    r" by PyTorch but unallocated"
)
# One message runs from "Tried to allocate" to the next one or the end of its line.
MESSAGE = re.compile(r"Tried to allocate[^\n]*")
# vLLM's check before it loads anything: what is free against what its
# --gpu-memory-utilization asks for (vllm/v1/worker/utils.py; "device cuda:3" or "device").
STARTUP = re.compile(
    r"Free memory on device(?: \w+:(?P<gpu>\d+))? \((?P<free>\d+(?:\.\d+)?)/"
    r"(?P<total>\d+(?:\.\d+)?) GiB\) on startup is less than desired GPU memory utilization "
    r"\((?P<share>\d*\.?\d+), (?P<asked>\d+(?:\.\d+)?) GiB\)"
)


def size_of(number: str, unit: str) -> int:
    return round(float(number) * _UNITS[unit])


def rounding_of(number: str, unit: str) -> int:
    """How far a printed size may be from the true one: half its last digit."""
    decimals = len(number.partition(".")[2])
    return round(_UNITS[unit] / (2 * 10.0**decimals))


def in_words(size: int) -> str:
    """Bytes as PyTorch prints them: "3.09 GiB", "159.12 MiB", "0 bytes"."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.2f} {unit}"
    return f"{size} bytes"


@dataclass(frozen=True)
class OutOfMemory:
    """One out-of-memory message's figures, in bytes; None where the message has none."""

    requested: int
    gpu: int | None = None
    total: int | None = None
    free: int | None = None
    allocated: int | None = None  # in use by PyTorch's tensors
    cached_unused: int | None = None  # reserved by PyTorch but unallocated
    this_process: int | None = None  # all this process held, PyTorch's and other
    # (pid, bytes) of the processes the message names; `self_listed` says whether this
    # process was told apart from them (not so in a container).
    processes: tuple[tuple[int, int], ...] = ()
    self_listed: bool = False
    slack: int = 0  # the rounding of total, free and this process's figures together
    # vLLM's start-up check: `requested` is its --gpu-memory-utilization share of the GPU,
    # and all memory in use then was others' (but for this process's CUDA context).
    startup_share: str | None = None

    @property
    def listed_others(self) -> int:
        """Memory the listed processes held, where the message tells them from this one."""
        return sum(used for _, used in self.processes) if self.self_listed else 0

    @property
    def others(self) -> int:
        """Memory other processes held: the listed ones and those NVML does not show."""
        return self.listed_others + self.unlisted

    @property
    def in_use_at_start(self) -> int:
        """At vLLM's start-up check, what was already in use."""
        if self.startup_share is None or self.total is None or self.free is None:
            return 0
        return max(self.total - self.free, 0)

    @property
    def unlisted(self) -> int:
        """GPU memory in use that is neither free, nor this process's, nor a listed
        process's: processes NVML does not show (another container's). Counted only where
        it decides the failure (without it the request would have fit): a few MiB beyond
        the figures' rounding is the driver's own, not another server."""
        if not self.self_listed or self.total is None or self.free is None:
            return 0
        assert self.this_process is not None  # self_listed: the message gave it
        rest = self.total - self.free - self.this_process - self.listed_others
        decides = self.free + self.listed_others + rest >= self.requested
        return rest if rest > self.slack and decides else 0

    def describe(self) -> str:
        """ "GPU 0: asked for 3.09 GiB; 159.12 MiB free of 139.80 GiB; this process 139.64
        GiB (PyTorch's tensors 139.05 GiB, cached unused 87.19 MiB)"."""
        where = f"GPU {self.gpu}" if self.gpu is not None else "The GPU"
        if self.startup_share is not None and self.total is not None and self.free is not None:
            return (
                f"{where} at start-up: {in_words(self.free)} free of {in_words(self.total)}; "
                f"--gpu-memory-utilization {self.startup_share} asks for "
                f"{in_words(self.requested)}"
            )
        parts = [f"asked for {in_words(self.requested)}"]
        if self.total is not None and self.free is not None:
            parts.append(f"{in_words(self.free)} free of {in_words(self.total)}")
        held = [
            f"{label} {in_words(size)}"
            for label, size in (
                ("PyTorch's tensors", self.allocated),
                ("cached unused", self.cached_unused),
            )
            if size is not None
        ]
        if self.this_process is not None:
            parts.append(f"this process {in_words(self.this_process)}")
        if held:
            parts.append(", ".join(held))
        if self.processes:
            label = "other processes" if self.self_listed else "processes"
            listed = ", ".join(f"{pid} ({in_words(used)})" for pid, used in self.processes)
            parts.append(f"{label}: {listed}")
        return f"{where}: " + "; ".join(parts)


@dataclass(frozen=True)
class MemoryReading:
    """What the figures of an out-of-memory message show, in a sentence."""

    kind: str  # one of READINGS
    text: str
    helps: bool = True  # False: it says what will not help
    values: tuple[FlagValue, ...] = ()  # flag values the figures give


READINGS = (
    "larger_than_gpu",
    "in_use_at_start",
    "other_processes",
    "unknown_processes",
    "fragmented",
    "not_fragmented",
    "processes_listed",
)
LISTED_AT_MOST = 8  # processes named in a reading; more are counted


def out_of_memory(text: str) -> tuple[OutOfMemory, ...]:
    """Each distinct out-of-memory message of the text, in the order printed."""
    read = [(m.start(), _read(m[0])) for m in MESSAGE.finditer(text)]
    read += [(m.start(), _read_startup(m)) for m in STARTUP.finditer(text)]
    found: list[OutOfMemory] = []
    for _, oom in sorted(read, key=lambda item: item[0]):
        if oom is not None and oom not in found:
            found.append(oom)
    # A server quoting the allocator's first sentence ("Capture cuda graph failed: ...
    # GPU 6 has a total capacity of ...") says less of the same failure: one entry.
    return tuple(oom for oom in found if not any(_tells_more(other, oom) for other in found))


def _tells_more(fuller: OutOfMemory, oom: OutOfMemory) -> bool:
    """Whether `fuller` is another report of `oom`'s failure with more figures."""
    if fuller == oom:
        return False
    for field in dataclasses.fields(OutOfMemory):
        if field.name in ("self_listed", "slack"):  # follow from the figures given
            continue
        figure = getattr(oom, field.name)
        if figure is not None and figure != () and figure != getattr(fuller, field.name):
            return False
    return True


def _read_startup(match: re.Match[str]) -> OutOfMemory:
    return OutOfMemory(
        requested=size_of(match["asked"], "GiB"),
        gpu=int(match["gpu"]) if match["gpu"] else None,
        total=size_of(match["total"], "GiB"),
        free=size_of(match["free"], "GiB"),
        startup_share=match["share"],
    )


def _read(message: str) -> OutOfMemory | None:
    request = REQUEST.match(message)
    if request is None:
        return None
    requested = size_of(*request.groups())
    if old := OLD_FIGURES.search(message):
        return _read_old(requested, int(old[1]), old[2])
    capacity = CAPACITY.search(message)
    this = THIS_PROCESS.search(message)
    held = HELD.search(message)
    processes = tuple((int(p[1]), size_of(p[2], p[3])) for p in PROCESS.finditer(message))
    if not (capacity or this or held or processes):
        return None  # the request alone ("Capture cuda graph failed: ... Tried to allocate
        # 1.02 GiB."): the quoted error says it already
    slack = 0
    if capacity:
        slack += rounding_of(capacity[2], capacity[3]) + rounding_of(capacity[4], capacity[5])
    if this:
        slack += rounding_of(*this.groups())
    return OutOfMemory(
        requested,
        gpu=int(capacity[1]) if capacity else None,
        total=size_of(capacity[2], capacity[3]) if capacity else None,
        free=size_of(capacity[4], capacity[5]) if capacity else None,
        allocated=size_of(held[1], held[2]) if held else None,
        cached_unused=size_of(held[3], held[4]) if held else None,
        this_process=size_of(*this.groups()) if this else None,
        processes=processes,
        self_listed=this is not None,
        slack=slack,
    )


def _read_old(requested: int, gpu: int, figures: str) -> OutOfMemory:
    sizes: dict[str, int] = {}
    for part in figures.split(";"):
        if match := OLD_PART.match(part):
            sizes[match[3]] = size_of(match[1], match[2])
    allocated = sizes.get("already allocated")
    reserved = sizes.get("reserved in total by PyTorch")
    cached = sizes.get("cached")  # before "reserved": the cache on top of the tensors
    if reserved is not None and allocated is not None:
        cached = max(reserved - allocated, 0)
    return OutOfMemory(
        requested,
        gpu=gpu,
        total=sizes.get("total capacity"),
        free=sizes.get("free"),
        allocated=allocated,
        cached_unused=cached,
    )


def readings(messages: Iterable[OutOfMemory]) -> tuple[MemoryReading, ...]:
    """What the messages' figures show, a sentence for each kind (the first message that
    shows it speaks; the GPUs of the others that show it too are named)."""
    first: dict[str, MemoryReading] = {}
    also: dict[str, list[str]] = {}
    for oom in messages:
        for reading in _readings_of(oom):
            if reading.kind in first:
                also[reading.kind].append(str(oom.gpu) if oom.gpu is not None else "?")
            else:
                first[reading.kind], also[reading.kind] = reading, []
    shown = []
    for kind in READINGS:
        if kind not in first:
            continue
        reading = first[kind]
        if gpus := sorted(set(also[kind]) - {"?"}):
            reading = dataclasses.replace(
                reading, text=f"{reading.text} The same on GPU {', '.join(gpus)}."
            )
        shown.append(reading)
    return tuple(shown)


def listed_processes(
    processes: Sequence[tuple[int | None, int, str, int | None]],
) -> tuple[MemoryReading, ...]:
    """nvidia-smi's process list, pasted beside a memory error: what held GPU memory when
    it ran. Taken after the failure, a process there is not the failed server's."""
    if not processes:
        return ()
    named = [
        f"{f'GPU {gpu}: ' if gpu is not None else ''}{name} (pid {pid})"
        + (f" {in_words(used)}" if used is not None else "")
        for gpu, pid, name, used in processes[:LISTED_AT_MOST]
    ]
    if len(processes) > LISTED_AT_MOST:
        named.append(f"{len(processes) - LISTED_AT_MOST} more")
    return (
        MemoryReading(
            "processes_listed",
            f"nvidia-smi, as pasted, lists processes holding GPU memory: {'; '.join(named)}. "
            "If the server that failed is no longer running, they are something else's (a "
            "server left from an earlier launch?): stop them or use other GPUs before "
            "lowering memory settings.",
        ),
    )


def _readings_of(oom: OutOfMemory) -> list[MemoryReading]:
    gpu = f"GPU {oom.gpu}" if oom.gpu is not None else "the GPU"
    asked = in_words(oom.requested)
    if oom.total is not None and oom.requested > oom.total:
        return [
            MemoryReading(
                "larger_than_gpu",
                f"The one allocation asked for {asked}, more than all of {gpu} "
                f"({in_words(oom.total)}): no memory setting makes it fit on one GPU; "
                "it has to be split across GPUs or made smaller.",
            )
        ]
    if busy := oom.in_use_at_start:
        assert oom.total is not None and oom.free is not None  # in_use_at_start needs them
        # Two decimals, rounded down: the share that still fits what was free.
        fits_share = math.floor(oom.free / oom.total * 100) / 100
        return [
            MemoryReading(
                "in_use_at_start",
                f"When the server started, {in_words(busy)} of {gpu} ({in_words(oom.total)}) "
                "was already in use, by other processes (a server left from an earlier "
                f"launch?) and this one's CUDA context: {in_words(oom.free)} was free, less "
                f"than the {asked} that --gpu-memory-utilization {oom.startup_share} asks "
                "for. Free the GPU, or to share it set --gpu-memory-utilization to at most "
                f"{fits_share:.2f}.",
                values=(
                    FlagValue(
                        "gpu-memory-utilization",
                        f"{fits_share:.2f}",
                        "at_most",
                        f"the share of {gpu} that was free when the server started",
                    ),
                )
                if fits_share > 0
                else (),
            )
        ]
    found: list[MemoryReading] = []
    if held := oom.others:
        named = [f"process {pid}: {in_words(used)}" for pid, used in oom.processes]
        if oom.unlisted:
            named.append(
                f"{in_words(oom.unlisted)} by processes not listed, as in another container"
            )
        listed = ", ".join(named)
        fits = oom.free is not None and oom.free + held >= oom.requested
        then = (
            f"without them the {asked} asked for would have fit. Stop them (a server left "
            "from an earlier launch?) or move to a free GPU before lowering this server's "
            "memory settings."
            if fits
            else f"even without them the {asked} asked for would not have fit."
        )
        found.append(
            MemoryReading(
                "other_processes",
                f"Other processes held {in_words(held)} of {gpu} ({listed}); {then}",
                helps=fits,
            )
        )
    elif len(oom.processes) > 1:
        listed = ", ".join(f"{pid} ({in_words(used)})" for pid, used in oom.processes)
        found.append(
            MemoryReading(
                "unknown_processes",
                f"{len(oom.processes)} processes were using {gpu}: {listed}. One is probably "
                "this server (PyTorch could not tell which, as in a container); memory the "
                "others hold is not this launch's to use.",
            )
        )
    if oom.cached_unused is None:
        return found
    cached = in_words(oom.cached_unused)
    if oom.cached_unused >= oom.requested:
        found.append(
            MemoryReading(
                "fragmented",
                f"PyTorch had {cached} reserved but unused, more than the {asked} asked for, "
                "yet in pieces too small for it: the memory is fragmented. "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets the cache grow one "
                "segment instead.",
            )
        )
    elif oom.free is not None and oom.cached_unused + oom.free < oom.requested:
        found.append(
            MemoryReading(
                "not_fragmented",
                f"Not fragmentation: cached-but-unused ({cached}) and free "
                f"({in_words(oom.free)}) memory together are less than the {asked} asked "
                "for, so expandable_segments (the message's own hint) would not make it fit.",
                helps=False,
            )
        )
    return found


__all__ = [
    "READINGS",
    "MemoryReading",
    "OutOfMemory",
    "in_words",
    "listed_processes",
    "out_of_memory",
    "readings",
    "size_of",
]
