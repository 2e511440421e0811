"""How fast is the search page over 100k findings on PostgreSQL?

Fills a throw-away test database with synthetic findings (bulk_create, fixed
seed) and their search documents, then times the home page view - Django test
Client GET `/?q=...` - over a mix of queries: identifiers from tracebacks,
flags, models, architectures, a pasted log line, and filtered searches. Prints
p50 / p99 per kind and overall.

The page runs as in production: DEBUG off (with DEBUG on, Django keeps and formats
every SQL statement), and no test-environment template instrumentation.

Needs PostgreSQL: start the test services and export their URL first,

    eval "$(scripts/test-services.sh up)"      # prints export DATABASE_URL=...
    .venv/bin/python bench/search_speed.py [--findings 100000] [--rounds 5]

or point DATABASE_URL at any PostgreSQL where the user may create a database.
The database is created as fixgraph_bench_search and dropped afterwards; with --keep
it stays (for EXPLAIN ANALYZE in psql) and a later --keep run reuses its rows. The
name is its own, so a test run beside it cannot drop it.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "False")
os.environ.setdefault("SECRET_KEY", secrets.token_hex(32))  # this process's pages only

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_databases, teardown_databases  # noqa: E402

from kb.models import Finding, LanguageModel  # noqa: E402
from kb.search.documents import (  # noqa: E402
    BuiltDocument,
    DocumentFields,
    built_document,
    store_documents,
)
from kb.search.facets import condition_facets, model_facets  # noqa: E402

BENCH_DATABASE = "fixgraph_bench_search"
BATCH = 5_000
EXCEPTIONS = [
    "AssertionError",
    "RuntimeError",
    "torch.OutOfMemoryError",
    "ValueError",
    "torch.AcceleratorError",
    "ImportError",
    "KeyError",
    "NotImplementedError",
]
IDENTIFIERS = [
    "nsa_kv_cache_store_fp8",
    "set_kv_buffer",
    "flashmla_kv",
    "cuda_graph_runner",
    "fused_moe_kernel",
    "allreduce_fusion",
    "mem_fraction_static",
    "flash_attn_varlen",
    "radix_attention",
    "paged_attention_v2",
    "deep_gemm",
    "nccl_all_gather",
    "scheduler_output_processor",
    "sampling_batch_info",
    "moe_align_block_size",
]
FLAGS = [
    "--kv-cache-dtype fp8_e4m3",
    "--attention-backend triton",
    "--tp 8",
    "--mem-fraction-static 0.95",
    "--enable-dp-attention",
    "--quantization fp8",
    "--max-model-len 131072",
    "--gpu-memory-utilization 0.92",
    "--enforce-eager",
]
MODELS = [
    "GLM-5-NVFP4",
    "DeepSeek-V3.2",
    "Qwen3-235B-A22B",
    "Llama-3.3-70B",
    "gpt-oss-120b",
    "Kimi-K2",
    "Mixtral-8x22B",
]
ARCHS = ["sm_80", "sm_89", "sm_90", "sm_100", "sm_120"]
WORDS = [
    "decode",
    "prefill",
    "capture",
    "kernel",
    "illegal",
    "memory",
    "access",
    "assert",
    "timeout",
    "shape",
    "mismatch",
    "dtype",
    "unsupported",
    "backend",
    "expert",
    "rank",
]

QUERIES: dict[str, list[str]] = {
    "identifier": ["nsa_kv_cache_store_fp8", "flashmla_kv", "fused_moe_kernel", "deep_gemm"],
    "flag": ["--kv-cache-dtype", "--mem-fraction-static 0.95", "--enforce-eager"],
    "model+arch": ["GLM-5 sm120", "Qwen3 sm_90", "DeepSeek-V3.2"],
    "words": ["illegal memory access", "cuda graph capture out of memory", "assert"],
    "pasted line": [
        "torch.AcceleratorError: CUDA error: an illegal memory access was "
        "encountered in fused_moe_kernel on rank 3 during decode"
    ],
    # A filter picked from the page's lists (a whole name), then one typed in part.
    "filtered": [
        "fp8?arch=sm_120",
        "decode?model=Qwen3-235B-A22B",
        "decode?model=Qwen3",
        "",
    ],
    "typo": ["flasmla_kv", "nsa_kv_cach_store", "cuda graph captre"],
}


def synthetic_findings(count: int, rng: random.Random) -> Iterator[Finding]:
    models = [LanguageModel.objects.get_or_create(name=name)[0] for name in MODELS]
    for i in range(count):
        words = " ".join(rng.sample(WORDS, 3))
        model = rng.choice(models)
        yield Finding(
            title=f"{rng.choice(EXCEPTIONS)} in {rng.choice(IDENTIFIERS)} during {words} #{i}",
            summary=f"{model.name} with {rng.choice(FLAGS)} on {rng.choice(ARCHS)}",
            model=model,
            cause=f"{rng.choice(IDENTIFIERS)} {rng.choice(WORDS)} {rng.choice(WORDS)}",
            status=Finding.Status.PUBLISHED,
            conditions=[{"key": "gpu.arch", "value": rng.choice(ARCHS)}],
        )


def document_for(finding: Finding) -> BuiltDocument:
    # The document the service builds (kb.search.documents.built_documents), from fewer rows.
    fields = DocumentFields(
        title=finding.title,
        errors=finding.cause,
        context=f"{finding.summary}\ngpu.arch = {finding.conditions[0]['value']}",
        body="",
    )
    assert finding.model is not None
    facets = [("status", finding.status), *condition_facets(finding.conditions)]
    facets += model_facets(finding.model)
    return built_document(finding, fields, facets)


def fill(count: int) -> float:
    started = time.perf_counter()
    rng = random.Random(20260301)
    batch: list[Finding] = []
    for finding in synthetic_findings(count, rng):
        batch.append(finding)
        if len(batch) == BATCH:
            store(batch)
            batch = []
    if batch:
        store(batch)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")  # statistics for the planner, as autovacuum's
    return time.perf_counter() - started


def store(batch: list[Finding]) -> None:
    created = Finding.objects.bulk_create(batch)
    store_documents([document_for(finding) for finding in created])  # the service's writer


def url_of(query: str) -> str:
    text, _, filters = query.partition("?")
    return "/?" + urlencode({"q": text}) + (f"&{filters}" if filters else "")


def time_queries(rounds: int) -> dict[str, list[float]]:
    client = Client(HTTP_HOST="localhost")  # an allowed host without test settings
    timings: dict[str, list[float]] = {kind: [] for kind in QUERIES}
    for queries in QUERIES.values():
        for query in queries:
            client.get(url_of(query))  # warm the plan cache once
    for _ in range(rounds):
        for kind, queries in QUERIES.items():
            for query in queries:
                started = time.perf_counter()
                response = client.get(url_of(query))
                timings[kind].append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, (query, response.status_code)
    return timings


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def report(count: int, fill_s: float, timings: dict[str, list[float]]) -> None:
    print(f"search page over {count:,} findings ({connection.vendor}); fill took {fill_s:.1f} s")
    print(f"{'kind':<14}{'n':>5}{'p50 ms':>10}{'p99 ms':>10}")
    everything: list[float] = []
    for kind, values in timings.items():
        everything += values
        print(
            f"{kind:<14}{len(values):>5}{statistics.median(values):>10.1f}"
            f"{percentile(values, 0.99):>10.1f}"
        )
    print(
        f"{'all':<14}{len(everything):>5}{statistics.median(everything):>10.1f}"
        f"{percentile(everything, 0.99):>10.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--findings", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--keep",
        action="store_true",
        help=f"keep the filled database ({BENCH_DATABASE}) and reuse it next time",
    )
    parser.add_argument(
        "--allow-sqlite",
        action="store_true",
        help="run on SQLite anyway (numbers are not the production ones)",
    )
    args = parser.parse_args()
    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine and not args.allow_sqlite:
        sys.exit(
            'DATABASE_URL is not PostgreSQL: run `eval "$(scripts/test-services.sh up)"` '
            "first, or pass --allow-sqlite."
        )
    settings.DATABASES["default"]["TEST"]["NAME"] = BENCH_DATABASE
    # serialized_aliases: no JSON copy of the whole database for test rollbacks (minutes).
    databases = setup_databases(
        verbosity=0, interactive=False, keepdb=args.keep, serialized_aliases=set()
    )
    try:
        filled = args.keep and Finding.objects.count() == args.findings
        fill_s = 0.0 if filled else fill(args.findings)
        report(args.findings, fill_s, time_queries(args.rounds))
    finally:
        if not args.keep:
            teardown_databases(databases, verbosity=0)


if __name__ == "__main__":
    main()
