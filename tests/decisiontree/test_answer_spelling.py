"""Every command change in an answer is spelled as the user's release spells it.

The knowledge base and pastes are tests/decisiontree/test_diagnose.py's: the FP8 KV
cache NaN decode crash on sm_120. SGLang 0.5.9 and older call the sparse-attention
kernel flags --nsa-*; later releases --dsa-*.
"""

from __future__ import annotations

import dataclasses

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.records import Change, ChangeAction, Condition, Evidence, FixRecord, Outcome
from tests.decisiontree.test_diagnose import (
    BF16_AND_TRTLLM,
    SGLANG_CMD,
    fp8_decode_finding,
    knowledge,
    rtx_context,
    sample,
)

FORCE_FLASHMLA = FixRecord(
    16,
    "Force --dsa-decode-backend flashmla_kv",
    (Change(ChangeAction.SET_FLAG, "dsa-decode-backend", "flashmla_kv"),),
    Outcome.NO_EFFECT,
)


def test_a_fix_known_not_to_help_is_spelled_as_the_users_release_spells_it() -> None:
    graph = knowledge(fp8_decode_finding(BF16_AND_TRTLLM, FORCE_FLASHMLA))

    result = diagnose(sample("decode_assert_rtx_host_b.txt"), rtx_context(version="0.5.9"), graph)

    [useless] = result.not_helpful
    assert useless.fix.id == FORCE_FLASHMLA.id
    assert useless.finding.id == 1
    assert useless.command_changes == ("--nsa-decode-backend flashmla_kv",)
    assert useless.summary == "Force --nsa-decode-backend flashmla_kv"
    assert useless.reason.startswith("did not help in finding 1 (")


def test_with_the_framework_unknown_a_useless_fix_is_spelled_as_its_findings_framework() -> None:
    graph = knowledge(fp8_decode_finding(BF16_AND_TRTLLM, FORCE_FLASHMLA))
    no_framework = build_context(gpu="NVIDIA RTX PRO 6000 Blackwell Server Edition")

    result = diagnose(sample("decode_assert_rtx_host_b.txt"), no_framework, graph)

    [useless] = result.not_helpful
    assert useless.command_changes == ("--dsa-decode-backend flashmla_kv",)
    assert useless.summary == "Force --dsa-decode-backend flashmla_kv"


def test_with_the_release_unknown_the_first_fix_says_what_older_releases_call_its_flag() -> None:
    result = diagnose(sample("decode_assert_rtx_host_b.txt"), rtx_context(), knowledge())

    assert result.fixes[0].fix.id == BF16_AND_TRTLLM.id
    assert "--dsa-decode-backend is --nsa-decode-backend in sglang 0.5.9 and older" in (
        result.fixes[0].spellings
    )


def test_with_the_release_known_the_first_fix_needs_no_note_on_older_spellings() -> None:
    result = diagnose(
        sample("decode_assert_rtx_host_b.txt"), rtx_context(version="0.5.9"), knowledge()
    )

    assert result.fixes[0].spellings == ()


def test_a_fix_already_in_the_launch_command_says_so_beside_its_evidence() -> None:
    bf16 = dataclasses.replace(BF16_AND_TRTLLM, evidence=Evidence(feedback_helped=2))
    launched = rtx_context(
        SGLANG_CMD.replace("fp8_e4m3", "bf16")
        + " --dsa-decode-backend trtllm --dsa-prefill-backend trtllm"
    )

    result = diagnose(
        sample("decode_assert_rtx_host_b.txt"), launched, knowledge(fp8_decode_finding(bf16))
    )

    [applied] = [f for f in result.fixes if f.fix.id == bf16.id]
    assert applied.already_applied
    assert applied.why[-1].detail.startswith("reported: resolves; feedback: 2 helped, 0 did not")
    assert applied.why[-1].detail.endswith("; already in your launch command")


def test_a_change_withheld_for_the_users_model_is_spelled_for_the_release_in_its_reason_too() -> (
    None
):
    qwen_on_059 = build_context(
        launch_command="python -m sglang.launch_server --model-path Qwen/Qwen3-8B "
        "--kv-cache-dtype fp8_e4m3",
        gpu="NVIDIA RTX PRO 6000 Blackwell Server Edition",
        framework="sglang",
        framework_version="0.5.9",
    )

    result = diagnose(
        sample("decode_assert_rtx_host_b.txt"),
        qwen_on_059,
        knowledge(fp8_decode_finding(BF16_AND_TRTLLM)),
    )

    [fix] = [f for f in result.fixes if f.fix.id == BF16_AND_TRTLLM.id]
    assert fix.command_changes == ("--kv-cache-dtype bf16",)
    assert [(w.command_change, w.reason) for w in fix.withheld] == [
        (
            f"--nsa-{phase}-backend trtllm",
            f"--nsa-{phase}-backend only acts on deepseek_v32, glm_moe_dsa models; yours is qwen3",
        )
        for phase in ("decode", "prefill")
    ]


def test_a_bare_flag_already_in_the_launch_command_is_already_applied() -> None:
    no_graphs = FixRecord(
        44,
        "Launch without CUDA graphs",
        (Change(ChangeAction.SET_FLAG, "disable-cuda-graph", None),),
        Outcome.RESOLVES,
    )

    result = diagnose(
        sample("decode_assert_rtx_host_b.txt"),
        rtx_context(SGLANG_CMD + " --disable-cuda-graph"),
        knowledge(fp8_decode_finding(no_graphs)),
    )

    [fix] = [f for f in result.fixes if f.fix.id == no_graphs.id]
    assert fix.already_applied


def test_on_another_framework_a_flag_it_lacks_has_one_name_in_the_whole_answer() -> None:
    """A vLLM user meets the SGLang finding, whose fix was written in SGLang 0.5.9's words:
    the heading, the withheld changes and the conditions all name the sparse-attention
    flag once, by its newest SGLang name, never the old one beside the new."""
    written_for_059 = dataclasses.replace(
        BF16_AND_TRTLLM, summary="--kv-cache-dtype bf16 --nsa-decode-backend trtllm"
    )
    finding = fp8_decode_finding(written_for_059)
    finding = dataclasses.replace(
        finding,
        conditions=(
            *finding.conditions,
            Condition("flag.dsa-decode-backend", "trtllm", negate=True),
        ),
    )
    vllm_user = build_context(
        launch_command="vllm serve zai-org/GLM-5-NVFP4",
        gpu="NVIDIA RTX PRO 6000 Blackwell Server Edition",
    )

    result = diagnose(sample("decode_assert_rtx_host_b.txt"), vllm_user, knowledge(finding))

    [fix] = result.fixes
    assert fix.summary == "--kv-cache-dtype bf16 --dsa-decode-backend trtllm"
    assert fix.command_changes == ("--kv-cache-dtype bfloat16",)
    assert [w.command_change for w in fix.withheld] == [
        "--dsa-decode-backend trtllm",
        "--dsa-prefill-backend trtllm",
    ]
    said = " ".join(step.detail for step in fix.why)
    assert "--dsa-decode-backend is not trtllm" in said
    assert "nsa-" not in said + fix.summary


def test_a_launch_command_that_writes_old_names_spells_the_whole_answer_for_its_release() -> None:
    """The release is not given, but `--nsa-prefill-backend` in the command is 0.5.9 or
    older: the first fix is written in that release's words, with no note on other ones."""
    old_names = rtx_context(SGLANG_CMD + " --nsa-prefill-backend flashmla_sparse")

    result = diagnose(sample("decode_assert_rtx_host_b.txt"), old_names, knowledge())

    first = result.fixes[0]
    assert first.fix.id == BF16_AND_TRTLLM.id
    assert "--nsa-decode-backend trtllm" in first.command_changes
    assert not any("dsa" in change for change in first.command_changes)
    assert first.spellings == ()
