"""Backends a launch chooses that its framework's release refuses on its GPU."""

from __future__ import annotations

import pytest

from decisiontree import flags
from decisiontree.backend_gpus import (
    backend_requirements,
    capability_range,
    tables,
    with_launch_backends,
)
from decisiontree.context import build_context
from decisiontree.gpu_requirement import CapabilityRange, gpu_requirements
from decisiontree.vocabulary import load

GLM5_FA3 = "python3 -m sglang.launch_server --model-path zai-org/GLM-5 --attention-backend fa3"
DEEPSEEK_FLASHMLA = "vllm serve deepseek-ai/DeepSeek-V3 --attention-backend FLASHMLA"
FA3_REFUSAL = "AssertionError: FlashAttention v3 Backend requires SM>=80 and SM<=90."


def readings(launch: str, gpu: str | None, **facts: str):
    context = build_context("", launch_command=launch, gpu=gpu, **facts)
    return backend_requirements(context, load())


def test_every_backend_in_the_table_is_a_choice_its_flags_offer() -> None:
    """A table entry the flag tables do not offer could never be met: a rename drifted."""
    for framework, table in tables().items():
        for backend in table.backends.values():
            assert backend.ranges or backend.runs_on == ("any",), backend.name
            for flag in backend.flags:
                spec = flags.flag(flag, framework)
                assert spec is not None, (framework, flag)
                assert backend.name in spec.choices, (framework, flag, backend.name)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("9.0", CapabilityRange((9, 0), (9, 0))),
        ("10.x", CapabilityRange((10, 0), (10, 9))),
        ("8.0+", CapabilityRange((8, 0), (99, 9))),
        ("8.0-12.1", CapabilityRange((8, 0), (12, 1))),
    ],
)
def test_capabilities_are_written_as_one_a_major_from_on_or_a_range(
    spec: str, expected: CapabilityRange
) -> None:
    assert capability_range(spec) == expected


def test_fa3_on_a_blackwell_workstation_gpu_is_refused_with_what_serves_the_models_attention() -> (
    None
):
    [reading] = readings(GLM5_FA3, "RTX PRO 6000 Blackwell")

    assert reading.flags == ("--attention-backend fa3",)
    assert reading.arch == "sm_120"
    assert reading.runs_on == ("sm_90",)  # SGLang runs FA3 on SM8x only without MLA
    assert "sglang 0.5.23" in reading.says and "not one of them" in reading.says
    # GLM-5's attention is MLA: trtllm_mha runs on sm_120 but serves no MLA model.
    assert "`trtllm_mla`, `triton`" in reading.remedy and "trtllm_mha" not in reading.remedy
    assert "leave it unset" in reading.remedy


def test_a_dense_model_is_offered_dense_backends_and_an_unknown_one_what_serves_both() -> None:
    llama = GLM5_FA3.replace("zai-org/GLM-5", "meta-llama/Llama-3.1-8B-Instruct")
    unknown = GLM5_FA3.replace("zai-org/GLM-5", "our/private-model")

    [dense] = readings(llama, "RTX 5090")
    [either] = readings(unknown, "RTX 5090")

    assert "`trtllm_mha`, `triton`" in dense.remedy and "trtllm_mla" not in dense.remedy
    assert "runs `triton` on sm_120" in either.remedy
    assert "and only 9.x for a model with MLA" in either.says


def test_fa3_refuses_an_mla_model_on_ampere_and_serves_a_dense_one() -> None:
    deepseek = "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --attention-backend fa3"

    [reading] = readings(deepseek, "A100")

    assert reading.runs_on == ("sm_90",)
    assert "for a model with MLA attention as this one" in reading.says
    llama = deepseek.replace("deepseek-ai/DeepSeek-V3", "meta-llama/Llama-3.1-8B-Instruct")
    assert readings(llama, "A100") == ()


def test_the_same_launch_on_hopper_gets_nothing() -> None:
    assert readings(GLM5_FA3, "H100") == ()


def test_a_vllm_mla_backend_offers_only_mla_backends_that_run_here() -> None:
    [reading] = readings(DEEPSEEK_FLASHMLA, "RTX 5090")

    assert reading.runs_on == ("sm_90", "sm_100", "sm_103")
    assert "`TRITON_MLA`" in reading.remedy
    assert "TRITON_ATTN" not in reading.remedy and "FLASH_ATTN" not in reading.remedy


def test_a_dense_backend_on_an_old_gpu_offers_dense_ones_and_the_value_is_read_in_any_case() -> (
    None
):
    [reading] = readings("vllm serve meta-llama/Llama-3.1-8B --attention-backend flash_attn", "T4")

    assert reading.code == "FLASH_ATTN" and reading.arch == "sm_75"
    assert "`TRITON_ATTN`" in reading.remedy and "MLA" not in reading.remedy


def test_a_flag_the_release_does_not_check_that_backend_on_gets_nothing() -> None:
    """SGLang 0.5.23 checks trtllm_mla's GPU where it decodes, not where it only prefills."""
    decode = "python3 -m sglang.launch_server --model-path m --decode-attention-backend trtllm_mla"

    assert len(readings(decode, "A100")) == 1
    assert readings(decode.replace("--decode-", "--prefill-"), "A100") == ()


def test_another_release_is_told_that_its_check_may_differ() -> None:
    [reading] = readings(GLM5_FA3, "RTX 5090", framework_version="0.5.9")

    assert "this launch runs 0.5.9, whose check may differ" in reading.says


def test_nothing_is_said_without_the_gpu_or_for_a_backend_the_table_does_not_hold() -> None:
    assert readings(GLM5_FA3, None) == ()
    unchecked = GLM5_FA3.replace("fa3", "flashinfer")
    assert readings(unchecked, "RTX 5090") == ()


def test_the_launchs_reading_stands_in_for_a_message_that_lists_the_same_gpus() -> None:
    context = build_context("", launch_command=GLM5_FA3, gpu="RTX 5090")
    vocabulary = load()
    said = gpu_requirements([FA3_REFUSAL], context, vocabulary)
    assert said and not said[0].flags  # the message names no flag

    [reading] = with_launch_backends(said, context, vocabulary)

    assert reading.flags == ("--attention-backend fa3",)


def test_a_message_about_other_code_is_kept_beside_the_launchs_reading() -> None:
    context = build_context("", launch_command=GLM5_FA3, gpu="RTX 5090")
    vocabulary = load()
    other = "RuntimeError: dsv3_fused_a_gemm requires SM90 (Hopper) or later, got sm86"
    said = gpu_requirements([other], context, vocabulary)

    merged = with_launch_backends(said, context, vocabulary)

    assert [r.flags for r in merged] == [said[0].flags, ("--attention-backend fa3",)]


SELECTED = (
    "Selected backend AttentionBackendEnum.FLASHMLA is not valid for this configuration. "
    "Reason: ['compute capability not supported']"
)


def from_error(said: list[str], launch: str | None = None):
    context = build_context("", launch_command=launch, gpu="RTX 5090", framework="vllm")
    return backend_requirements(context, load(), said=said)


def test_a_backend_the_error_names_is_read_where_the_launch_names_none() -> None:
    [reading] = from_error([SELECTED])

    assert reading.says.startswith("The error names `FLASHMLA`, a backend that vllm 0.34.0")
    assert reading.flags == ("--attention-backend FLASHMLA",)
    assert "`TRITON_MLA`" in reading.remedy


def test_an_error_that_lists_every_backend_tried_chose_none_of_them() -> None:
    tried = (
        "No valid attention backend found for cuda with AttentionSelectorConfig(...). "
        "Reasons: {FLASH_ATTN: [head_size not supported], "
        "FLASHMLA: [compute capability not supported]}."
    )

    assert from_error([tried]) == ()


def test_the_launchs_own_choice_is_read_instead_of_the_errors() -> None:
    launch = "vllm serve deepseek-ai/DeepSeek-V3 --attention-backend TRITON_MLA"

    assert from_error([SELECTED], launch) == ()
