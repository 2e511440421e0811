"""A command line the server refused is explained from the flag tables, no finding needed."""

from __future__ import annotations

import pytest

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.flag_check import flag_problems, invalid_values, named_flags, refused_flags
from decisiontree.graph import build_graph

SGLANG = "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8"


def refusal(args: str) -> str:
    return (
        "usage: launch_server.py [-h] --model-path MODEL_PATH [--tp-size TP_SIZE] ...\n"
        f"launch_server.py: error: unrecognized arguments: {args}\n"
    )


def test_a_misspelt_flag_gets_the_closest_flag_of_its_framework() -> None:
    context = build_context(launch_command=f"{SGLANG} --kv-cache-dytpe fp8_e4m3")

    [problem] = flag_problems(refusal("--kv-cache-dytpe fp8_e4m3"), context)

    assert problem.describe() == "--kv-cache-dytpe: not a flag of sglang; use --kv-cache-dtype"
    assert problem.refused


def test_an_old_name_refused_by_a_newer_release_gets_the_new_name() -> None:
    context = build_context(framework="sglang", framework_version="0.5.23")

    [problem] = flag_problems(refusal("--nsa-prefill-backend trtllm"), context)

    assert problem.instead == "--dsa-prefill-backend"
    assert "sglang took this name until 0.5.9" in problem.why


def test_a_new_name_refused_by_an_older_release_gets_the_old_name() -> None:
    [problem] = flag_problems(refusal("--dsa-decode-backend trtllm"), build_context())

    assert problem.instead == "--nsa-decode-backend"
    assert "0.5.9 and older do not take" in problem.why


def test_a_value_that_is_not_a_choice_gets_the_closest_choice() -> None:
    paste = (
        "launch_server.py: error: argument --kv-cache-dtype: invalid choice: 'fp8e4m3' "
        "(choose from 'auto', 'fp8_e5m2', 'fp8_e4m3')\n"
    )
    [problem] = flag_problems(paste, build_context(framework="sglang"))

    assert problem.written == "--kv-cache-dtype fp8e4m3"
    assert problem.instead == "--kv-cache-dtype fp8_e4m3"


def test_argparse_lines_are_read_under_a_log_prefix_and_with_equals() -> None:
    paste = "[2026-11-30 10:00:01] prog: error: unrecognized arguments: --foo=1 bar --baz\n"
    assert refused_flags(paste) == ["--foo", "--baz"]
    line = "prog: error: argument --tp-size/--tp: invalid int value: 'eight'"
    assert invalid_values(line) == [("--tp-size", "eight")]


def test_an_unknown_flag_the_server_did_not_refuse_is_said_but_not_as_refused() -> None:
    context = build_context(launch_command=f"{SGLANG} --enable-turbo-mode")

    [problem] = flag_problems("RuntimeError: CUDA error: out of memory\n", context)

    assert problem.written == "--enable-turbo-mode" and not problem.refused
    assert problem.why.startswith("not a flag of sglang up to ")  # the tables may lag
    assert problem.instead is None  # the closest flag is another flag, not a typo of it


def test_nothing_is_said_of_a_command_line_the_server_took() -> None:
    context = build_context(launch_command=f"{SGLANG} --kv-cache-dtype bf16")
    assert flag_problems("RuntimeError: CUDA error: out of memory\n", context) == ()


def test_the_answer_leads_with_the_refusal_even_with_no_finding() -> None:
    answer = diagnose(refusal("--kv-cache-dytpe bf16"), build_context(), build_graph([]))

    assert answer.verdict == "none"
    assert [p.instead for p in answer.refused_flags] == ["--kv-cache-dtype"]


VLLM = "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.5"
PLAIN_VLLM = "vllm serve meta-llama/Llama-3.1-8B-Instruct"
KV_TOO_SMALL = (
    "ERROR 12-03 10:11:02 [core.py:708] EngineCore failed to start.\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/site-packages/vllm/v1/core/kv_cache_utils.py", line 686, in '
    "check_enough_kv_cache_memory\n"
    "    raise ValueError(\n"
    "ValueError: To serve at least one request with the model's max seq len (131072), 16.00 "
    "GiB KV cache is needed, more than the available KV cache memory (9.47 GiB). Try "
    "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
    "the engine.\n"
)


def test_the_settings_an_error_names_are_read_as_flags_with_the_launch_values() -> None:
    answer = diagnose(KV_TOO_SMALL, build_context(launch_command=VLLM), build_graph([]))

    assert [n.describe() for n in answer.named_flags] == [
        "--gpu-memory-utilization (yours: 0.5)",
        "--max-model-len (not set)",
    ]
    assert answer.named_flags[0].written == "gpu_memory_utilization"


def test_a_named_flag_is_spelled_for_the_release_and_says_its_default() -> None:
    context = build_context(framework="sglang", framework_version="0.5.9")
    said = [
        "RuntimeError: Not enough memory; try to increase --mem-fraction-static, or set "
        "`dsa_decode_backend` to another kernel"
    ]

    named = named_flags(said, context)

    assert [n.flag for n in named] == ["--mem-fraction-static", "--nsa-decode-backend"]
    assert all(n.value is None for n in named)


def test_a_config_dump_one_word_names_and_prefixes_are_not_read_as_advice() -> None:
    said = [
        "EngineArgs(max_num_seqs=256, block_size=16) failed: dtype mismatch in max_model",
        "self.enable_prefix_caching is False",
    ]
    assert named_flags(said, build_context()) == ()


def test_advice_written_as_code_with_a_value_is_read() -> None:
    said = ["Please pass the argument `trust_remote_code=True` to allow custom code to run"]

    [named] = named_flags(said, build_context(launch_command=PLAIN_VLLM))

    assert named.describe() == "--trust-remote-code (not set; default false)"


def test_with_no_launch_to_read_a_named_flag_is_not_called_unset() -> None:
    """A flag the paste does not show may be set all the same: only a launch (given,
    found in the paste, or printed by the server) tells that it was not."""
    said = ["Please pass the argument `trust_remote_code=True` to allow custom code to run"]

    [unseen] = named_flags(said, build_context(framework="vllm"))
    [typed] = named_flags(said, build_context(launch_command=PLAIN_VLLM))
    [pasted] = named_flags(said, build_context(f"$ {PLAIN_VLLM}\n{said[0]}"))

    assert unseen.describe() == "--trust-remote-code (value not known; default false)"
    assert (typed.value, typed.launch_known) == (None, True)
    assert pasted.describe() == "--trust-remote-code (not set; default false)"


NAMES_MEMORY_SHARE = ["ValueError: Try increasing `gpu_memory_utilization` when initializing"]


@pytest.mark.parametrize(
    ("release", "said"),
    [
        ("0.33.0", "--gpu-memory-utilization (not set; default 0.92)"),
        # vLLM raised the default in 0.33: an older release's user has 0.9.
        ("0.9.1", "--gpu-memory-utilization (not set; default 0.9)"),
        (None, "--gpu-memory-utilization (not set; default 0.92 in 0.33.0, 0.9 before)"),
    ],
)
def test_a_named_flags_default_is_the_one_of_the_users_release(
    release: str | None, said: str
) -> None:
    context = build_context(launch_command=PLAIN_VLLM, framework_version=release)

    [named] = named_flags(NAMES_MEMORY_SHARE, context)

    assert named.describe() == said


def test_a_default_known_only_for_two_releases_is_not_guessed_between_them() -> None:
    said = ["RuntimeError: fp4 gemm failed; set --fp4-gemm-backend to another kernel"]

    def described(release: str) -> str:
        context = build_context(launch_command=SGLANG, framework_version=release)
        [named] = named_flags(said, context)
        return named.describe()

    assert described("0.5.9") == "--fp4-gemm-backend (not set; default flashinfer_cutlass)"
    assert described("0.5.23") == "--fp4-gemm-backend (not set; default auto)"
    assert described("0.5.15") == (
        "--fp4-gemm-backend (not set; default auto in 0.5.23, flashinfer_cutlass in 0.5.9)"
    )


def test_a_refused_command_line_names_no_settings_beside_its_refusal() -> None:
    text = "launch_server.py: error: argument --kv-cache-dtype: invalid choice: 'fp9'\n"
    answer = diagnose(text, build_context(), build_graph([]))

    assert answer.refused_flags and answer.named_flags == ()
