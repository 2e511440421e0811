"""Code that an error says runs only on some GPUs, read beside the paste's GPU.

The messages are shaped as kernels and backends word their checks (SGLang's, vLLM's,
flash-attn's, FlashInfer's), with names of our own."""

from __future__ import annotations

import pytest

from decisiontree.context import Context
from decisiontree.diagnose import diagnose
from decisiontree.gpu_requirement import gpu_requirements
from decisiontree.graph import build_graph
from decisiontree.vocabulary import load

VOCABULARY = load()


def read(message: str, context: Context | None = None) -> list:
    return list(gpu_requirements([message], context or Context(), VOCABULARY))


@pytest.mark.parametrize(
    ("message", "arch", "runs_on"),
    [
        # A list of architectures, with the message's gloss of the family.
        ("RuntimeError: fused_rope_gemm requires SM100/SM103", "sm_120", ("sm_100", "sm_103")),
        ("ValueError: tile_mla requires SM100 or SM103 (Blackwell)", "sm_90", ("sm_100", "sm_103")),
        # A lower bound, written four ways.
        ("RuntimeError: swizzle_gemm requires SM90 (Hopper) or later", "sm_86", None),
        ("ValueError: paged_lse only supported on SM89+", "sm_86", None),
        ("AssertionError: FA2 is only supported on devices with compute capability >= 8", "sm_75", None),
        ("ValueError: Bfloat16 needs a GPU with compute capability of at least 8.0.", "sm_75", None),
        ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "sm_75", None),
        # Families of majors, and a family by name.
        ("ValueError: sparse_topk requires SM10x or SM12x", "sm_90", ("sm_100", "sm_103", "sm_120", "sm_121")),
        ("RuntimeError: DenseMLA is only supported on Hopper devices.", "sm_120", ("sm_90",)),
        ("ValueError: NVF4 kernel is only supported on devices with compute capability 10.x or 11.x", "sm_120", ("sm_100", "sm_103", "sm_110")),
        # A range, and a list less what it leaves out.
        ("ValueError: Legacy attention requires SM>=80 and SM<=90.", "sm_120", ("sm_80", "sm_86", "sm_87", "sm_89", "sm_90")),
        ("RuntimeError: tma_fused requires SM100+ excluding SM12x; use the fallback", "sm_120", ("sm_100", "sm_103", "sm_110")),
    ],
)  # fmt: skip
def test_a_gpu_outside_the_list_is_told_no_setting_makes_the_code_run(
    message: str, arch: str, runs_on: tuple[str, ...] | None
) -> None:
    (reading,) = read(message, Context(arch=arch))

    assert reading.arch == arch
    assert f"this GPU is {arch}, not one of them" in reading.says
    assert "No setting of it makes it run here" in reading.says
    assert arch not in reading.runs_on
    if runs_on is not None:
        assert reading.runs_on == runs_on
    else:  # a lower bound: every newer architecture the vocabulary knows
        assert reading.runs_on[-1] == "sm_121" and "every newer architecture" in reading.says


@pytest.mark.parametrize(
    ("message", "arch"),
    [
        ("RuntimeError: swizzle_gemm requires SM90 (Hopper) or later", "sm_120"),
        ("RuntimeError: DenseMLA is only supported on Hopper devices.", "sm_90"),
        ("ValueError: Legacy attention requires SM>=80 and SM<=90.", "sm_89"),
        ("RuntimeError: tma_fused requires SM100+ excluding SM12x; use the fallback", "sm_103"),
        ("ValueError: sparse_topk requires SM10x or SM12x", "sm_121"),
        ("AssertionError: FA2 is only supported on devices with compute capability >= 8", "sm_80"),
        ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "sm_120"),
    ],
)
def test_a_gpu_the_code_runs_on_gets_no_reading(message: str, arch: str) -> None:
    """The error then has another cause, and saying "not on this GPU" would mislead."""
    assert read(message, Context(arch=arch)) == []


def test_the_message_s_own_account_of_the_gpu_is_read() -> None:
    message = "ValueError: compact NVFP4 dequant requires SM100/SM103, got sm120"

    (reading,) = read(message)
    (named,) = read(message, Context(arch="sm_120", gpus=("RTX PRO 6000",)))

    assert reading.arch == "sm_120" and "this GPU is sm_120" in reading.says
    assert reading.code == "compact NVFP4 dequant"
    assert "the RTX PRO 6000 is sm_120, not one of them" in named.says
    # The device that ran says so, whatever the form was told: "got SM90" on a form of sm_120.
    # A list quoted in a question ends at its closing quote.
    (quoted,) = read(
        'Why does "fused_moe requires SM90/100" show on my RTX PRO 6000, is it the driver?'
    )
    assert quoted.needs == "SM90/100" and quoted.runs_on == ("sm_90", "sm_100")
    (ran,) = read("ValueError: swap_ab requires SM100, got SM90", Context(arch="sm_120"))
    assert ran.arch == "sm_90"
    # A major version alone ("got SM12.x") is compared by its major.
    assert read("RuntimeError: fp8 prefill requires SM10x, got SM12.x")[0].arch == "sm_12x"
    assert read("RuntimeError: fp8 prefill requires SM12x, got SM12.x") == []


def test_a_gpu_the_paste_does_not_name_is_said_to_be_unknown() -> None:
    (reading,) = read("RuntimeError: FlashAttention only supports Ampere GPUs or newer.")

    assert reading.arch == "" and reading.runs_on[0] == "sm_80" and "sm_90" in reading.runs_on
    assert "the paste does not say which GPU this is" in reading.says


def test_a_refusal_of_some_gpus_reads_the_other_way() -> None:
    message = "AssertionError: paged KV not supported on SM 8.0"

    (reading,) = read(message, Context(arch="sm_80"))

    assert reading.code == "paged KV"
    assert reading.says.startswith(
        "`paged KV` does not run on SM 8.0; this GPU is sm_80, one of them"
    )
    assert read(message, Context(arch="sm_90")) == []


@pytest.mark.parametrize(
    "message",
    [
        "ImportError: this model requires transformers>=4.45.0",
        "ValueError: pipeline parallel requires 8 GPUs but found 4",
        "RuntimeError: the hybrid model requires --mamba-backend triton",
        "ValueError: the draft model needs 2.5 GiB more than is free",
        "RuntimeError: speculative decoding is not supported on this platform",
        "ValueError: the packed GEMM only supports 8/16-bit inputs",  # widths, not SM90/100
    ],
)
def test_a_requirement_that_is_not_a_gpu_list_gets_no_reading(message: str) -> None:
    assert read(message) == []
    assert read(message, Context(arch="sm_75")) == []


def test_the_launch_flag_whose_value_chose_the_code_is_named() -> None:
    launch = Context(
        arch="sm_120", framework="sglang", flags={"attention-backend": "trtllm_mha", "tp-size": "8"}
    )

    (reading,) = read(
        "ValueError: Native prefill with trtllm_mha requires SM100 (Blackwell)", launch
    )

    assert reading.flags == ("--attention-backend trtllm_mha",)
    assert reading.remedy == (
        "Set `--attention-backend trtllm_mha` to another value, one that runs on sm_120."
    )


def test_a_backend_named_by_its_choice_names_the_flag_that_offers_it() -> None:
    """Without the launch, the framework's flags that offer the named backend as a value;
    a value many flags offer ("triton") names none."""
    vllm = Context(arch="sm_90", framework="vllm")

    (named,) = read("ValueError: FLASHINFER_MLA_SPARSE_SM120 requires SM12x", vllm)
    (generic,) = read(
        "ValueError: triton requires SM100", Context(arch="sm_90", framework="sglang")
    )

    assert named.flags == ("--attention-backend",)
    assert named.remedy.startswith("Set `--attention-backend` to another value")
    # SGLang offers the backend on three flags; "NVFP4" (offered by more) and "prefill"
    # (an English word a mode offers) name none.
    sglang = Context(arch="sm_120", framework="sglang")
    (three,) = read("ValueError: NVFP4 prefill with trtllm_mha requires SM100", sglang)
    assert set(three.flags) == {
        "--attention-backend",
        "--decode-attention-backend",
        "--prefill-attention-backend",
    }
    assert three.remedy.startswith("Set whichever of `--")
    assert generic.flags == ()
    assert generic.remedy.startswith(
        "Choose another backend, kernel or quantization that runs on sm_90"
    )


def test_diagnose_carries_the_reading_beside_its_answer() -> None:
    paste = """\
Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/layers/quantization/fused_gemm.py", line 88, in forward
    raise RuntimeError("fused_rope_gemm requires SM100/SM103, got sm120")
RuntimeError: fused_rope_gemm requires SM100/SM103, got sm120
"""  # fmt: skip
    graph = build_graph([])

    diagnosis = diagnose(paste, Context(framework="sglang"), graph)

    assert [r.code for r in diagnosis.gpu_requirements] == ["fused_rope_gemm"]
    assert diagnosis.gpu_requirements[0].arch == "sm_120"
