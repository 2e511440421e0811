"""How fast is diagnosis at 1k, 10k and 100k findings?

Builds synthetic knowledge bases of varied tracebacks (deterministic seed), then
times graph build, memory, and diagnose latency over ~500 pastes, beside the time
to only parse the same pastes (the floor). Each size runs in a fresh process so
memory numbers do not leak between sizes, and a rebuild's peak memory is measured
in a process of its own that holds only what the service's rebuild holds.

    .venv/bin/python bench/diagnose_speed.py                 # 1k, 10k, 100k
    .venv/bin/python bench/diagnose_speed.py --sizes 1000,10000

Targets on a 2-core machine at 100k: p50 <= 5 ms, p99 <= 25 ms, build <= 20 s, a rebuild's
peak RSS <= 2 GiB.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from decisiontree.context import Context  # noqa: E402
from decisiontree.diagnose import diagnose  # noqa: E402
from decisiontree.finding_words import own_texts, stored_words, words_from_stored  # noqa: E402
from decisiontree.graph import REBUILD_CHUNK, KnowledgeGraph, build_graph  # noqa: E402
from decisiontree.launch_check import check_launch  # noqa: E402
from decisiontree.records import (  # noqa: E402
    Change,
    ChangeAction,
    Condition,
    Evidence,
    FindingRecord,
    FixRecord,
    Outcome,
)
from decisiontree.samples import (  # noqa: E402
    SampleSignatures,
    from_stored,
    signatures_of_sample,
    stored_form,
)
from decisiontree.traceback import parse  # noqa: E402
from decisiontree.vocabulary import load  # noqa: E402

T = TypeVar("T")
SEED = 20260219
PASTES = 500

PACKAGES = (
    "sglang/srt",
    "vllm/v1",
    "vllm/model_executor",
    "flashinfer",
    "sgl_kernel",
    "torch/distributed",
    "transformers",
    "deep_gemm",
    "triton/runtime",
)
AREAS = (
    "layers/attention",
    "mem_cache",
    "managers",
    "model_executor",
    "distributed",
    "sampling",
    "moe",
    "quantization",
    "worker",
    "engine",
    "kernels",
    "speculative",
)
WORDS = (
    "decode",
    "prefill",
    "kv",
    "cache",
    "page",
    "block",
    "expert",
    "router",
    "scale",
    "quant",
    "fp8",
    "fp4",
    "nvfp4",
    "mla",
    "nsa",
    "dsa",
    "topk",
    "gemm",
    "graph",
    "capture",
    "alloc",
    "pool",
    "buffer",
    "rope",
    "sink",
    "shard",
    "rank",
    "stream",
    "token",
    "batch",
    "logits",
    "sampler",
    "spec",
    "draft",
    "lora",
    "moe",
    "indexer",
)
EXCEPTIONS = (
    "RuntimeError",
    "AssertionError",
    "ValueError",
    "torch.OutOfMemoryError",
    "KeyError",
    "TypeError",
    "NotImplementedError",
    "IndexError",
    "torch.AcceleratorError",
    "AttributeError",
)
PREFIXES = (
    "/home/{u}/sglang/python/",
    "/usr/local/lib/python3.12/dist-packages/",
    "/opt/venv/lib/python3.11/site-packages/",
    "/root/.venv/lib/python3.10/site-packages/",
)
ARCHS = ("sm_80", "sm_89", "sm_90", "sm_100", "sm_120")
FLAGS = (
    ("kv-cache-dtype", ("fp8_e4m3", "bf16", "auto")),
    ("attention-backend", ("triton", "flashinfer", "fa3")),
    ("mem-fraction-static", ("0.8", "0.88")),
)


def identifier(rng: random.Random, parts: int) -> str:
    return "_".join(rng.choice(WORDS) for _ in range(parts)) + f"_{rng.randrange(1000)}"


class Bug:
    """A synthetic bug: fixed structure, rendered with per-machine noise."""

    def __init__(self, rng: random.Random) -> None:
        self.exception = rng.choice(EXCEPTIONS)
        self.frames = [self._frame(rng) for _ in range(rng.randint(3, 6))]
        self.detail = identifier(rng, rng.randint(2, 4))
        self.message = rng.choice(
            (
                "assert not self.{d}",
                "{d} is not supported for dtype {w} on this device",
                "CUDA error: an illegal memory access was encountered in {d}",
                "expected {d} to have {n} elements, got {m}",
                "Tried to allocate {n}.50 GiB in {d}",
                "unsupported {w} layout for {d}",
            )
        )
        self.word = rng.choice(WORDS)

    def _frame(self, rng: random.Random) -> tuple[str, str, str]:
        module = f"{rng.choice(PACKAGES)}/{rng.choice(AREAS)}/{identifier(rng, 2)}.py"
        return module, identifier(rng, rng.randint(1, 3)), f"return self.{identifier(rng, 2)}(x)"

    def render(self, rng: random.Random) -> str:
        prefix = rng.choice(PREFIXES).format(u=rng.choice(("dev", "ops", "alice")))
        rank = (
            f"[2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 0{rng.randint(0, 9)}:00:00 "
            f"TP{rng.randrange(8)}] "
        )
        lines = [rank + "Scheduler hit an exception: Traceback (most recent call last):"]
        for module, function, code in self.frames:
            lines.append(f'  File "{prefix}{module}", line {rng.randint(10, 3000)}, in {function}')
            lines.append(f"    {code}")
        message = self.message.format(
            d=self.detail, w=self.word, n=rng.randint(2, 900), m=rng.randint(2, 900)
        )
        lines.append(f"{self.exception}: {message}")
        return "\n".join(lines) + "\n"


def findings(count: int, rng: random.Random) -> tuple[list[FindingRecord], list[Bug]]:
    bugs = [Bug(rng) for _ in range(count)]
    records = [finding(n, bug, rng) for n, bug in enumerate(bugs, start=1)]
    return records, bugs


def finding(number: int, bug: Bug, rng: random.Random) -> FindingRecord:
    flag, values = rng.choice(FLAGS)
    conditions = (
        Condition("gpu.arch", rng.choice(ARCHS)),
        Condition(f"flag.{flag}", rng.choice(values)),
        Condition("framework", rng.choice(("sglang", "vllm"))),
    )
    fixes = tuple(fix(number * 10 + k, rng) for k in range(rng.randint(1, 3)))
    return FindingRecord(
        number,
        f"synthetic finding {number}",
        "bug",
        f"cause {bug.detail}",
        (bug.render(rng),),
        conditions,
        fixes,
    )


def fix(fix_id: int, rng: random.Random) -> FixRecord:
    flag, values = rng.choice(FLAGS)
    evidence = Evidence(
        validated_passed=((rng.choice(ARCHS), rng.randint(0, 3)),),
        feedback_helped=rng.randint(0, 4),
    )
    outcome = rng.choice((Outcome.RESOLVES, Outcome.RESOLVES, Outcome.PARTIAL, Outcome.NO_EFFECT))
    return FixRecord(
        fix_id,
        f"set {flag}",
        (Change(ChangeAction.SET_FLAG, flag, rng.choice(values)),),
        outcome,
        evidence,
    )


def pastes(bugs: list[Bug], rng: random.Random) -> list[str]:
    """Mostly known bugs seen on another machine; one in ten unrelated."""
    chosen = [rng.choice(bugs).render(rng) for _ in range(PASTES * 9 // 10)]
    chosen += [Bug(rng).render(rng) for _ in range(PASTES - len(chosen))]
    rng.shuffle(chosen)
    return chosen


def timed(action: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def latencies(items: list[T], action: Callable[[T], object]) -> tuple[list[float], list[float]]:
    """Per item (a paste, a launch), wall-clock and CPU milliseconds: on a shared machine
    the CPU time of this process is what the code costs; the wall clock adds the others'."""
    wall, cpu = [], []
    for item in items:
        started, started_cpu = time.perf_counter(), time.process_time()
        action(item)
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return wall, cpu


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def peak_rss_mib() -> float:
    """This process's own peak RSS. Not `ru_maxrss`: Linux carries it across exec, so a
    child started by a process that had grown to 2.4 GiB reported 2.4 GiB whatever it
    did itself; VmHWM is the peak of the memory the process now runs in."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:  # not Linux: ru_maxrss, the parent's peak included
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kib = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(kib) / 1024


def one_size(size: int) -> dict[str, float]:
    rng = random.Random(SEED + size)
    records, bugs = findings(size, rng)
    texts = pastes(bugs, rng)
    # As the knowledge base does: samples are parsed once at ingest and their signatures
    # stored as JSON; a (re)build reads them back instead of parsing again.
    # And each finding's own words, as the knowledge base keeps them (finding_words).
    ingest_s, (stored, own_words) = timed(
        lambda: (
            {
                sample: json.dumps(stored_form(signatures_of_sample(sample)))
                for record in records
                for sample in record.samples
            },
            [stored_own_words(record) for record in records],
        )
    )

    def build() -> KnowledgeGraph:
        # As kb.services.diagnosis rebuilds: the stored signatures read back a chunk of
        # findings at a time, inside the build (reading them all first held every
        # sample's signatures at once: a third more memory touched, and 2-4 s more here).
        return build_streamed(records, stored_rows(records, stored, own_words))

    build_cpu = time.process_time()
    build_s, graph = timed(build)
    build_cpu = time.process_time() - build_cpu
    del graph
    gc.collect()
    rebuild_peak = rebuild_in_child(records, stored, own_words)
    # Memory the graph keeps once built (the signatures read back are dropped after the
    # build, as the service does), measured on a second build under tracemalloc.
    tracemalloc.start()
    graph = build()
    gc.collect()
    graph_mib = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    context = Context(arch="sm_120", framework="sglang")
    parse_ms, _ = latencies(texts, parse)
    diag_ms, diag_cpu = latencies(texts, lambda t: diagnose(t, context, graph))
    matched = sum(diagnose(t, context, graph).match != "none" for t in texts)
    # A launch checked before it runs reads every finding's conditions (no index): timed
    # over launches of each architecture and framework with one flag set.
    vocabulary = load()
    launches = [
        Context(arch=arch, framework=framework, flags={flag: rng.choice(values)})
        for arch in ARCHS
        for framework in ("sglang", "vllm")
        for flag, values in FLAGS[:3]
    ]
    check_ms, _ = latencies(launches, lambda c: check_launch(c, graph, vocabulary))
    return {
        "size": size,
        "ingest_s": ingest_s,
        "build_s": build_s,
        "build_cpu_s": build_cpu,
        "graph_mib": graph_mib,
        "rss_peak_mib": rebuild_peak,
        "parse_p50": statistics.median(parse_ms),
        "parse_p99": percentile(parse_ms, 0.99),
        "p50": statistics.median(diag_ms),
        "p99": percentile(diag_ms, 0.99),
        "cpu_p50": statistics.median(diag_cpu),
        "cpu_p99": percentile(diag_cpu, 0.99),
        "matched": matched / len(texts),
        "check_p50": statistics.median(check_ms),
        "check_p99": percentile(check_ms, 0.99),
    }


def stored_own_words(record: FindingRecord) -> str:
    texts = own_texts(record.title, record.summary, record.cause, (f.summary for f in record.fixes))
    return json.dumps(stored_words(text for _, text in texts))


Row = tuple[list[tuple[str, str]], str]  # [sample, stored signatures] pairs, stored own words


def stored_rows(
    records: list[FindingRecord], stored: dict[str, str], own_words: list[str]
) -> Iterator[Row]:
    for record, words in zip(records, own_words, strict=True):
        yield [(sample, stored[sample]) for sample in record.samples], words


def rebuild_in_child(
    records: list[FindingRecord], stored: dict[str, str], own_words: list[str]
) -> float:
    """Peak RSS (MiB) of a process that does what the service does when the knowledge base
    moves: it holds a graph, lets it go, and builds anew from the findings, every
    sample's stored signatures and their own stored words, read back `REBUILD_CHUNK`
    findings at a time."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as rows:
        for row in stored_rows(records, stored, own_words):  # a finding's, a line
            rows.write(json.dumps(row))
            rows.write("\n")
        rows.flush()
        out = subprocess.run(
            [sys.executable, __file__, "--rebuild", str(len(records)), rows.name],
            check=True,
            capture_output=True,
            text=True,
        )
    return float(out.stdout.strip().splitlines()[-1])


def rebuild(size: int, rows: str) -> float:
    records, _ = findings(size, random.Random(SEED + size))
    with open(rows) as lines:  # the graph the process held
        graph = build_streamed(records, (json.loads(line) for line in lines))
    del graph  # as kb.services.diagnosis lets the old graph go before a rebuild
    with open(rows) as lines:
        graph = build_streamed(records, (json.loads(line) for line in lines))
    assert len(graph.findings) == size
    return peak_rss_mib()


def build_streamed(records: list[FindingRecord], rows: Iterator[Row]) -> KnowledgeGraph:
    """The graph of `records`; `rows` gives each finding's [sample, stored signatures] pairs
    and its stored own words, in the records' order."""
    signatures: dict[str, SampleSignatures] = {}
    words: dict[str, Sequence[str]] = {}

    def chunks() -> Iterator[FindingRecord]:
        # As kb.services.diagnosis.published_records reads the database: a chunk of
        # findings, their samples' stored signatures and their stored words at a time.
        for start in range(0, len(records), REBUILD_CHUNK):
            signatures.clear()
            words.clear()
            chunk = records[start : start + REBUILD_CHUNK]
            for _ in chunk:
                pairs, own = next(rows)
                for sample, raw in pairs:
                    found = from_stored(json.loads(raw))
                    if found is not None:
                        signatures[sample] = found
                words.update(words_from_stored(json.loads(own)))
            yield from chunk

    return build_graph(chunks(), cache=signatures, words=words)


def run_in_child(size: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--one", str(size)], check=True, capture_output=True, text=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def table(rows: list[dict[str, float]]) -> Iterator[str]:
    yield (
        f"{'findings':>9} {'parse all s':>11} {'build s':>8} {'build cpu s':>11} "
        f"{'graph MiB':>9} {'rebuild peak MiB':>16} {'parse p50':>10} {'parse p99':>10} "
        f"{'diag p50':>9} {'diag p99':>9} {'cpu p50':>9} {'cpu p99':>9} {'matched':>8} "
        f"{'check p50':>10} {'check p99':>10}"
    )
    for r in rows:
        yield (
            f"{int(r['size']):>9} {r['ingest_s']:>11.2f} {r['build_s']:>8.2f} "
            f"{r['build_cpu_s']:>11.2f} {r['graph_mib']:>9.0f} {r['rss_peak_mib']:>16.0f} "
            f"{r['parse_p50']:>8.2f}ms {r['parse_p99']:>8.2f}ms "
            f"{r['p50']:>7.2f}ms {r['p99']:>7.2f}ms {r['cpu_p50']:>7.2f}ms {r['cpu_p99']:>7.2f}ms "
            f"{r['matched']:>8.0%} {r['check_p50']:>8.1f}ms {r['check_p99']:>8.1f}ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rebuild", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rebuild:
        print(rebuild(int(args.rebuild[0]), args.rebuild[1]))
        return
    if args.one:
        print(json.dumps(one_size(args.one)))
        return
    rows = []
    before = yardstick_ms()
    for size in (int(s) for s in args.sizes.split(",")):
        rows.append(run_in_child(size))
        print(f"... {size} done", file=sys.stderr)
    after = yardstick_ms()
    print(
        f"diagnose speed: {PASTES} pastes per size (90% known bugs re-rendered, "
        f"10% unseen), seed {SEED}"
    )
    print("\n".join(table(rows)))
    print("parse all = parsing every sample once, as ingest does; build = graph build from the")
    print("stored signatures, as every (re)build in the service does (cold build = both);")
    print("graph MiB = memory the built graph holds (tracemalloc); rebuild peak MiB = peak RSS")
    print("of a process that builds a graph, lets it go and builds anew, reading the stored")
    print("signatures back a chunk of findings at a time, as the service does;")
    print("cpu = this process's CPU time per diagnosis (the machine's other load left out);")
    print("check = a launch checked before it runs (decisiontree.launch_check), at most 20 told.")
    print("targets at 100k: diag p50 <= 5 ms, p99 <= 25 ms, build <= 20 s, rebuild peak <= 2 GiB")
    print(
        f"machine yardstick: {before:.0f} ms before, {after:.0f} ms after (a fixed pure-Python "
        f"loop, best of {YARDSTICK_RUNS}: this host's speed drifts by a third between runs; "
        "compare runs made at similar yardsticks, or commits with speed_side_by_side.py)"
    )


YARDSTICK_RUNS = 5


def yardstick_ms() -> float:
    """How fast this machine runs plain Python now: code of ours never changes it."""
    best = float("inf")
    for _ in range(YARDSTICK_RUNS):
        started = time.process_time()
        counts: dict[str, int] = {}
        for i in range(300_000):
            key = str(i % 997)
            counts[key] = counts.get(key, 0) + len(key)
        best = min(best, time.process_time() - started)
    return best * 1000


if __name__ == "__main__":
    main()
