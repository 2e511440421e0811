"""How long does `manage.py export_findings` take, and how much memory, as the knowledge
base grows?

Ingests a generated FINDINGS.md (fixed seed: each entry a GPU, model, framework, flags,
conditions, three fixes, a traceback and prose) into a throw-away SQLite database, then
times the export a finding at a time, as the command writes it. Prints one row per size:
ingest time, export time, per finding, the file's size and the export's peak of Python
memory (tracemalloc), and whether the file reads back to the same findings.

    .venv/bin/python bench/export_speed.py [--sizes 1000 5000]
"""

from __future__ import annotations

import argparse
import io
import itertools
import os
import random
import secrets
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = tempfile.mkdtemp(prefix="fixgraph-export-bench-")
sys.path.insert(0, str(ROOT))
os.environ["DATABASE_URL"] = f"sqlite:///{SCRATCH}/bench.sqlite3"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# DEBUG off: with it on, Django keeps every SQL statement, and the peak would count them.
os.environ.setdefault("DEBUG", "False")
os.environ.setdefault("SECRET_KEY", secrets.token_hex(32))  # this process only; no page served
os.environ.setdefault("FIXGRAPH_VAR_DIR", SCRATCH)

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from decisiontree.documents import default_vocabulary, parse_findings_md  # noqa: E402
from kb.models import Finding, SourceDocument  # noqa: E402
from kb.services.export import export_parts  # noqa: E402

GPUS = ("8x NVIDIA H100 80GB HBM3", "4x NVIDIA L40S", "8x NVIDIA RTX PRO 6000 Blackwell")
MODELS = ("Qwen/Qwen3-32B (qwen3)", "meta-llama/Llama-3.1-70B (llama)", "GLM-5-NVFP4 (glm)")
FRAMEWORKS = ("sglang 0.5.9; flashinfer-python 0.7.2", "vllm 0.11.0; torch 2.9.0")
ENTRIES_A_FILE = 5000
FLAGS = ("--kv-cache-dtype fp8_e4m3", "--mem-fraction-static 0.88", "--enable-prefix-caching")


def entry(number: int, rng: random.Random) -> str:
    module = f"kernel_{rng.randrange(10_000)}"
    return (
        f"## Decode fails in {module} on request {number}\n"
        f"- Hardware: {rng.choice(GPUS)}\n- Model: {rng.choice(MODELS)}\n"
        f"- Framework: {rng.choice(FRAMEWORKS)}\n- Flags: {rng.choice(FLAGS)} --tp-size 8\n"
        f"- Cause: {module} reads a page the scheduler freed ({number})\n"
        f"- When: gpu.arch = sm_90; flag.kv-cache-dtype != bf16\n"
        f"- Fix: --kv-cache-dtype bf16\n- Fix: pin flashinfer-python==0.7.{number % 9}"
        " [partial]\n- Did not help: --disable-cuda-graph\n- Status: resolved\n\n"
        "```\nTraceback (most recent call last):\n"
        f'  File "/srv/serve/{module}.py", line {number % 900 + 10}, in forward\n'
        "    out = run(batch)\n"
        f"RuntimeError: CUDA error: illegal memory access in {module} step {number}\n```\n\n"
        "Seen under load; the first request after a restart is enough.\n"
    )


def measure(size: int) -> tuple[float, float, int, float, bool]:
    Finding.objects.all().delete()
    SourceDocument.objects.all().delete()
    rng = random.Random(size)
    source = Path(SCRATCH) / f"in-{size}"
    source.mkdir()
    entries = [entry(i, rng) for i in range(size)]
    # Ingest reads documents of 5 MB at most: the generated log goes in as smaller files.
    for start in range(0, size, ENTRIES_A_FILE):
        text = "# Bench\n\n" + "\n".join(entries[start : start + ENTRIES_A_FILE])
        (source / f"part-{start // ENTRIES_A_FILE:04d}.md").write_text(text)
    started = time.perf_counter()
    call_command("ingest", str(source), "--publish", verbosity=0, stdout=io.StringIO())
    ingested = time.perf_counter() - started

    target = Path(SCRATCH) / f"out-{size}"
    target.mkdir()
    vocabulary = default_vocabulary()
    # What one process loads once (vocabularies, compiled patterns) is not the export's peak.
    list(itertools.islice(export_parts(), 3))
    tracemalloc.start()
    started = time.perf_counter()
    # As `export_findings -o DIR` writes it: in parts that `ingest` reads.
    call_command("export_findings", "--output", str(target), stderr=io.StringIO())
    exported = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()

    before, after = read_all(source, vocabulary), read_all(target, vocabulary)
    size_bytes = sum(part.stat().st_size for part in target.iterdir())
    return ingested, exported, size_bytes, peak, before == after


def read_all(folder: Path, vocabulary: object) -> tuple[object, ...]:
    return tuple(
        finding
        for part in sorted(folder.iterdir())
        for finding in parse_findings_md(part.read_text(), vocabulary)[1]  # type: ignore[arg-type]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    sizes = parser.parse_args().sizes
    call_command("migrate", verbosity=0)
    call_command("load_vocabulary", verbosity=0)
    print(f"{'findings':>9} {'ingest s':>9} {'export s':>9} {'ms/finding':>11} "
          f"{'file MB':>8} {'peak MiB':>9} {'reads back':>11}")  # fmt: skip
    for size in sizes:
        ingested, exported, size_bytes, peak, same = measure(size)
        verdict = "same" if same else "DIFFERS"
        print(f"{size:>9} {ingested:>9.1f} {exported:>9.1f} {exported / size * 1000:>11.2f} "
              f"{size_bytes / 1e6:>8.1f} {peak:>9.1f} {verdict:>11}")  # fmt: skip


if __name__ == "__main__":
    main()
