"""Is one commit faster than another? Both measured at once, taking turns.

This machine's speed drifts by a third from one five-minute run to the next (other
tenants of the host), so two `diagnose_speed.py` runs made one after the other
compare the moments more than the code. Here each commit gets a worker process of
its own (a detached `git worktree` in a temporary directory, run with this checkout's
`.venv`), holding the same synthetic knowledge base as `diagnose_speed.py` at one
size. The workers then take turns: each builds the graph in turn, as its tree's
`diagnose_speed.build_streamed` reads what the knowledge base stores (twice: the first
build of a process pays for growing its heap, the second does not), and the 500
pastes are diagnosed in chunks of 25, the order of the workers flipped every chunk,
twice over. A drift of the machine lands on every commit alike.

    .venv/bin/python bench/speed_side_by_side.py 45a9826 HEAD            # at 100k
    .venv/bin/python bench/speed_side_by_side.py --size 20000 main lead

The workers hold a graph each: about 2 GiB per commit at 100k.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 25
PASSES = 2
BUILDS = 2


def worker(root: Path, size: int) -> None:
    """Serve `build` and `diagnose FROM TO` on stdin, one JSON list of timings a line."""
    sys.path[:0] = [str(root), str(root / "bench")]
    import random

    import diagnose_speed as bench  # the tree's own bench: its knowledge base and pastes

    from decisiontree.context import Context
    from decisiontree.diagnose import diagnose
    from decisiontree.samples import signatures_of_sample, stored_form

    rng = random.Random(bench.SEED + size)
    records, bugs = bench.findings(size, rng)
    texts = bench.pastes(bugs, rng)
    stored = {
        sample: json.dumps(stored_form(signatures_of_sample(sample)))
        for record in records
        for sample in record.samples
    }
    if hasattr(bench, "stored_own_words"):  # a tree that keeps findings' own words (47)
        own = [bench.stored_own_words(record) for record in records]

        def rows() -> Any:
            return bench.stored_rows(records, stored, own)
    else:

        def rows() -> Any:
            return ([[sample, stored[sample]] for sample in r.samples] for r in records)

    context = Context(arch="sm_120", framework="sglang")
    graph = None
    print("ready", flush=True)
    for line in sys.stdin:
        command, *span = line.split()
        if command == "build":
            graph = None
            gc.collect()
            started = time.perf_counter()
            graph = bench.build_streamed(records, rows())
            timings = [time.perf_counter() - started]
            gc.collect()
            for text in texts[:20]:  # warm, as diagnose_speed.py's first pass is not
                diagnose(text, context, graph)
        else:
            timings = []
            for text in texts[int(span[0]) : int(span[1])]:
                started = time.perf_counter()
                diagnose(text, context, graph)
                timings.append((time.perf_counter() - started) * 1000)
        print(json.dumps(timings), flush=True)


class Worker:
    def __init__(self, revision: str, tree: Path, size: int) -> None:
        self.revision = revision
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(tree), "--size", str(size)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tree,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        self.builds: list[float] = []
        self.diagnoses: list[float] = []

    def ready(self) -> None:
        line = self.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"{self.revision}: the worker did not start ({line or 'no output'})")

    def ask(self, command: str) -> list[float]:
        self.stdin.write(command + "\n")
        self.stdin.flush()
        return json.loads(self.stdout.readline())

    def stop(self) -> None:
        self.stdin.close()
        self.process.wait()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revisions", nargs="*")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(Path(args.worker), args.size)
        return
    if len(args.revisions) < 2:
        parser.error("give two or more revisions")
    with tempfile.TemporaryDirectory(prefix="side-by-side-") as scratch:
        trees = []
        for number, revision in enumerate(args.revisions):
            tree = Path(scratch) / f"tree{number}"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), revision],
                check=True,
            )
            trees.append(tree)
        try:
            compare(args.revisions, trees, args.size)
        finally:
            for tree in trees:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                    check=False,
                )


def compare(revisions: list[str], trees: list[Path], size: int) -> None:
    workers = [Worker(r, t, size) for r, t in zip(revisions, trees, strict=True)]
    try:
        for one in workers:
            one.ready()
        for _ in range(BUILDS):
            for one in workers:
                one.builds += one.ask("build")
        for turn in range(PASSES * 500 // CHUNK):
            start = (turn * CHUNK) % 500
            order = workers if turn % 2 == 0 else workers[::-1]
            for one in order:
                one.diagnoses += one.ask(f"diagnose {start} {start + CHUNK}")
    finally:
        for one in workers:
            one.stop()
    print(f"{size} findings, {len(workers)} commits taking turns ({PASSES} x 500 pastes each)")
    print("| commit | build s, 1st / 2nd | diag p50 ms | diag p99 ms |")
    print("| --- | --- | --- | --- |")
    for one in workers:
        print(
            f"| {one.revision} | {' / '.join(f'{b:.2f}' for b in one.builds)} "
            f"| {statistics.median(one.diagnoses):.2f} | {percentile(one.diagnoses, 0.99):.2f} |"
        )


if __name__ == "__main__":
    main()
