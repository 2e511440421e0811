"""Launch commands and benchmark parsing: plain Python, no services needed."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from decisiontree.recipes import (
    RecipeRefused,
    UnknownBenchFormat,
    build_launch,
    cuda_version,
    gpu_summary,
    lay_changes_over,
    parse_bench_output,
    parse_gpu_query,
    recipe_for,
)
from decisiontree.records import Change, ChangeAction

BENCH = Path(__file__).parent / "fixtures" / "bench"
ENV = Path(__file__).parents[1] / "decisiontree" / "fixtures" / "env"


def sglang_launch(version: str | None, **flags: str | None) -> list[str]:
    plan = build_launch(
        recipe_for("sglang"),
        model="zai-org/GLM-5-NVFP4",
        port=31000,
        flags=flags,
        env={},
        version=version,
    )
    return list(plan.argv)


def test_it_applies_a_fixs_flag_changes_over_the_launch_as_reported() -> None:
    flags, env = lay_changes_over(
        {"--tp-size": "8", "nsa-decode-backend": "flashmla_kv", "kv-cache-dtype": "fp8_e4m3"},
        {},
        [
            Change(ChangeAction.SET_FLAG, "kv-cache-dtype", "bf16"),
            Change(ChangeAction.SET_FLAG, "dsa-decode-backend", "flashmla_sparse"),
            Change(ChangeAction.REMOVE_FLAG, "tp-size"),
            Change(ChangeAction.SET_ENV, "SGLANG_ENABLE_JIT_DEEPGEMM", "0"),
        ],
        framework="sglang",
    )
    assert flags == {"dsa-decode-backend": "flashmla_sparse", "kv-cache-dtype": "bf16"}
    assert env == {"SGLANG_ENABLE_JIT_DEEPGEMM": "0"}


def test_a_change_in_another_frameworks_spelling_replaces_the_flag_not_adds_one() -> None:
    # SGLang calls it --tp-size; a fix written with vLLM's --tensor-parallel-size means it.
    flags, _ = lay_changes_over(
        {"tp-size": "8"},
        {},
        [Change(ChangeAction.SET_FLAG, "tensor-parallel-size", "4")],
        framework="sglang",
    )
    assert flags == {"tp-size": "4"}
    assert sglang_launch("0.5.9", **flags).count("--tp-size") == 1


def test_it_spells_a_renamed_flag_the_way_the_hosts_release_knows_it() -> None:
    old = sglang_launch("0.5.9", **{"dsa-decode-backend": "flashmla_sparse"})
    new = sglang_launch("0.5.23", **{"dsa-decode-backend": "flashmla_sparse"})
    assert "--nsa-decode-backend" in old and "--dsa-decode-backend" not in old
    assert "--dsa-decode-backend" in new


def test_several_numbers_after_one_flag_stay_separate_words() -> None:
    """`--cuda-graph-bs 1 2 4 8` in a write-up: one word "1 2 4 8" would fail int()."""
    argv = sglang_launch("0.5.9", **{"cuda-graph-bs": "1 2 4 8", "served-model-name": "a b"})
    at = argv.index("--cuda-graph-bs")
    assert argv[at + 1 : at + 5] == ["1", "2", "4", "8"]
    assert argv[argv.index("--served-model-name") + 1] == "a b"


def test_it_refuses_a_flag_the_framework_does_not_have() -> None:
    with pytest.raises(RecipeRefused, match="--kv-cache-dtpye"):
        sglang_launch("0.5.9", **{"kv-cache-dtpye": "bf16", "tp-size": "8"})


def test_it_keeps_the_listening_address_its_own() -> None:
    # The tunnel and health checks need the server on loopback at the port the worker chose.
    argv = sglang_launch(None, host="0.0.0.0", port="8000", **{"skip-server-warmup": "true"})
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert argv[argv.index("--port") + 1] == "31000"
    assert argv.count("--host") == 1 and argv.count("--port") == 1
    assert "--skip-server-warmup" in argv


def test_it_serves_vllm_models_positionally() -> None:
    plan = build_launch(
        recipe_for("vllm"),
        model="Qwen/Qwen3-8B",
        port=8001,
        flags={"gpu-memory-utilization": "0.85"},
        env={},
        version="0.33.0",
    )
    assert plan.argv[:3] == ("vllm", "serve", "Qwen/Qwen3-8B")
    assert plan.argv[-2:] == ("--gpu-memory-utilization", "0.85")


def test_it_quotes_every_value_so_a_shell_runs_no_command_hidden_in_it(tmp_path: Path) -> None:
    # Values the host policy lets through may still hold what a shell reads as syntax.
    marker = tmp_path / "pwned"
    nasty = 'x; touch pwned; echo "*"'
    plan = build_launch(
        recipe_for("sglang"),
        model=f"m; touch {marker}; echo $(touch {marker})",
        port=1,
        flags={"served-model-name": nasty},
        env={"NCCL_DEBUG": "INFO; touch x"},
        version=None,
    )
    # Hand the command to a real shell, with `printf` in place of the server.
    shown = subprocess.run(
        ["sh", "-c", "printf '%s\\n' " + plan.shell()],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.splitlines()
    assert not marker.exists() and not (tmp_path / "x").exists()
    assert nasty in shown and "NCCL_DEBUG=INFO; touch x" in shown
    assert shlex.split(plan.shell())[-2:] == ["--served-model-name", nasty]


def test_it_refuses_an_environment_name_a_shell_would_interpret() -> None:
    with pytest.raises(RecipeRefused, match="environment variable"):
        build_launch(
            recipe_for("sglang"),
            model="m",
            port=1,
            flags={},
            env={"A=1; touch /tmp/x; B": "1"},
            version=None,
        )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LD_PRELOAD", "/tmp/evil.so"),
        ("PYTHONPATH", "/tmp/evil"),
        ("PYTHONWARNINGS", "ignore::antigravity.Warning"),
        ("BROWSER", "touch /tmp/x"),
        ("PERL5OPT", "-Mwarnings"),
        ("NCCL_NET_PLUGIN", "evil"),  # matches NCCL_*, but loads a library
        ("NCCL_DEBUG", "$(touch x)"),  # a vetted name, but a value no knob takes
        ("VLLM_ATTENTION_BACKEND", "../evil"),
    ],
)
def test_it_builds_no_launch_that_sets_an_unvetted_variable(name: str, value: str) -> None:
    """The last check before a command for a host is built: only vetted knobs and values."""
    with pytest.raises(RecipeRefused, match=name):
        build_launch(
            recipe_for("sglang"), model="m", port=1, flags={}, env={name: value}, version=None
        )


@pytest.mark.parametrize(
    ("framework", "flags", "refused"),
    [
        ("sglang", {"trust-remote-code": None}, "runs the Python code shipped"),
        ("vllm", {"trust-remote-code": "true"}, "runs the Python code shipped"),
        ("sglang", {"enable-custom-logit-processor": None}, "serialized Python code"),
        ("sglang", {"delete-ckpt-after-loading": None}, "deletes the model's checkpoint"),
        # free text that names a module, a class or a folder
        ("vllm", {"worker-extension-cls": "evil.Ext"}, "not among the flags vetted"),
        ("vllm", {"tool-parser-plugin": "parser"}, "not among the flags vetted"),
        ("sglang", {"download-dir": "cache"}, "not among the flags vetted"),
        # a vetted flag whose value points at a file
        ("vllm", {"hf-overrides": '{"tokenizer_file": "/etc/passwd"}'}, "never names a file"),
        ("sglang", {"served-model-name": "~root"}, "never names a file"),
        # a value that the server's parser would take for another flag
        ("sglang", {"served-model-name": "--trust-remote-code"}, "read as another flag"),
    ],
)
def test_it_builds_no_launch_with_a_flag_that_runs_unreviewed_code_or_names_a_file(
    framework: str, flags: dict[str, str | None], refused: str
) -> None:
    with pytest.raises(RecipeRefused, match=refused):
        build_launch(recipe_for(framework), model="m", port=1, flags=flags, env={}, version=None)


def test_a_refused_flag_the_hosts_operator_allows_reaches_that_host_only() -> None:
    def launch(allowed: tuple[str, ...]) -> tuple[str, ...]:
        flags = {"trust-remote-code": None}
        return build_launch(
            recipe_for("sglang"), model="m", port=1, flags=flags, env={}, version=None,
            allowed_flags=allowed,
        ).argv  # fmt: skip

    assert "--trust-remote-code" in launch(("trust-remote-code",))
    with pytest.raises(RecipeRefused, match="hosts add --allow-flag trust-remote-code"):
        launch(())


def test_vetted_knobs_numbers_and_small_json_still_reach_the_host() -> None:
    plan = build_launch(
        recipe_for("vllm"),
        model="Qwen/Qwen3-8B",
        port=1,
        flags={
            "compilation-config": '{"cudagraph_mode": "PIECEWISE"}',
            "limit-mm-per-prompt": '{"image": 4}',
            "max-num-seqs": "64",
            "num-gpu-blocks-override": "2048",
            "kv-cache-memory-bytes": "8G",
            "enforce-eager": None,
            "attention-backend": "FLASHINFER",
        },
        env={},
        version=None,
    )
    argv = list(plan.argv)
    assert argv[argv.index("--compilation-config") + 1] == '{"cudagraph_mode": "PIECEWISE"}'
    assert "--enforce-eager" in argv and argv[argv.index("--max-num-seqs") + 1] == "64"


def test_a_model_that_starts_with_a_dash_is_refused() -> None:
    with pytest.raises(RecipeRefused, match="read it as a flag"):
        build_launch(
            recipe_for("vllm"), model="--trust-remote-code", port=1, flags={}, env={}, version=None
        )


def test_it_reads_the_sglang_bench_serving_printout() -> None:
    metrics = parse_bench_output((BENCH / "sglang_bench_serving.txt").read_text())
    assert metrics.tool == "sglang.bench_serving"
    assert metrics.output_throughput_tok_s == 543.99
    assert metrics.total_throughput_tok_s == 2719.94
    assert (metrics.ttft_ms, metrics.itl_ms, metrics.request_rate) == (412.77, 27.61, 2.12)
    assert metrics.completed == 200 and metrics.duration_s == 94.12


def test_it_reads_the_vllm_bench_serve_printout_with_failed_requests() -> None:
    metrics = parse_bench_output((BENCH / "vllm_bench_serve.txt").read_text())
    assert metrics.tool == "vllm bench serve"
    assert metrics.output_throughput_tok_s == 607.46
    assert metrics.total_throughput_tok_s == 1822.37  # older "Total Token throughput" casing
    assert (metrics.completed, metrics.failed) == (98, 2)
    assert metrics.extra["p99_ttft_ms"] == 210.66


def test_it_reads_the_same_numbers_from_the_vllm_result_file() -> None:
    console = parse_bench_output((BENCH / "vllm_bench_serve.txt").read_text())
    saved = parse_bench_output((BENCH / "vllm_result.json").read_text())
    fields = ("output_throughput_tok_s", "total_throughput_tok_s", "ttft_ms", "itl_ms", "failed")
    assert [getattr(saved, f) for f in fields] == [getattr(console, f) for f in fields]


def test_it_takes_the_latest_run_of_an_sglang_result_file() -> None:
    metrics = parse_bench_output((BENCH / "sglang_result.jsonl").read_text())
    assert metrics.output_throughput_tok_s == 1981.9
    assert metrics.total_throughput_tok_s == 9909.7
    assert metrics.completed == 480


def test_it_reads_guidellms_best_sustained_load() -> None:
    metrics = parse_bench_output((BENCH / "guidellm_benchmarks.json").read_text())
    assert metrics.tool == "guidellm"
    assert metrics.output_throughput_tok_s == 2484.9
    assert (metrics.ttft_ms, metrics.itl_ms) == (880.5, 21.7)


def test_it_says_so_when_the_text_is_no_benchmark_result() -> None:
    with pytest.raises(UnknownBenchFormat):
        parse_bench_output("Traceback (most recent call last):\nRuntimeError: CUDA error\n")


def test_it_reads_gpus_driver_and_cuda_from_captured_h200_output() -> None:
    gpus = parse_gpu_query((ENV / "captured_h200_query_gpu.csv").read_text())
    summary = gpu_summary(gpus)
    assert summary["gpu_name"] == "NVIDIA H200" and summary["arch"] == "sm_90"
    assert summary["memory_mib"] == 143771 and summary["driver"] == "580.159.04"
    assert cuda_version((ENV / "captured_h200_nvidia_smi.txt").read_text()) == "13.0"


def test_it_counts_every_gpu_row() -> None:
    rows = "NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 97887 MiB, 580.82.07\n" * 8
    summary = gpu_summary(parse_gpu_query(rows))
    assert summary["gpu_count"] == 8 and summary["arch"] == "sm_120"


def test_it_builds_launches_without_django() -> None:
    # decisiontree is plain Python; a fresh interpreter shows what importing it pulls in.
    code = "import sys, decisiontree.recipes; print('django' in sys.modules)"
    shown = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert shown.stdout.strip() == "False"
