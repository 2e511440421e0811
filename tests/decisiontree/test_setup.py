"""The verdict tells the truth about the setup; corrected commands fit the user's setup.

The finding below is the NaN decode assert of a DSA model (glm_moe_dsa) on an
sm_120 card, cured by a BF16 KV cache plus the trtllm sparse-attention kernels.
The same generic assert, pasted from a Llama launch on an H100, is the same
error on a different setup: never "known", and never a `--dsa-*` flag.
"""

from __future__ import annotations

from pathlib import Path

from decisiontree import flags
from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, Condition, FindingRecord, FixRecord, Outcome
from decisiontree.setup import State, applicability, assess, capability_answers, setup_differences
from decisiontree.vocabulary import load

FIXTURES = Path(__file__).parent / "fixtures" / "diagnose"
NAN_ASSERT = (FIXTURES / "decode_assert_rtx_host_a.txt").read_text()
NAN_ASSERT_ELSEWHERE = (FIXTURES / "decode_assert_rtx_host_b.txt").read_text()
GENERIC_NAN = "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0\n"
LLAMA_LAUNCH = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 1"
GLM_LAUNCH = (
    "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8 "
    "--quantization modelopt_fp4 --attention-backend flashinfer --kv-cache-dtype fp8_e4m3 "
    "--mem-fraction-static 0.88"
)


def set_flag(name: str, value: str | None = None) -> Change:
    return Change(ChangeAction.SET_FLAG, name, value)


BF16_AND_TRTLLM = FixRecord(
    1,
    "--kv-cache-dtype bf16 --nsa-decode-backend trtllm --nsa-prefill-backend trtllm",
    (
        set_flag("kv-cache-dtype", "bf16"),
        set_flag("nsa-decode-backend", "trtllm"),
        set_flag("nsa-prefill-backend", "trtllm"),
    ),
    Outcome.RESOLVES,
)
NAN_ON_SM120 = FindingRecord(
    id=1,
    title="NaN at the first decode: flashmla_kv sparse decode on sm_120",
    kind="crash",
    cause="an FP8 KV cache sends DSA decode through a kernel that yields NaN on sm_120",
    samples=(NAN_ASSERT,),
    conditions=(
        Condition("gpu.arch", "sm_120"),
        Condition("model.arch", "glm_moe_dsa"),
        Condition("framework", "sglang"),
    ),
    fixes=(BF16_AND_TRTLLM,),
)


def all_command_changes(result: object) -> list[str]:
    fixes = result.fixes  # type: ignore[attr-defined]
    return [change for fix in fixes for change in fix.command_changes]


def test_the_generic_nan_assert_on_an_h100_llama_is_the_same_error_on_another_setup() -> None:
    context = build_context(launch_command=LLAMA_LAUNCH, gpu="H100")

    result = diagnose(GENERIC_NAN, context, build_graph([NAN_ON_SM120]))

    assert result.match != "known"
    assert result.verdict == "different_setup"
    assert [(d.key, d.here, d.finding_value) for d in result.different_setup] == [
        ("gpu.arch", "sm_90", "sm_120"),
        ("model.arch", "llama", "glm_moe_dsa"),
    ]
    assert not [c for c in all_command_changes(result) if "dsa" in c or "nsa" in c]
    withheld = result.fixes[0].withheld
    assert {w.change.name for w in withheld} == {"dsa-decode-backend", "dsa-prefill-backend"}
    assert "glm_moe_dsa" in withheld[0].reason and "llama" in withheld[0].reason
    assert result.fixes[0].command_changes == ("--kv-cache-dtype bf16",)


def test_the_same_assert_with_the_glm5_launch_on_an_rtx_pro_6000_stays_known() -> None:
    context = build_context(launch_command=GLM_LAUNCH, gpu="RTX PRO 6000 Blackwell")

    result = diagnose(NAN_ASSERT_ELSEWHERE, context, build_graph([NAN_ON_SM120]))

    assert result.verdict == "known"
    assert result.different_setup == ()
    assert "--dsa-decode-backend trtllm" in result.fixes[0].command_changes
    assert result.fixes[0].withheld == ()


def test_an_unknown_setup_is_not_a_different_one() -> None:
    result = diagnose(NAN_ASSERT_ELSEWHERE, build_context(), build_graph([NAN_ON_SM120]))

    assert result.verdict == "known"
    assert result.fixes[0].withheld == ()


def test_a_contradicted_framework_release_is_a_different_setup() -> None:
    conditions = (Condition("framework", "sglang"), Condition("framework.version", "<0.5.10"))
    context = build_context(framework="sglang", framework_version="0.5.23")

    differences = setup_differences(conditions, context, load())

    assert [d.describe() for d in differences] == ["release 0.5.23 here, <0.5.10 in the finding"]


def test_a_flag_of_another_framework_is_translated_when_it_means_the_same() -> None:
    sglang_user = build_context(framework="sglang")

    verdict = applicability(set_flag("enforce-eager"), sglang_user, "vllm")

    assert verdict.applies
    assert verdict.change.name == "disable-cuda-graph"


def test_a_flag_the_users_framework_does_not_have_is_withheld() -> None:
    sglang_user = build_context(framework="sglang")

    verdict = applicability(set_flag("limit-mm-per-prompt", "image=2"), sglang_user, "vllm")

    assert not verdict.applies
    assert verdict.reason == "sglang has no --limit-mm-per-prompt"


def test_a_value_of_another_framework_is_written_as_the_users_framework_writes_it() -> None:
    # SGLang's KV cache dtype is `bf16`; vLLM's --kv-cache-dtype only accepts `bfloat16`.
    vllm_user = build_context(framework="vllm")

    verdict = applicability(set_flag("kv-cache-dtype", "bf16"), vllm_user, "sglang")

    assert verdict.applies
    assert (verdict.change.name, verdict.change.value) == ("kv-cache-dtype", "bfloat16")


def test_a_value_the_users_framework_does_not_accept_is_withheld() -> None:
    vllm_user = build_context(framework="vllm")

    verdict = applicability(set_flag("kv-cache-dtype", "mxfp8"), vllm_user, "sglang")

    assert not verdict.applies
    assert verdict.reason == "vllm's --kv-cache-dtype has no value mxfp8"


def test_a_value_of_the_findings_own_framework_is_kept_as_it_worked() -> None:
    # The tables hold the newest release's choices; an older release's value that
    # worked for the finding is not the table's to refuse.
    sglang_user = build_context(framework="sglang")

    verdict = applicability(set_flag("kv-cache-dtype", "fp8_e4m3_old"), sglang_user, "sglang")

    assert verdict.applies
    assert verdict.change.value == "fp8_e4m3_old"


def test_a_flag_gone_after_the_users_release_is_withheld() -> None:
    # nsa-prefill-cp-mode was last read by SGLang 0.5.9.
    newer = build_context(framework="sglang", framework_version="0.5.23")
    older = build_context(framework="sglang", framework_version="0.5.9")
    change = set_flag("nsa-prefill-cp-mode", "in-seq-split")

    assert "gone after sglang 0.5.9" in applicability(change, newer, "sglang").reason
    assert applicability(change, older, "sglang").applies


def test_model_architecture_ties_come_from_the_flag_tables() -> None:
    deepseek = build_context(framework="sglang", model="deepseek-ai/DeepSeek-V3.2")

    assert flags.flag("dsa-decode-backend", "sglang").model_archs  # type: ignore[union-attr]
    assert applicability(set_flag("dsa-decode-backend", "trtllm"), deepseek, None).applies
    assert flags.flag("kv-cache-dtype", "sglang").model_archs == ()  # type: ignore[union-attr]


def test_compute_capability_answers_tell_each_condition_apart() -> None:
    assert capability_answers(["<8.0", ">=9.0"], load()) == ("<8.0", ">=8.0,<9.0", ">=9.0")
    assert capability_answers([">=0.1"], load()) == ()  # every GPU meets it: nothing to ask


def test_a_capability_answered_as_a_range_decides_only_what_the_whole_range_decides() -> None:
    ampere_or_ada = build_context().with_answer("gpu.capability", ">=8.0,<9.0")

    def state(wanted: str) -> State:
        return assess(Condition("gpu.capability", wanted), ampere_or_ada, load())

    assert state("<9.0") is State.MET
    assert state("<8.0") is State.CONTRADICTED
    assert state(">=8.9") is State.UNKNOWN  # an L40S has 8.9, an A100 8.0
    difference = setup_differences([Condition("gpu.capability", "<8.0")], ampere_or_ada, load())
    assert difference[0].describe() == (
        "GPU compute capability >=8.0,<9.0 here, <8.0 in the finding"
    )
