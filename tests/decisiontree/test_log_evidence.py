"""What the server's own log lines say it ran with fills what the user did not say.

The knowledge base and pastes are tests/decisiontree/test_diagnose.py's: the FP8 KV
cache NaN decode crash on sm_120 and its fixes.
"""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from tests.decisiontree.test_diagnose import knowledge, rtx_context, sample

LAUNCH_WITHOUT_KV_DTYPE = (
    "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp-size 8"
)


def test_the_kv_cache_dtype_the_log_names_fills_a_launch_that_left_it_out() -> None:
    paste = "[2026-02-19 00:04:58] Setting KV cache dtype to fp8_e4m3\n" + sample(
        "decode_assert_rtx_host_b.txt"
    )

    result = diagnose(paste, rtx_context(LAUNCH_WITHOUT_KV_DTYPE), knowledge())

    assert result.context.flags["kv-cache-dtype"] == "fp8_e4m3"
    assert result.context.sources["flag.kv-cache-dtype"] == "log"


def test_the_sparse_attention_kernels_the_log_says_were_picked_are_the_ones_that_ran() -> None:
    paste = (
        "[2026-02-19 00:05:01] Set NSA backends for fp8_e4m3 KV Cache: "
        "prefill=flashmla_auto, decode=flashmla_kv.\n" + sample("decode_assert_rtx_host_b.txt")
    )

    result = diagnose(paste, rtx_context(LAUNCH_WITHOUT_KV_DTYPE), knowledge())

    flags = result.context.flags
    assert (flags["dsa-prefill-backend"], flags["dsa-decode-backend"]) == (
        "flashmla_auto",
        "flashmla_kv",
    )
    assert result.context.sources["flag.dsa-decode-backend"] == "log"


def test_a_value_given_at_launch_wins_over_the_log() -> None:
    launch = LAUNCH_WITHOUT_KV_DTYPE + " --kv-cache-dtype bf16"
    paste = "Setting KV cache dtype to fp8_e4m3\n" + sample("decode_assert_rtx_host_b.txt")

    result = diagnose(paste, rtx_context(launch), knowledge())

    assert result.context.flags["kv-cache-dtype"] == "bf16"
    assert result.context.sources["flag.kv-cache-dtype"] != "log"


def test_a_flag_a_log_line_names_in_launch_syntax_is_read_as_the_frameworks_own_flag() -> None:
    # SGLang takes vLLM's long name as an alias of its own --tp-size; the context
    # holds SGLang's flag, the one a finding's condition and the answer name.
    paste = (
        "[2026-02-19 00:04:57] WARNING server_args.py:1201: --tensor-parallel-size 4 "
        "leaves two of the eight GPUs idle\n" + sample("decode_assert_rtx_host_b.txt")
    )
    launch = "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4"

    result = diagnose(paste, rtx_context(launch), knowledge())

    assert result.context.flags["tp-size"] == "4"
    assert "tensor-parallel-size" not in result.context.flags
    assert result.context.sources["flag.tp-size"] == "log"
    assert ("--tp-size", "4") in result.launch_flags


def test_a_flag_the_server_ran_otherwise_than_launched_is_named_with_both_values() -> None:
    """SGLang prints what it ran with: an `auto` it resolved and a backend it replaced
    show beside the launch's values; what ran as launched is not named."""
    launch = (
        LAUNCH_WITHOUT_KV_DTYPE + " --kv-cache-dtype auto --attention-backend flashinfer "
        "--cuda-graph-bs 1 2 4"
    )
    printout = (
        "server_args=ServerArgs(model_path='nvidia/GLM-5-NVFP4', tp_size=8, "
        "kv_cache_dtype='fp8_e4m3', attention_backend='nsa', cuda_graph_bs=[1, 2, 4])\n"
    )

    paste = printout + sample("decode_assert_rtx_host_b.txt")
    context = build_context(paste, launch_command=launch, gpu="RTX PRO 6000")

    result = diagnose(paste, context, knowledge())

    assert [(n.flag, n.launched, n.ran) for n in result.not_as_launched] == [
        ("--attention-backend", "flashinfer", "nsa"),
        ("--kv-cache-dtype", "auto", "fp8_e4m3"),
    ]
    plain = diagnose(sample("decode_assert_rtx_host_b.txt"), rtx_context(launch), knowledge())
    assert plain.not_as_launched == ()
