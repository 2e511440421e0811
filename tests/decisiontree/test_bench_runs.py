"""A validation run as the host sees it: the launch, the benchmark command, what is stored.

The printouts are tests/validation/fixtures/bench's (decisiontree/recipes.py is plain
Python; its other tests are tests/validation/test_recipes.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decisiontree.recipes import (
    UnknownBenchFormat,
    bench_argv,
    build_launch,
    gpu_summary,
    parse_bench_output,
    parse_gpu_query,
    recipe_for,
)

BENCH = Path(__file__).parents[1] / "validation" / "fixtures" / "bench"


def vllm_launch(env: dict[str, str]) -> str:
    plan = build_launch(
        recipe_for("vllm"), model="Qwen/Qwen3-8B", port=8001, flags={}, env=env, version=None
    )
    return plan.shell()


def test_a_launch_runs_the_server_itself_and_env_only_to_set_variables() -> None:
    assert vllm_launch({}) == "vllm serve Qwen/Qwen3-8B --host 127.0.0.1 --port 8001"
    assert vllm_launch({"NCCL_DEBUG": "INFO"}).startswith("env NCCL_DEBUG=INFO vllm serve ")


def test_each_framework_benchmarks_with_its_own_tool() -> None:
    sizes = {"requests": 50, "concurrency": 8, "input_tokens": 1024, "output_tokens": 256}
    sglang = bench_argv("sglang", model="org/M", port=30000, **sizes)
    vllm = bench_argv("vllm", model="org/M", port=8000, **sizes)

    assert sglang[:3] == ("python3", "-m", "sglang.bench_serving")
    assert vllm[:3] == ("vllm", "bench", "serve")


def test_a_run_stores_its_request_counts_as_whole_numbers() -> None:
    stored = parse_bench_output((BENCH / "vllm_bench_serve.txt").read_text()).as_dict()

    assert '"completed": 98, "failed": 2' in json.dumps(stored)


def test_a_printout_cut_before_its_result_table_says_what_is_missing() -> None:
    with pytest.raises(UnknownBenchFormat, match="no 'Serving Benchmark Result' block"):
        parse_bench_output("Starting run ... killed before the Serving Benchmark Result table")


def test_a_host_without_gpus_records_none() -> None:
    assert gpu_summary(parse_gpu_query("")) == {"gpu_count": 0}
