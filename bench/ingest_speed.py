"""Extraction rate over 1,000 generated documents of realistic size (~10 KB).

    python bench/ingest_speed.py [--docs 1000] [--seed 7]

    python bench/ingest_speed.py --db [--docs 1000]   # the whole ingest, into a database

    python bench/ingest_speed.py --db --entries 250,2000,20000   # one FINDINGS.md each

    python bench/ingest_speed.py --emit 20000 > FINDINGS.md   # the same text, for manage.py ingest

Half are FINDINGS.md files of a few entries, half incident write-ups with a
launch command, a traceback, log noise and a story of what was tried. Without
--db only extraction is timed. With --db the documents are written to files and
`manage.py ingest`'s service stores them in a throw-away test database (the one
DATABASE_URL names, PostgreSQL under `scripts/test-services.sh run -- ...`):
decoding, extraction, fingerprints, rows, search documents. Target: 1,000
documents in under a minute.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from decisiontree.documents import extract_document  # noqa: E402

GPUS = [
    "8x H100",
    "2x NVIDIA H200",
    "4 x RTX 4090",
    "a B200 node (8x B200)",
    "8x RTX PRO 6000 Blackwell",
    "4x A100 80GB",
]
MODELS = [
    "meta-llama/Llama-3.1-70B-Instruct",
    "Qwen/Qwen3-235B-A22B-FP8",
    "deepseek-ai/DeepSeek-V3-0324",
    "zai-org/GLM-5-NVFP4",
]
FLAGS = [
    ("--mem-fraction-static", ["0.95", "0.88", "0.8"]),
    ("--kv-cache-dtype", ["fp8_e4m3", "bf16", "auto"]),
    ("--attention-backend", ["flashinfer", "triton", "fa3"]),
    ("--cuda-graph-max-bs", ["64", "256"]),
    ("--chunked-prefill-size", ["4096", "8192"]),
]
VERDICTS = [
    "did not help",
    "fixed it",
    "made it worse",
    "still crashed with the same error",
    "finally worked",
]
NOISE = (
    "[2026-02-19 00:0{m}:1{s} TP{r}] INFO scheduler.py:1021: Decode batch. "
    "#running-req: {n}, #token: {t}, gen throughput (token/s): {g}\n"
)
SGLANG = "/home/u{r}/sglang/python/sglang/srt"
TRACEBACK = (
    "[2026-02-19 00:08:10 TP{r}] Scheduler hit an exception: Traceback (most recent call last):\n"
    f'  File "{SGLANG}/managers/scheduler.py", line 2661, in run_scheduler_process\n'
    "    scheduler.event_loop_overlap()\n"
    f'  File "{SGLANG}/mem_cache/memory_pool.py", line {{line}}, in set_kv_buffer\n'
    "    assert not self.nsa_kv_cache_store_fp8\n"
    "AssertionError\n"
)
PROSE = (
    "We spent the afternoon on this one. The server loaded the weights, captured the CUDA "
    "graphs and then died on the first decode request, which is the worst kind of failure "
    "because everything looks fine until traffic arrives. The logs were long and mostly "
    "irrelevant, so here are the parts that mattered. "
)


def launch(rng: random.Random, model: str) -> str:
    flags = " \\\n  ".join(f"{name} {rng.choice(values)}" for name, values in rng.sample(FLAGS, 3))
    return f"python -m sglang.launch_server --model-path {model} --tp 8 \\\n  {flags}\n"


def writeup(rng: random.Random) -> str:
    model = rng.choice(MODELS)
    parts = [
        f"# Crash on {rng.choice(GPUS)} with {model}\n\n",
        PROSE * 5,
        "\n\n```\n",
        launch(rng, model),
        "```\n\n",
    ]
    parts += [NOISE.format(m=i % 10, s=i % 6, r=i % 8, n=i, t=i * 31, g=i * 1.7) for i in range(60)]
    parts += ["\n", TRACEBACK.format(r=rng.randrange(8), line=rng.randrange(900, 1600)), "\n"]
    for name, values in rng.sample(FLAGS, 4):
        parts.append(
            f"Switching to {name} {rng.choice(values)} {rng.choice(VERDICTS)}. {PROSE}\n\n"
        )
    return "".join(parts)


def findings_md(rng: random.Random) -> str:
    parts = ["# FINDINGS\n\n"]
    for n in range(6):
        name, values = rng.choice(FLAGS)
        parts.append(
            f"## Finding {n}: decode crash variant {rng.randrange(1000)}\n"
            f"- Hardware: {rng.choice(GPUS)}\n- Model: {rng.choice(MODELS)}\n"
            f"- Framework: sglang 0.5.{rng.randrange(10)}\n"
            f"- Flags: --tp-size 8 {name} {values[0]}\n- Cause: {PROSE[:120]}\n"
            f"- Fix: {name} {values[-1]}\n- Did not help: --disable-cuda-graph\n"
            "- Status: resolved\n\n"
            f"```\n{TRACEBACK.format(r=n, line=1498)}```\n{PROSE}\n\n"
        )
    return "".join(parts)


ERRORS = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {n} MiB in fused_moe_{n}",
    "RuntimeError: CUDA error: an illegal memory access was encountered in kernel_{n}",
    "AssertionError: assert not self.kv_store_{n}",
    "ValueError: unsupported quantization method q{n} for layer {n}",
]


def findings_md_entries(rng: random.Random, entries: int) -> str:
    """One FINDINGS.md of `entries` short entries (~200 bytes each: a long research log)."""
    parts = ["# FINDINGS\n\n"]
    for n in range(entries):
        name, values = rng.choice(FLAGS)
        parts.append(
            f"## Entry {n}: crash {rng.randrange(10**6)}\n"
            f"- Hardware: {rng.choice(GPUS)}\n"
            f"- Fix: {name} {values[-1]}\n\n"
            f"```\n{rng.choice(ERRORS).format(n=n)}\n```\n\n"
        )
    return "".join(parts)


def time_findings_md(sizes: list[int], rng: random.Random) -> None:
    """The whole ingest of one FINDINGS.md per size (what `manage.py ingest` runs): its
    findings stored and committed, then their search documents (built at the end of
    the run): each part timed, and the whole.

    Wall time moves with whatever else the machine runs, so the CPU time spent (this
    process, its worker processes and its PostgreSQL backend) is shown too. On an
    otherwise idle machine of one core the two agree; with a second core the wall
    time is less (the workers parse samples while this process writes rows)."""
    import os
    import tempfile

    from django.db import connection

    import kb.search.refresh as refresh
    from kb.models import Finding
    from kb.services.ingest import ingest_paths

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = int(cursor.fetchone()[0])

    def cpu_now() -> float:
        return time.process_time() + children_cpu() + backend_cpu(backend)

    search = {"wall": 0.0, "cpu": 0.0}
    build = refresh.refresh_queued

    def timed_build(*args: int) -> int:
        wall, cpu = time.perf_counter(), cpu_now()
        try:
            return build(*args)
        finally:
            search["wall"] += time.perf_counter() - wall
            search["cpu"] += cpu_now() - cpu

    refresh.refresh_queued = timed_build  # type: ignore[assignment]
    print(
        f"{'entries':>8} {'KB':>6} {'stored s':>9} {'stored/s':>9} {'cpu s':>7} {'per cpu s':>9}"
        f" {'search docs s':>13} {'its cpu s':>9} {'whole s':>8} {'whole/s':>8}"
        f" {'whole cpu s':>11} {'per cpu s':>9} {'main':>6} {'workers':>7} {'backend':>7}"
        f" {'load':>5}"
    )
    for size in sizes:
        text = findings_md_entries(rng, size)
        Finding.objects.all().delete()
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder, "FINDINGS.md")
            path.write_text(text)
            search.update(wall=0.0, cpu=0.0)
            wall, cpu = time.perf_counter(), cpu_now()
            parts = (time.process_time(), children_cpu(), backend_cpu(backend))
            report = ingest_paths([path], publish=True)
            main, workers, server = (
                now - then
                for now, then in zip(
                    (time.process_time(), children_cpu(), backend_cpu(backend)), parts, strict=True
                )
            )
            whole_wall = time.perf_counter() - wall
            whole_cpu = cpu_now() - cpu
        wall = whole_wall - search["wall"]
        cpu = whole_cpu - search["cpu"]
        assert Finding.objects.count() == size and not report.failed, report.failed
        print(
            f"{size:>8} {len(text) / 1024:>6.0f} {wall:>9.2f} {size / wall:>9.0f} "
            f"{cpu:>7.2f} {size / cpu:>9.0f} {search['wall']:>13.2f} {search['cpu']:>9.2f}"
            f" {whole_wall:>8.2f} {size / whole_wall:>8.0f} {whole_cpu:>11.2f}"
            f" {size / whole_cpu:>9.0f} {main:>6.2f} {workers:>7.2f} {server:>7.2f}"
            f" {os.getloadavg()[0]:>5.1f}"
        )


def children_cpu() -> float:
    """CPU seconds of this process's ended children (the ingest's sample parsers)."""
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def backend_cpu(pid: int) -> float:
    """CPU seconds (user + system) a local PostgreSQL backend has used; 0 if not readable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def with_test_database(work: Callable[[], None]) -> None:
    """Run `work` in a throw-away database (the one DATABASE_URL names, as `test_...`)."""
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "True")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import setup_databases, setup_test_environment, teardown_databases

    setup_test_environment()
    databases = setup_databases(verbosity=0, interactive=False)
    try:
        call_command("load_vocabulary", verbosity=0)
        print(f"database: {connection.vendor}")
        work()
    finally:
        teardown_databases(databases, verbosity=0)


def ingest_into_database(documents: list[str]) -> None:
    import os
    import tempfile

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "True")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import setup_databases, setup_test_environment, teardown_databases

    from kb.models import Finding
    from kb.services.ingest import ingest_paths

    setup_test_environment()
    databases = setup_databases(verbosity=0, interactive=False)
    try:
        call_command("load_vocabulary", verbosity=0)
        with tempfile.TemporaryDirectory() as folder:
            for number, text in enumerate(documents):
                suffix = "md" if number % 2 == 0 else "txt"
                Path(folder, f"doc-{number:05d}.{suffix}").write_text(text)
            for label in ("first ingest", "again (all unchanged)"):
                started = time.perf_counter()
                report = ingest_paths([folder], publish=True)
                elapsed = time.perf_counter() - started
                print(
                    f"{label:<22} {elapsed:6.2f} s  ({len(documents) / elapsed:5.0f} docs/s)  "
                    f"created {report.count('created')}, skipped {report.count('skipped')}, "
                    f"failed {report.count('failed')}"
                )
        print(f"{Finding.objects.count()} findings stored in {connection.vendor}")
    finally:
        teardown_databases(databases, verbosity=0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--db", action="store_true", help="time the whole ingest into a database")
    parser.add_argument(
        "--entries", help="comma-separated entry counts: one FINDINGS.md of each (needs --db)"
    )
    parser.add_argument(
        "--emit", type=int, help="print a FINDINGS.md of this many entries (to time the command)"
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    if args.emit:
        sys.stdout.write(findings_md_entries(rng, args.emit))
        return 0
    if args.entries:
        sizes = [int(n) for n in args.entries.split(",")]
        with_test_database(lambda: time_findings_md(sizes, rng))
        return 0
    documents = [writeup(rng) if i % 2 else findings_md(rng) for i in range(args.docs)]
    if args.db:
        ingest_into_database(documents)
        return 0
    size = sum(len(d) for d in documents) / len(documents)
    extract_document(documents[0])  # load the vocabulary outside the timing
    started = time.perf_counter()
    findings = sum(len(extract_document(d).findings) for d in documents)
    elapsed = time.perf_counter() - started
    print(f"{len(documents)} documents, {size / 1024:.1f} KB average, {findings} findings")
    print(
        f"extraction: {elapsed:.2f} s  ({len(documents) / elapsed:.0f} docs/s, "
        f"{elapsed / len(documents) * 1000:.1f} ms/doc)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
