"""Diagnosis as an engineer in the middle of an incident sees it.

The knowledge base below is modelled on the GLM-5-NVFP4 / RTX PRO 6000 (sm_120)
incidents: an FP8 KV cache sends sparse-attention decode through a kernel that
produces NaN on sm_120, and forcing the triton attention backend only trades
the device-side assert for an AssertionError in the KV pool.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from decisiontree.context import Context, build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import KnowledgeGraph, build_graph
from decisiontree.records import (
    Change,
    ChangeAction,
    Condition,
    Evidence,
    FindingRecord,
    FixRecord,
    Outcome,
    SourceRef,
)
from decisiontree.traceback import InputRejected

FIXTURES = Path(__file__).parent / "fixtures" / "diagnose"
SGLANG_CMD = (
    "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp-size 8 "
    "--quantization modelopt_fp4 --kv-cache-dtype fp8_e4m3 --mem-fraction-static 0.88"
)


def sample(name: str) -> str:
    return (FIXTURES / name).read_text()


def set_flag(name: str, value: str | None = None) -> Change:
    return Change(ChangeAction.SET_FLAG, name, value)


BF16_AND_TRTLLM = FixRecord(
    11,
    "Use a BF16 KV cache and the trtllm sparse-attention kernels",
    (
        set_flag("kv-cache-dtype", "bf16"),
        set_flag("dsa-decode-backend", "trtllm"),
        set_flag("dsa-prefill-backend", "trtllm"),
    ),
    Outcome.RESOLVES,
)
TRITON_ATTENTION = FixRecord(
    12,
    "Switch the attention backend to triton",
    (set_flag("attention-backend", "triton"),),
    Outcome.NO_EFFECT,
)
OMIT_KV_DTYPE = FixRecord(
    13,
    "Leave --kv-cache-dtype out",
    (Change(ChangeAction.REMOVE_FLAG, "kv-cache-dtype"),),
    Outcome.NO_EFFECT,
)
UNSET_ATTENTION = FixRecord(
    21,
    "Leave the attention backend to the DSA model",
    (Change(ChangeAction.REMOVE_FLAG, "attention-backend"),),
    Outcome.RESOLVES,
)
BF16_ONLY = FixRecord(
    22, "Store the KV cache in BF16", (set_flag("kv-cache-dtype", "bf16"),), Outcome.RESOLVES
)
UPGRADE_FLASHINFER = FixRecord(
    31,
    "Upgrade flashinfer",
    (Change(ChangeAction.PIN_VERSION, "flashinfer-python", "0.7.2"),),
    Outcome.RESOLVES,
)
LOWER_MEM_FRACTION = FixRecord(
    41,
    "Leave more memory for CUDA graphs",
    (set_flag("mem-fraction-static", "0.85"),),
    Outcome.RESOLVES,
)


def fp8_decode_finding(*fixes: FixRecord) -> FindingRecord:
    return FindingRecord(
        id=1,
        title="FP8 KV cache: NaN in sparse-attention decode on sm_120",
        kind="incompatibility",
        cause="With an FP8 KV cache SGLang picks the flashmla_kv decode kernel, "
        "which yields NaN probabilities on sm_120",
        samples=(sample("decode_assert_rtx_host_a.txt"),),
        conditions=(
            Condition("gpu.arch", "sm_120"),
            Condition("flag.kv-cache-dtype", "fp8_e4m3"),
            Condition("framework", "sglang"),
        ),
        fixes=fixes or (BF16_AND_TRTLLM, TRITON_ATTENTION, OMIT_KV_DTYPE),
        sources=(SourceRef(7, "GLM-5 on RTX PRO 6000, day 2"),),
    )


def triton_pool_finding(*fixes: FixRecord) -> FindingRecord:
    return FindingRecord(
        id=2,
        title="Triton attention cannot write the packed FP8 DSA KV pool",
        kind="incompatibility",
        cause="A forced non-DSA attention backend writes through set_kv_buffer into "
        "the FP8 sparse-attention KV pool, which only the DSA path may write",
        samples=(sample("dsa_fp8_pool_assert_a.txt"),),
        conditions=(Condition("flag.kv-cache-dtype", "fp8_e4m3"), Condition("framework", "sglang")),
        fixes=fixes or (UNSET_ATTENTION, BF16_ONLY),
    )


def hopper_sampler_finding() -> FindingRecord:
    # The same decode crash, seen on Hopper with an old flashinfer: another cause.
    return FindingRecord(
        id=3,
        title="Sampler NaN with an old flashinfer on Hopper",
        kind="bug",
        cause="flashinfer before 0.7 mis-scales top-p probabilities on sm_90",
        samples=(sample("decode_assert_rtx_host_a.txt").replace("2710", "2655"),),
        conditions=(Condition("gpu.arch", "sm_90"),),
        fixes=(UPGRADE_FLASHINFER,),
    )


def graph_oom_finding() -> FindingRecord:
    return FindingRecord(
        id=4,
        title="CUDA graph capture runs out of memory",
        kind="oom",
        cause="mem-fraction-static leaves too little room for graph buffers",
        samples=(sample("graph_capture_oom.txt"),),
        conditions=(),
        fixes=(LOWER_MEM_FRACTION,),
    )


def knowledge(*findings: FindingRecord) -> KnowledgeGraph:
    return build_graph(
        findings
        or (
            fp8_decode_finding(),
            triton_pool_finding(),
            hopper_sampler_finding(),
            graph_oom_finding(),
        )
    )


def rtx_context(launch: str = SGLANG_CMD, version: str | None = None) -> Context:
    return build_context(
        launch_command=launch,
        gpu="NVIDIA RTX PRO 6000 Blackwell Server Edition",
        framework="sglang",
        framework_version=version,
    )


def fix_ids(diagnosis_fixes: object) -> list[int]:
    return [ranked.fix.id for ranked in diagnosis_fixes]  # type: ignore[attr-defined]


# --- the incidents ----------------------------------------------------------------


def test_it_puts_bf16_kv_with_trtllm_decode_first_for_the_sm120_decode_crash() -> None:
    result = diagnose(sample("decode_assert_rtx_host_b.txt"), rtx_context(), knowledge())

    assert result.match == "known"
    first = result.fixes[0]
    assert first.fix.id == BF16_AND_TRTLLM.id
    assert "--kv-cache-dtype bf16" in first.command_changes
    assert "--dsa-decode-backend trtllm" in first.command_changes


def test_it_lists_the_triton_attention_backend_as_known_not_to_help() -> None:
    result = diagnose(sample("decode_assert_rtx_host_b.txt"), rtx_context(), knowledge())

    useless = {entry.fix.id: entry for entry in result.not_helpful}
    assert TRITON_ATTENTION.id in useless
    assert useless[TRITON_ATTENTION.id].command_changes == ("--attention-backend triton",)
    assert TRITON_ATTENTION.id not in fix_ids(result.fixes)


def test_it_spells_flags_as_the_users_release_does() -> None:
    result = diagnose(
        sample("decode_assert_rtx_host_b.txt"), rtx_context(version="0.5.9"), knowledge()
    )

    assert "--nsa-decode-backend trtllm" in result.fixes[0].command_changes


def test_it_explains_each_fix_with_the_path_that_led_to_it() -> None:
    result = diagnose(sample("decode_assert_rtx_host_b.txt"), rtx_context(), knowledge())

    why = result.fixes[0].why
    assert [step.step for step in why][:2] == ["signature", "cause"]
    states = {step.key: step.state for step in why if step.step == "condition"}
    assert states == {"gpu.arch": "met", "flag.kv-cache-dtype": "met", "framework": "met"}
    assert why[-1].step == "fix"


def test_each_condition_of_the_fix_reads_as_a_sentence_with_what_this_setup_has() -> None:
    result = diagnose(sample("decode_assert_rtx_host_b.txt"), rtx_context(), knowledge())

    details = {step.key: step.detail for step in result.fixes[0].why if step.step == "condition"}
    assert details["flag.kv-cache-dtype"] == (
        "applies when --kv-cache-dtype is fp8_e4m3; here fp8_e4m3 (met)"
    )
    assert details["gpu.arch"] == "applies when GPU architecture is sm_120; here sm_120 (met)"


def test_it_matches_the_fp8_pool_assert_from_another_install_as_known() -> None:
    result = diagnose(sample("dsa_fp8_pool_assert_b.txt"), Context(), knowledge())

    assert result.match == "known"
    assert result.fixes[0].finding.id == 2


def test_it_matches_a_one_line_paste_when_its_words_are_specific() -> None:
    result = diagnose(
        "AssertionError: assert not self.nsa_kv_cache_store_fp8", Context(), knowledge()
    )

    assert result.match == "known"
    assert result.fixes[0].finding.id == 2


def test_a_match_on_words_alone_is_known_only_when_the_setup_says_so() -> None:
    """A generic message (any NaN logits trip torch's sampler check) matches a finding's
    words; whether it is that finding's issue, only the finding's setup can tell."""
    paste = "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0"

    bare = diagnose(paste, Context(), knowledge())
    given = diagnose(paste, rtx_context(), knowledge())

    assert bare.match == "similar" and bare.setup_not_known
    assert bare.verdict_label.startswith("Similar to a known issue (its setup, not known here: ")
    assert given.match == "known" and given.setup_not_known == ()


def test_it_answers_none_and_offers_no_fix_for_an_unrelated_traceback() -> None:
    for name in ("unrelated_port_in_use.txt", "unrelated_tokenizer.txt"):
        result = diagnose(sample(name), rtx_context(), knowledge())

        assert result.match == "none", name
        assert result.fixes == ()
        assert result.not_helpful == ()


def test_it_is_not_confident_about_a_generic_cuda_error() -> None:
    result = diagnose(
        "RuntimeError: CUDA error: device-side assert triggered", Context(), knowledge()
    )

    assert result.match != "known"


def test_it_rejects_empty_input_for_the_caller_to_show() -> None:
    with pytest.raises(InputRejected):
        diagnose("   \n", Context(), knowledge())


# --- context changes the answer -----------------------------------------------------


def test_it_asks_for_the_gpu_when_the_arch_would_change_the_first_fix() -> None:
    unknown_gpu = build_context(launch_command=SGLANG_CMD, framework="sglang")

    result = diagnose(sample("decode_assert_rtx_host_b.txt"), unknown_gpu, knowledge())

    question = next(q for q in result.questions if q.key == "gpu.arch")
    assert question.text.startswith("Which GPU?")
    assert {"sm_120", "sm_90"} <= set(question.answers)


def test_it_does_not_ask_about_the_gpu_once_it_is_known() -> None:
    result = diagnose(sample("decode_assert_rtx_host_b.txt"), rtx_context(), knowledge())

    assert "gpu.arch" not in [q.key for q in result.questions]


def test_it_prefers_the_hopper_cause_on_an_h100() -> None:
    h100 = build_context(launch_command=SGLANG_CMD, gpu="H100", framework="sglang")

    result = diagnose(sample("decode_assert_rtx_host_b.txt"), h100, knowledge())

    assert result.fixes[0].fix.id == UPGRADE_FLASHINFER.id


def test_it_does_not_offer_first_a_fix_already_in_the_launch_command() -> None:
    trtllm_only = FixRecord(
        15,
        "Force the trtllm sparse-attention decode kernel",
        (set_flag("dsa-decode-backend", "trtllm"),),
        Outcome.RESOLVES,
        Evidence(validated_passed=(("sm_120", 3),)),
    )
    graph = knowledge(fp8_decode_finding(trtllm_only, BF16_AND_TRTLLM))
    # The old spelling in a 0.5.9 command is the same flag.
    launched = rtx_context(SGLANG_CMD + " --nsa-decode-backend trtllm", version="0.5.9")

    result = diagnose(sample("decode_assert_rtx_host_b.txt"), launched, graph)

    assert result.fixes[0].fix.id == BF16_AND_TRTLLM.id
    assert result.fixes[-1].fix.id == trtllm_only.id
    assert result.fixes[-1].already_applied


def test_it_reads_the_kv_dtype_the_server_chose_from_the_log() -> None:
    # No --kv-cache-dtype on the command line: the DSA model picked FP8 by itself.
    paste = (
        "[2026-02-19 00:05:01] Set NSA backends for fp8_e4m3 KV Cache: "
        "prefill=flashmla_auto, decode=flashmla_kv.\n" + sample("decode_assert_rtx_host_b.txt")
    )
    launch = "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp-size 8"

    result = diagnose(paste, rtx_context(launch), knowledge())

    states = {s.key: s.state for s in result.fixes[0].why if s.step == "condition"}
    assert states["flag.kv-cache-dtype"] == "met"


def test_it_ranks_fixes_validated_on_the_same_arch_higher() -> None:
    validated = dataclasses.replace(BF16_ONLY, evidence=Evidence(validated_passed=(("sm_120", 2),)))
    plain = diagnose(
        sample("dsa_fp8_pool_assert_b.txt"),
        rtx_context(),
        knowledge(triton_pool_finding(UNSET_ATTENTION, BF16_ONLY)),
    )
    proven = diagnose(
        sample("dsa_fp8_pool_assert_b.txt"),
        rtx_context(),
        knowledge(triton_pool_finding(UNSET_ATTENTION, validated)),
    )

    assert fix_ids(plain.fixes) == [UNSET_ATTENTION.id, BF16_ONLY.id]
    assert fix_ids(proven.fixes) == [BF16_ONLY.id, UNSET_ATTENTION.id]


def test_it_lets_user_feedback_reorder_equally_reported_fixes() -> None:
    liked = dataclasses.replace(BF16_ONLY, evidence=Evidence(feedback_helped=3))
    result = diagnose(
        sample("dsa_fp8_pool_assert_b.txt"),
        rtx_context(),
        knowledge(triton_pool_finding(UNSET_ATTENTION, liked)),
    )

    assert fix_ids(result.fixes) == [BF16_ONLY.id, UNSET_ATTENTION.id]


def test_it_moves_a_fix_that_failed_validation_on_this_arch_to_not_helpful() -> None:
    failed = dataclasses.replace(BF16_ONLY, evidence=Evidence(validated_failed=(("sm_120", 2),)))
    result = diagnose(
        sample("dsa_fp8_pool_assert_b.txt"),
        rtx_context(),
        knowledge(triton_pool_finding(UNSET_ATTENTION, failed)),
    )

    assert fix_ids(result.fixes) == [UNSET_ATTENTION.id]
    assert [entry.fix.id for entry in result.not_helpful] == [BF16_ONLY.id]


# --- output -----------------------------------------------------------------------------


def test_it_says_where_each_fact_about_the_fix_came_from() -> None:
    result = diagnose(sample("decode_assert_rtx_host_b.txt"), rtx_context(), knowledge())

    first = result.fixes[0]
    assert (first.rank, first.fix.id) == (1, BF16_AND_TRTLLM.id)
    assert first.finding.sources == (SourceRef(7, "GLM-5 on RTX PRO 6000, day 2"),)
    arch = next(step for step in first.why if step.key == "gpu.arch")
    assert (arch.step, arch.value, arch.state) == ("condition", "sm_120", "met")
    assert result.not_helpful[0].reason
    assert result.context.flags["kv-cache-dtype"] == "fp8_e4m3"


def test_it_is_deterministic() -> None:
    text = sample("decode_assert_rtx_host_b.txt")
    first = diagnose(text, rtx_context(), knowledge())

    assert diagnose(text, rtx_context(), knowledge()) == first


def test_it_never_imports_django() -> None:
    code = "import sys, decisiontree.diagnose; print('django' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert out.stdout.strip() == "False"
