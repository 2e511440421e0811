"""Whether a model's weights fit each GPU: from the parameter count its name states, the
bits its quantization takes, and how the launch splits it; or from the start-up log's own
figure. Said in a launch check before anything runs, and beside an out-of-memory paste."""

from __future__ import annotations

import pytest

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.launch_check import check_launch
from decisiontree.model_weights import weights_reading
from decisiontree.records import Change, ChangeAction, FixRecord, Outcome
from decisiontree.setup import gpu_bytes
from decisiontree.vocabulary import load
from tests.decisiontree.test_walk import finding

VOCAB = load()


def reading(launch: str, gpu: str, release: str | None = None, text: str = ""):
    framework, _, version = (release or "").partition(" ")
    context = build_context(
        text,
        launch_command=launch,
        gpu=gpu,
        framework=framework or None,
        framework_version=version or None,
    )
    return weights_reading(context, VOCAB, gpu_bytes(context, VOCAB))


@pytest.mark.parametrize(
    ("name", "billions"),
    [
        ("meta-llama/Llama-3.1-70B-Instruct", 70.0),
        ("Qwen/Qwen2.5-0.5B-Instruct", 0.5),
        # All experts are held: the total, not the "A22B" a token uses.
        ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", 235.0),
        ("/mnt/models/Qwen2-VL-72B-Instruct/", 72.0),
        # A distilled model is its own size, not its teacher's.
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", 32.0),
        # No count in the name: the family's stated one.
        ("deepseek-ai/DeepSeek-R1", 671.0),
        # No count in the name: the model card's, from the vocabulary's stated sizes.
        ("zai-org/GLM-5-NVFP4", 744.0),
        ("zai-org/GLM-4.5-Air-FP8", 106.0),
        # Experts share attention: the card's 46.7B, not 8 x 7B.
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7),
        # The name's 17B is what a token uses; all 109B are held.
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 109.0),
        ("mistralai/Mistral-Large-Instruct-2411", 123.0),
        ("microsoft/Phi-4-mini-instruct", 3.8),
        ("microsoft/phi-4", 14.7),
        # A distill that does not say so keeps the count its name states.
        ("deepseek-ai/DeepSeek-R1-0528-Qwen3-8B", 8.0),
        # A line the vocabulary has no card for: nothing rather than a guess.
        ("MiniMaxAI/MiniMax-M2", None),
        # An architecture names no one checkpoint.
        ("DeepseekV3ForCausalLM", None),
        ("unsloth/llama-3-8b-bnb-4bit", 8.0),
    ],
)
def test_a_model_name_gives_its_parameter_count(name: str, billions: float | None) -> None:
    info = VOCAB.model_info(name)
    assert (info.parameters if info else None) == billions


def test_a_distilled_deepseek_is_not_read_as_deepseek_v3() -> None:
    info = VOCAB.model_info("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B")
    assert info is not None and info.arch != "deepseek_v3"


def test_a_70b_model_on_one_h100_does_not_fit_and_gets_the_split_that_holds_it() -> None:
    """70B x 2 bytes = 130.39 GiB, past the 72 GiB of 0.9 x 80 GiB; two GPUs hold 65.19
    GiB each, inside the estimate's band of the budget, so four are named too."""
    found = reading("vllm serve meta-llama/Llama-3.1-70B-Instruct", "8x H100", "vllm 0.11.0")

    assert found is not None and found.kind == "weights_do_not_fit"
    assert found.helps
    assert found.text.startswith(
        "The weights of meta-llama/Llama-3.1-70B-Instruct are 70B parameters in 16-bit: about "
        "130.39 GiB, all on one GPU (--tensor-parallel-size 1), more than the 72.00 GiB that "
        "--gpu-memory-utilization 0.9 gives of 80.00 GiB: the weights alone do not fit."
    )
    assert "--tensor-parallel-size 2 puts about 65.19 GiB on each GPU" in found.text
    assert "(little: 4 puts about 32.60 GiB)" in found.text
    [value] = found.values
    assert (value.flag, value.value, value.bound) == ("tensor-parallel-size", "2", "at_least")


def test_sglang_spells_its_own_flag_and_bounds_the_share_it_picks_at_start_up() -> None:
    """Left unset, SGLang keeps at least 10 GiB of a GPU over 60 GiB outside the share."""
    launch = "python -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B-FP8 --tp 2"
    found = reading(launch, "8x RTX PRO 6000", "sglang 0.5.9")

    assert found is not None and found.kind == "weights_do_not_fit"
    assert "fp8: at least about 218.86 GiB," in found.text  # fp8: 16-bit layers stay
    assert (
        "more than the 86.00 GiB of 96.00 GiB that SGLang gives at most where "
        "--mem-fraction-static is unset (it keeps at least 10.00 GiB back)"
    ) in found.text
    [value] = found.values
    assert (value.flag, value.value) == ("tp-size", "4")


def test_sglangs_floor_grows_with_the_prefill_chunk_and_is_not_claimed_for_older_releases() -> None:
    """On a 24 GiB card: 512 MiB + 1.5 MiB x 2048 tokens + 1/8 GiB for one rank = 3.62 GiB;
    a 16384-token chunk keeps 24.62 GiB, the whole card, so the share is not bounded."""
    launch = "python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct"
    small = reading(launch, "RTX 4090", "sglang 0.5.23")
    assert small is not None and "it keeps at least 3.62 GiB back" in small.text

    whole = reading(f"{launch} --chunked-prefill-size 16384", "RTX 4090", "sglang 0.5.23")
    assert whole is not None
    assert "the GPU's 24.00 GiB (sglang picks --mem-fraction-static at start-up)" in whole.text

    older = reading(launch, "RTX 4090", "sglang 0.4.6")
    assert older is not None and "keeps at least" not in older.text


def test_a_split_needing_more_gpus_than_the_host_has_is_said_not_written() -> None:
    found = reading("vllm serve meta-llama/Llama-3.1-405B-Instruct", "2x H100", "vllm 0.11.0")

    assert found is not None and found.kind == "weights_do_not_fit"
    assert found.values == ()
    assert "--tensor-parallel-size 16 puts about 47.15 GiB on each GPU" in found.text
    assert "more GPUs than the 2 here" in found.text
    assert "FP8 weights take half as much" in found.text


def test_weights_that_fit_say_what_is_left_and_are_not_a_fix() -> None:
    launch = "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --gpu-memory-utilization 0.85"
    found = reading(launch, "4x H100", "vllm 0.11.0")

    assert found is not None and found.kind == "weights_fit"
    assert not found.helps and found.values == ()
    assert "32.60 GiB on each GPU at --tensor-parallel-size 4" in found.text
    assert "of the 68.00 GiB that --gpu-memory-utilization 0.85 gives" in found.text
    assert "about 35.40 GiB is left for activations, CUDA graphs and the KV cache." in found.text


def test_vllm_expert_parallelism_spreads_the_experts_over_its_data_parallel_ranks() -> None:
    """DeepSeek-R1 is published in FP8: 671 GB over 8 ranks is 78 GiB each, which 141 GiB
    H200s hold; read as one copy a GPU, it would not fit."""
    launch = "vllm serve deepseek-ai/DeepSeek-R1 -dp 8 --enable-expert-parallel"
    found = reading(launch, "8x H200", "vllm 0.11.0")

    assert found is not None and found.kind == "weights_fit"
    assert "671B parameters in fp8" in found.text
    assert "78.11 GiB on each GPU at --tensor-parallel-size 1 × --data-parallel-size 8" in (
        found.text
    )


def test_a_line_keeps_its_own_precision_only_with_the_cards_count() -> None:
    """Kimi-K2-Thinking is published in INT4, Kimi-K2 in FP8; a distill of R1 that keeps
    its own count is not R1's FP8."""
    assert VOCAB.model_info("moonshotai/Kimi-K2-Thinking").quantization == "int4"
    assert VOCAB.model_info("moonshotai/Kimi-K2-Instruct").quantization == "fp8"
    assert VOCAB.model_info("deepseek-ai/DeepSeek-R1-0528-Qwen3-8B").quantization is None


def test_the_seed_glm5_nvfp4_at_tp8_fits_and_at_tp4_asks_for_gpus_not_a_quantization() -> None:
    """744B in NVFP4 (4.5 bits) is 389.76 GiB: 48.72 GiB on each of eight 96 GiB cards,
    97.44 GiB on each of four, past the 86 GiB SGLang gives at most. A 4-bit checkpoint has
    no smaller one to go to."""
    launch = "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8"
    fits = reading(launch, "8x RTX PRO 6000", "sglang 0.5.9")
    assert fits is not None and fits.kind == "weights_fit"
    assert "744B parameters in nvfp4: at least about 389.76 GiB, 48.72 GiB on each GPU" in (
        fits.text
    )
    # SGLang's share holds the weights and the KV pool; activations and graphs sit outside.
    assert fits.text.endswith("about 37.28 GiB is left for the KV cache.")

    crowded = reading(launch.replace("--tp 8", "--tp 4"), "4x RTX PRO 6000", "sglang 0.5.9")
    assert crowded is not None and crowded.kind == "weights_do_not_fit"  # past 86 GiB
    assert crowded.text.endswith("more GPUs than the 4 here. Add GPUs.")


def test_fp8_weights_that_need_more_gpus_name_a_4_bit_checkpoint() -> None:
    found = reading("vllm serve moonshotai/Kimi-K2-Instruct -tp 8", "8x H100", "vllm 0.11.0")
    assert found is not None and found.kind == "weights_do_not_fit"
    assert "1000B parameters in fp8" in found.text
    assert found.text.endswith(
        "Add GPUs, or serve a 4-bit checkpoint (about half as much as 8-bit)."
    )


def test_nothing_is_said_where_the_size_is_not_known() -> None:
    launch = "python -m sglang.launch_server --model-path MiniMaxAI/MiniMax-M2 --tp 8"
    assert reading(launch, "8x RTX PRO 6000", "sglang 0.5.9") is None  # no count known
    assert reading("vllm serve meta-llama/Llama-3.1-70B-Instruct", "") is None  # no GPU


def test_a_launch_check_names_the_split_before_anything_runs() -> None:
    context = build_context(
        launch_command="vllm serve meta-llama/Llama-3.1-70B-Instruct",
        gpu="8x H100",
        framework="vllm",
        framework_version="0.11.0",
    )
    check = check_launch(context, build_graph([]), VOCAB)

    assert check.weights is not None and check.weights.kind == "weights_do_not_fit"
    assert check.weights.values[0].value == "2"


# A 70B model on one H100: the start-up dies while the weights are still being created.
OOM_LOADING = """\
INFO 05-02 10:11:12 llm_engine.py:249] Initializing an LLM engine (v0.6.4) with config: model='/mnt/models/Llama-3.3-70B-Instruct', tokenizer='/mnt/models/Llama-3.3-70B-Instruct', dtype=torch.bfloat16, max_seq_len=131072, tensor_parallel_size=1, pipeline_parallel_size=1, quantization=None
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/layers/linear.py", line 1020, in create_weights
    weight = Parameter(torch.empty(sum(output_partition_sizes), input_size_per_partition, dtype=params_dtype), requires_grad=False)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 301.06 MiB is free. Including non-PyTorch memory, this process has 78.88 GiB memory in use. Of the allocated memory 78.37 GiB is allocated by PyTorch, and 13.27 MiB is reserved by PyTorch but unallocated.
"""
SHARD = FixRecord(
    1,
    "shard the model over more GPUs with --tensor-parallel-size",
    (Change(ChangeAction.SET_FLAG, "tensor-parallel-size", None),),
    Outcome.PROPOSED,
)


def test_an_oom_while_loading_reads_the_model_from_the_log_and_fills_the_split() -> None:
    """The engine's config line names the model and its split; the GPU's size comes from
    the message (79.19 GiB). The fix that names the flag without a value takes 2."""
    graph = build_graph([finding(1, OOM_LOADING, (SHARD,), cause="weights larger than a GPU")])
    result = diagnose(OOM_LOADING, build_context(OOM_LOADING), graph)

    [weights] = [r for r in result.memory_readings if r.kind.startswith("weights")]
    assert weights.kind == "weights_do_not_fit"
    assert weights.text.startswith(
        "The weights of Llama-3.3-70B-Instruct are 70B parameters in bf16"
    )
    assert "more than the 71.27 GiB that --gpu-memory-utilization 0.9 gives of 79.19 GiB" in (
        weights.text
    )
    assert result.fixes[0].command_changes == ("--tensor-parallel-size 2",)


SGLANG_LOADED = """\
[2026-02-10 16:30:44 TP0] Load weight begin. avail mem=78.52 GB
[2026-02-10 16:31:58 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=12.41 GB, mem usage=65.89 GB.
[2026-02-10 16:31:59 TP0] Scheduler hit an exception: Traceback (most recent call last):
RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: self.server_args.mem_fraction_static=0.7
"""


def test_the_logs_own_weight_figure_replaces_the_estimate() -> None:
    """SGLang printed what the weights took on each rank (65.89 GiB): that figure, not the
    one from the name, is weighed against 0.7 of the 80 GiB H100."""
    launch = (
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct "
        "--tp 2 --mem-fraction-static 0.7"
    )
    context = build_context(SGLANG_LOADED, launch_command=launch, gpu="2x H100")
    result = diagnose(SGLANG_LOADED, context, build_graph([]))

    [weights] = [r for r in result.memory_readings if r.kind.startswith("weights")]
    assert weights.text.startswith(
        "The weights of meta-llama/Llama-3.1-70B-Instruct took 65.89 GiB on each GPU at "
        "--tp-size 2, as the log measured them, more than the 56.00 GiB that "
        "--mem-fraction-static 0.7 gives of 80.00 GiB"
    )
    assert "more GPUs than the 2 here" in weights.text


def test_one_gpu_typed_as_one_is_a_count_and_gets_no_split_it_cannot_run() -> None:
    found = reading("vllm serve meta-llama/Llama-3.1-70B-Instruct", "1x H100", "vllm 0.11.0")
    assert found is not None and found.values == ()
    assert "more GPUs than the 1 here" in found.text

    # A bare name says nothing of how many: the split is offered.
    unsaid = reading("vllm serve meta-llama/Llama-3.1-70B-Instruct", "H100", "vllm 0.11.0")
    assert unsaid is not None and [v.value for v in unsaid.values] == ["2"]
