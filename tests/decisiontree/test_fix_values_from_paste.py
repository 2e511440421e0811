"""A fix that names a flag without a value ("set --max-model-len to at most the estimate
printed in the error") takes the value the paste's own figures give, so its corrected
command is ready to copy; a fix that moves the flag the other way does not."""

from __future__ import annotations

import pytest

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.documents.changes import direction_of
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, FixRecord, Outcome
from tests.decisiontree.test_walk import finding

# vLLM 0.11's refusal, as its engine core logs it (tensor parallel 4 on H100s).
KV_SHORT = (
    "(EngineCore_DP0 pid=812) ERROR 12-04 10:12:41 [core.py:708] ValueError: To serve at "
    "least one request with the models's max seq len (131072), (16.00 GiB KV cache is "
    "needed, which is larger than the available KV cache memory (12.00 GiB). Based on the "
    "available memory, the estimated maximum model length is 98304. Try increasing "
    "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"
)
LAUNCH = "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-model-len 131072"


def fix(number: int, words: str, flag: str) -> FixRecord:
    return FixRecord(number, words, (Change(ChangeAction.SET_FLAG, flag, None),), Outcome.PROPOSED)


def answer(fixes: tuple[FixRecord, ...], launch: str = LAUNCH, gpu: str | None = "H100"):
    graph = build_graph([finding(1, KV_SHORT, fixes, cause="the KV cache is too small")])
    context = build_context(KV_SHORT, launch_command=launch, gpu=gpu, framework="vllm")
    return diagnose(KV_SHORT, context, graph)


@pytest.mark.parametrize(
    ("words", "way"),
    [
        ("set --max-model-len to at most the estimate printed in the error", 0),
        ("lower --max-model-len to what the error estimates", -1),
        ("raise --gpu-memory-utilization (up to 0.95)", 1),
        ("increase the --gpu-memory-utilization", 1),
    ],
)
def test_which_way_a_fix_moves_a_flag_is_read_from_its_words(words: str, way: int) -> None:
    flag = words.split("--")[1].split()[0]
    assert direction_of(words, flag, "vllm") == way


def test_the_estimate_the_error_printed_goes_into_the_corrected_command() -> None:
    result = answer(
        (fix(1, "set --max-model-len to at most the estimate in the error", "max-model-len"),)
    )

    [first] = result.fixes
    assert first.command_changes == ("--max-model-len 98304",)
    assert [step.detail for step in first.why if step.step == "value"] == [
        "--max-model-len 98304: the longest context the KV cache had room for"
    ]
    assert [r.kind for r in result.memory_readings if r.kind != "weights_fit"] == ["kv_cache_short"]


def test_the_shortfall_becomes_a_memory_share_on_a_gpu_of_known_size() -> None:
    """4 GiB more on an 80 GiB H100 is 0.05 of it: 0.90 becomes 0.95."""
    raise_share = fix(2, "raise --gpu-memory-utilization", "gpu-memory-utilization")

    result = answer((raise_share,), launch=LAUNCH + " --gpu-memory-utilization 0.9")

    assert result.fixes[0].command_changes == ("--gpu-memory-utilization 0.95",)
    assert "--gpu-memory-utilization 0.95 instead of 0.9" in result.memory_readings[0].text
    # Without the GPU its size is unknown: the reading says the shortfall, the fix no value.
    unsized = answer((raise_share,), launch=LAUNCH + " --gpu-memory-utilization 0.9", gpu=None)
    assert unsized.fixes[0].command_changes == ()
    assert unsized.memory_readings[0].text.endswith("takes 4.00 GiB more on each GPU.")


def test_a_share_beyond_what_a_gpu_can_give_is_said_not_written() -> None:
    tight = LAUNCH + " --gpu-memory-utilization 0.93"

    result = answer((fix(2, "raise --gpu-memory-utilization", "gpu-memory-utilization"),), tight)

    assert result.fixes[0].command_changes == ()
    assert "more than --gpu-memory-utilization can give (0.98)" in result.memory_readings[0].text


def test_a_fix_that_moves_the_flag_the_other_way_takes_no_value() -> None:
    """The estimate is an upper bound: a fix that raises --max-model-len is not given it."""
    result = answer((fix(1, "raise --max-model-len", "max-model-len"),))

    assert result.fixes[0].command_changes == ()
    assert not [step for step in result.fixes[0].why if step.step == "value"]


def test_the_older_engines_message_gives_its_token_count() -> None:
    older = (
        "ValueError: The model's max seq len (32768) is larger than the maximum number of "
        "tokens that can be stored in KV cache (27296). Try increasing `gpu_memory_utilization`"
        " or decreasing `max_model_len` when initializing the engine.\n"
    )
    set_length = fix(1, "set --max-model-len to what fits", "max-model-len")
    graph = build_graph([finding(1, older, (set_length,), cause="the KV cache is too small")])
    context = build_context(older, launch_command="vllm serve Qwen/Qwen2.5-7B", framework="vllm")

    result = diagnose(older, context, graph)

    assert result.fixes[0].command_changes == ("--max-model-len 27296",)
    assert result.memory_readings[0].text == (
        "The KV cache holds 27296 tokens, fewer than one request of 32768 tokens."
    )


@pytest.mark.parametrize(
    ("refusal", "framework", "flag", "own"),
    [
        (
            "ValueError: Warning: User-specified context_length (262144) is greater than the "
            "derived context_length (131072). This may lead to incorrect model outputs or CUDA "
            "errors.\n",
            "sglang",
            "context-length",
            "131072",
        ),
        (
            "ValueError: User-specified max_model_len (65536) is greater than the derived "
            "max_model_len (max_position_embeddings=32768 or model_max_length=None in model's "
            "config.json). To allow overriding this maximum, set the env var "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.\n",
            "vllm",
            "max-model-len",
            "32768",
        ),
    ],
)
def test_a_length_past_the_models_own_is_lowered_to_the_models_own(
    refusal: str, framework: str, flag: str, own: str
) -> None:
    lower = fix(1, f"lower --{flag} to the model's own length", flag)
    graph = build_graph([finding(1, refusal, (lower,), cause="longer than trained")])
    context = build_context(refusal, framework=framework)

    [first] = diagnose(refusal, context, graph).fixes

    assert first.command_changes == (f"--{flag} {own}",)
    [value] = [step.detail for step in first.why if step.step == "value"]
    assert value.startswith(f"--{flag} {own}: the model's own context length")


# SGLang 0.5.9 refusing to start: the weights of a 70B model in BF16 over two H100s left too
# little of the memory for a KV cache at --mem-fraction-static 0.7 (log lines shaped as
# model_runner.py prints them).
SGLANG_NO_POOL = """\
[2026-12-04 09:10:02 TP0] Load weight begin. avail mem=78.52 GB
[2026-12-04 09:10:02 TP1] Load weight begin. avail mem=78.52 GB
[2026-12-04 09:11:40 TP0] Load weight end. elapsed=98.12 s, type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=12.63 GB, mem usage=65.89 GB.
[2026-12-04 09:11:40 TP1] Load weight end. elapsed=98.40 s, type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=12.41 GB, mem usage=66.11 GB.
[2026-12-04 09:11:41 TP1] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/model_runner_kv_cache_mixin.py", line 416, in init_memory_pool
    raise RuntimeError(
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: self.server_args.mem_fraction_static=0.7
"""
SGLANG_LAUNCH = (
    "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --tp 2 "
    "--mem-fraction-static 0.7"
)


def one_fix_answer(text: str, words: str, flag: str, launch: str):
    """The answer to `text` from one finding of it whose one fix, in `words`, names `flag`
    without a value, on an H100."""
    graph = build_graph([finding(1, text, (fix(1, words, flag),), cause="the figures decide")])
    context = build_context(text, launch_command=launch, gpu="H100")
    return diagnose(text, context, graph)


def sglang_answer(words: str, text: str = SGLANG_NO_POOL, launch: str = SGLANG_LAUNCH):
    return one_fix_answer(text, words, "mem-fraction-static", launch)


def test_sglangs_weight_lines_give_the_fraction_its_kv_pool_needs() -> None:
    """TP1 kept 12.41 of 78.52 GiB: no KV token fits at or below 1 - 12.41/78.52 = 0.842.
    A step of 0.05 from 0.7 would still fail; the fix gets 0.85, the least above it."""
    result = sglang_answer("raise --mem-fraction-static in steps of 0.05")

    [reading] = [r for r in result.memory_readings if r.kind == "no_kv_pool_room"]
    assert reading.text.startswith("TP1: the weights left 12.41 GiB free of the 78.52 GiB")
    assert "at 0.7 that is -11.15 GiB" in reading.text
    assert "A KV cache fits only above 0.84; each 0.01 more gives it 804.04 MiB." in reading.text
    assert result.fixes[0].command_changes == ("--mem-fraction-static 0.85",)


def test_a_step_that_clears_the_bound_is_kept() -> None:
    """From 0.8 a step of 0.1 gives 0.9, above the 0.85 the figures need: the step stands."""
    at_08 = SGLANG_NO_POOL.replace("fraction_static=0.7", "fraction_static=0.8")
    launch = SGLANG_LAUNCH.replace("0.7", "0.8")

    result = sglang_answer("raise --mem-fraction-static by 0.1", at_08, launch)

    assert "at 0.8 that is -3.29 GiB" in result.memory_readings[0].text
    assert result.fixes[0].command_changes == ("--mem-fraction-static 0.9",)
    assert not [step for step in result.fixes[0].why if step.step == "value"]


def test_weights_that_fill_the_gpu_get_no_fraction_but_more_gpus() -> None:
    full = SGLANG_NO_POOL.replace("avail mem=12.63", "avail mem=2.63").replace(
        "avail mem=12.41", "avail mem=2.41"
    )
    result = sglang_answer("raise --mem-fraction-static in steps of 0.05", full)

    assert "A KV cache fits only above 0.97" in result.memory_readings[0].text
    assert "spread the model over more GPUs" in result.memory_readings[0].text
    assert result.fixes[0].command_changes == ("--mem-fraction-static 0.75",)


# SGLang 0.5.9 dying in its CUDA-graph capture (the runner's message, as the starter
# knowledge base's sample has it), after its log's stages on one H100.
SGLANG_CAPTURE_OOM = """\
[2026-12-04 11:02:10 TP0] Load weight begin. avail mem=78.52 GB
[2026-12-04 11:02:51 TP0] Load weight end. elapsed=41.02 s, type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=62.10 GB, mem usage=16.42 GB.
[2026-12-04 11:02:52 TP0] KV Cache is allocated. #tokens: 421104, K size: 27.33 GB, V size: 27.33 GB
[2026-12-04 11:02:52 TP0] Memory pool end. avail mem=6.91 GB
[2026-12-04 11:02:53 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=6.42 GB
[2026-12-04 11:03:20 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 392, in __init__
    self.capture()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.21 GiB is free.

During handling of the above exception, another exception occurred:

Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.21 GiB is free.
Possible solutions:
1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)
"""
QWEN_LAUNCH = "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --mem-fraction-static 0.9"


def capture_answer(words: str, text: str = SGLANG_CAPTURE_OOM, launch: str = QWEN_LAUNCH):
    return one_fix_answer(text, words, "mem-fraction-static", launch)


def test_a_capture_that_ran_out_gets_the_fraction_that_frees_what_it_lacked() -> None:
    """0.79 GiB (808.96 MiB) short; 0.01 of the 78.52 GiB free before the weights is
    804 MiB: from 0.9 the fraction must drop to 0.88 or lower (0.9 - 0.79/78.52 = 0.8899).
    A step of 0.05 already goes further and stands; a fix without a step takes 0.88."""
    stepped = capture_answer("lower --mem-fraction-static by 0.05 to 0.1")

    [reading] = [r for r in stepped.memory_readings if r.kind == "capture_short"]
    assert reading.text == (
        "The CUDA-graph capture asked for 2.00 GiB with 1.21 GiB free: 808.96 MiB short. "
        "Each 0.01 off --mem-fraction-static gives it 804.04 MiB of the KV cache's memory: "
        "0.88 or lower instead of 0.9, more if the capture asks again."
    )
    assert stepped.fixes[0].command_changes == ("--mem-fraction-static 0.85",)

    unstepped = capture_answer("lower --mem-fraction-static")
    assert unstepped.fixes[0].command_changes == ("--mem-fraction-static 0.88",)


def test_without_the_log_the_gpus_size_is_a_figure_to_go_by_not_a_value() -> None:
    message_only = SGLANG_CAPTURE_OOM[SGLANG_CAPTURE_OOM.index("Traceback") :]

    result = capture_answer("lower --mem-fraction-static", message_only)

    [reading] = [r for r in result.memory_readings if r.kind == "capture_short"]
    assert "gives it about 810.91 MiB of the KV cache's memory (the log's" in reading.text
    assert reading.values == () and result.fixes[0].command_changes == ()


# vLLM's v1 engine with nothing left for the KV cache (its worker's and engine core's lines).
VLLM_NO_ROOM = """\
(VllmWorker TP0 pid=2291) INFO 08-14 21:03:11 [gpu_model_runner.py:1892] Model loading took 30.7127 GiB and 41.022301 seconds
(VllmWorker TP0 pid=2291) INFO 08-14 21:03:29 [gpu_worker.py:255] Available KV cache memory: -1.43 GiB
(EngineCore_0 pid=2158) ERROR 08-14 21:03:29 [core.py:632] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
"""


def no_room_answer(share: str):
    launch = f"vllm serve Qwen/Qwen2.5-32B-Instruct --gpu-memory-utilization {share}"
    words = "raise --gpu-memory-utilization"
    return one_fix_answer(VLLM_NO_ROOM, words, "gpu-memory-utilization", launch)


def test_no_room_for_the_kv_cache_gets_the_least_share_with_any_room() -> None:
    """1.43 GiB short on an 80 GiB H100: 0.9 + 1.43/80 = 0.918, so 0.92."""
    result = no_room_answer("0.9")

    [reading] = [r for r in result.memory_readings if r.kind == "no_kv_cache_room"]
    assert "The least share with any room is 0.92 instead of 0.9 on a GPU of 80.00 GiB" in (
        reading.text
    )
    assert result.fixes[0].command_changes == ("--gpu-memory-utilization 0.92",)

    beyond = no_room_answer("0.94")  # 0.958: past what a GPU can give
    assert beyond.fixes[0].command_changes == ()
    assert "Raise --gpu-memory-utilization if the GPU has room" in beyond.memory_readings[0].text


@pytest.mark.parametrize(
    ("heads", "size", "written"),
    [
        (40, 3, "--tensor-parallel-size 2"),
        (64, 6, "--tensor-parallel-size 4"),
        (28, 8, "--tensor-parallel-size 7"),
    ],
)
def test_a_tensor_parallel_size_that_does_not_divide_the_heads_becomes_one_that_does(
    heads: int, size: int, written: str
) -> None:
    refusal = (
        f"ValueError: Total number of attention heads ({heads}) must be divisible by tensor "
        f"parallel size ({size}).\n"
    )
    divisor = fix(
        1, "set --tensor-parallel-size to a divisor of the head count", "tensor-parallel-size"
    )
    graph = build_graph([finding(1, refusal, (divisor,), cause="heads split evenly")])
    launch = f"vllm serve acme/Model-32B --tensor-parallel-size {size}"

    result = diagnose(refusal, build_context(refusal, launch_command=launch), graph)

    assert result.fixes[0].command_changes == (written,)
    [why] = [step.detail for step in result.fixes[0].why if step.step == "value"]
    assert f"divides the model's {heads} attention heads" in why
