"""Questions: an unknown fact that splits the reachable fixes is asked; the answer re-ranks.

One NaN decode assert, two causes: on sm_120 the sparse-attention kernel (cure:
a BF16 KV cache), on sm_90 an old flashinfer sampler (cure: upgrade it).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, Condition, FindingRecord, FixRecord, Outcome

FIXTURES = Path(__file__).parent / "fixtures" / "diagnose"
NAN_ASSERT = (FIXTURES / "decode_assert_rtx_host_a.txt").read_text()
NAN_ASSERT_ELSEWHERE = (FIXTURES / "decode_assert_rtx_host_b.txt").read_text()

BF16 = FixRecord(
    1, "Store the KV cache in BF16", (Change(ChangeAction.SET_FLAG, "kv-cache-dtype", "bf16"),),
    Outcome.RESOLVES,
)  # fmt: skip
UPGRADE = FixRecord(
    2, "Upgrade flashinfer", (Change(ChangeAction.PIN_VERSION, "flashinfer-python", "0.7.2"),),
    Outcome.RESOLVES,
)  # fmt: skip


def finding(finding_id: int, arch: str, fix: FixRecord, cause: str) -> FindingRecord:
    return FindingRecord(
        id=finding_id,
        title=f"NaN decode on {arch}",
        kind="crash",
        cause=cause,
        samples=(NAN_ASSERT,),
        conditions=(Condition("gpu.arch", arch), Condition("framework", "sglang")),
        fixes=(fix,),
    )


GRAPH = build_graph(
    [
        finding(10, "sm_120", BF16, "the sparse decode kernel yields NaN on this architecture"),
        finding(20, "sm_90", UPGRADE, "an old flashinfer sampler mis-scales top-p probabilities"),
    ]
)


def first_fixes(**answers: str) -> list[int]:
    context = build_context(framework="sglang")
    for key, value in answers.items():
        context = context.with_answer(key.replace("_", "."), value)
    return [f.fix.id for f in diagnose(NAN_ASSERT_ELSEWHERE, context, GRAPH).fixes]


def test_an_unknown_gpu_that_splits_the_fixes_is_the_one_question() -> None:
    result = diagnose(NAN_ASSERT_ELSEWHERE, build_context(framework="sglang"), GRAPH)

    assert [q.key for q in result.questions] == ["gpu.arch"]
    question = result.questions[0]
    assert question.answers == ("sm_120", "sm_90", "other")
    assert dict(question.first_fix_by_answer)["sm_90"] == "Upgrade flashinfer"


def test_answering_the_question_changes_the_order() -> None:
    assert first_fixes(gpu_arch="sm_90") == [UPGRADE.id, BF16.id]
    assert first_fixes(gpu_arch="sm_120") == [BF16.id, UPGRADE.id]


def test_a_known_gpu_asks_nothing() -> None:
    context = build_context(gpu="H100", framework="sglang")

    result = diagnose(NAN_ASSERT_ELSEWHERE, context, GRAPH)

    assert result.questions == ()
    assert result.fixes[0].fix.id == UPGRADE.id


def test_a_fact_that_moves_nothing_is_not_asked() -> None:
    # Both causes need an FP8 KV cache: whatever it is, they rise and fall together,
    # and a flag is no part of the setup the verdict speaks of.
    fp8 = Condition("flag.kv-cache-dtype", "fp8_e4m3")
    both = [
        dataclasses.replace(f, conditions=(*f.conditions, fp8))
        for f in (
            finding(10, "sm_120", BF16, "the sparse decode kernel yields NaN on this architecture"),
            finding(20, "sm_90", UPGRADE, "an old flashinfer sampler mis-scales probabilities"),
        )
    ]
    context = build_context(framework="sglang", gpu="H100")

    result = diagnose(NAN_ASSERT_ELSEWHERE, context, build_graph(both))

    assert result.questions == ()


# --- one matched finding: what decides whether its fix applies is asked too -----------

DSA_FIX = FixRecord(
    3,
    "Use a BF16 KV cache and the trtllm sparse kernels",
    (
        Change(ChangeAction.SET_FLAG, "kv-cache-dtype", "bf16"),
        Change(ChangeAction.SET_FLAG, "dsa-decode-backend", "trtllm"),
    ),
    Outcome.RESOLVES,
)
ONE_FINDING = build_graph(
    [
        FindingRecord(
            id=30,
            title="NaN decode of a DSA model on sm_120",
            kind="crash",
            cause="the sparse decode kernel yields NaN for DSA models on this architecture",
            samples=(NAN_ASSERT,),
            conditions=(
                Condition("gpu.arch", "sm_120"),
                Condition("model.arch", "glm_moe_dsa"),
                Condition("framework", "sglang"),
            ),
            fixes=(DSA_FIX,),
        )
    ]
)


def test_a_model_that_decides_what_goes_into_the_command_is_asked() -> None:
    result = diagnose(NAN_ASSERT_ELSEWHERE, build_context(framework="sglang"), ONE_FINDING)

    # The GPU would only turn the verdict, not the fix: not asked.
    assert [q.key for q in result.questions] == ["model.arch"]
    assert result.questions[0].text == (
        "Which model architecture (model_type in its config.json)? On another model the corrected command differs."
    )


def test_answering_that_question_changes_the_command_and_the_verdict() -> None:
    context = build_context(framework="sglang").with_answer("model.name", "meta-llama/Llama-3.1-8B")

    result = diagnose(NAN_ASSERT_ELSEWHERE, context, ONE_FINDING)

    assert result.verdict == "different_setup"
    assert result.fixes[0].command_changes == ("--kv-cache-dtype bf16",)
    assert "model.arch" not in [q.key for q in result.questions]


# --- how a question reads --------------------------------------------------------------


def kernel_finding(finding_id: int, kernel: str, fix: FixRecord, cause: str) -> FindingRecord:
    return FindingRecord(
        id=finding_id,
        title=f"NaN decode with the {kernel} kernel",
        kind="crash",
        cause=cause,
        samples=(NAN_ASSERT,),
        conditions=(Condition("flag.dsa-decode-backend", kernel), Condition("framework", "sglang")),
        fixes=(fix,),
    )


def test_a_flag_question_spells_the_flag_as_the_users_release_does_throughout() -> None:
    to_trtllm = FixRecord(
        5,
        "Switch --dsa-decode-backend to trtllm",
        (Change(ChangeAction.SET_FLAG, "dsa-decode-backend", "trtllm"),),
        Outcome.RESOLVES,
    )
    graph = build_graph(
        [
            kernel_finding(10, "flashmla_kv", to_trtllm, "the flashmla kv kernel reads FP8 badly"),
            kernel_finding(20, "trtllm", UPGRADE, "an old flashinfer sampler mis-scales top-p"),
        ]
    )
    # SGLang 0.5.9 still calls the sparse decode kernel --nsa-decode-backend.
    context = build_context(framework="sglang", framework_version="0.5.9", gpu="H100")

    result = diagnose(NAN_ASSERT_ELSEWHERE, context, graph)

    [question] = result.questions
    assert question.text == (
        "What is --nsa-decode-backend set to (in the launch command or the server_args log "
        "line)? On --nsa-decode-backend=flashmla_kv the first fix differs."
    )
    by_answer = dict(question.first_fix_by_answer)
    # "other" contradicts both findings; which of two equal samples leads then is a tie.
    assert set(by_answer) == {"flashmla_kv", "trtllm", "other"}
    assert by_answer["flashmla_kv"] == "Switch --nsa-decode-backend to trtllm"
    assert by_answer["trtllm"] == "Upgrade flashinfer"


def test_equally_decisive_questions_ask_the_gpu_before_the_framework() -> None:
    on_blackwell = FindingRecord(
        id=10,
        title="NaN decode on sm_120",
        kind="crash",
        cause="the sparse decode kernel yields NaN on this architecture",
        samples=(NAN_ASSERT,),
        conditions=(Condition("gpu.arch", "sm_120"),),
        fixes=(BF16,),
    )
    under_vllm = FindingRecord(
        id=20,
        title="NaN decode under vLLM",
        kind="crash",
        cause="an old flashinfer sampler mis-scales top-p probabilities",
        samples=(NAN_ASSERT,),
        conditions=(Condition("framework", "vllm"),),
        fixes=(UPGRADE,),
    )

    result = diagnose(
        NAN_ASSERT_ELSEWHERE, build_context(), build_graph([on_blackwell, under_vllm])
    )

    # Both findings hold the same sample: which one leads before an answer is a tie, so
    # the answer each question names ("On sm_120" or "On another GPU") is not asserted.
    assert [q.key for q in result.questions] == ["gpu.arch", "framework"]
    gpu, framework = (q.text for q in result.questions)
    assert gpu.startswith("Which GPU? On ") and gpu.endswith(" the first fix differs.")
    assert framework.startswith("Which serving framework? On ")


# --- a condition on the compute capability is asked as one -----------------------------

HALF = FixRecord(
    4, "Serve in float16", (Change(ChangeAction.SET_FLAG, "dtype", "float16"),), Outcome.RESOLVES
)


def capability_finding(finding_id: int, wanted: str, fix: FixRecord) -> FindingRecord:
    return dataclasses.replace(
        finding(finding_id, "sm_120", fix, f"the kernel needs compute capability {wanted}"),
        conditions=(Condition("gpu.capability", wanted), Condition("framework", "sglang")),
    )


CAPABILITY_SPLIT = build_graph(
    [
        capability_finding(40, "<8.0", HALF),
        capability_finding(50, ">=8.0", UPGRADE),
    ]
)


def test_a_compute_capability_that_splits_the_fixes_is_asked_with_ranges_that_cover_every_gpu() -> (
    None
):
    result = diagnose(NAN_ASSERT_ELSEWHERE, build_context(framework="sglang"), CAPABILITY_SPLIT)

    (question,) = result.questions
    assert question.key == "gpu.capability"
    assert question.answers == ("<8.0", ">=8.0")  # a T4 and a V100; every later GPU
    assert question.text.startswith("Which compute capability has the GPU")
    assert dict(question.first_fix_by_answer) == {
        "<8.0": "Serve in float16",
        ">=8.0": "Upgrade flashinfer",
    }


def test_answering_the_compute_capability_reranks_as_a_named_gpu_would() -> None:
    def first(context) -> int:
        return diagnose(NAN_ASSERT_ELSEWHERE, context, CAPABILITY_SPLIT).fixes[0].fix.id

    unknown = build_context(framework="sglang")
    assert first(unknown.with_answer("gpu.capability", "<8.0")) == HALF.id
    assert first(unknown.with_answer("gpu.capability", ">=8.0")) == UPGRADE.id
    assert first(unknown.with_answer("gpu.capability", "7.5")) == HALF.id  # as nvidia-smi says
    assert first(build_context(framework="sglang", gpu="Tesla T4")) == HALF.id
    answered = diagnose(
        NAN_ASSERT_ELSEWHERE, unknown.with_answer("gpu.capability", ">=8.0"), CAPABILITY_SPLIT
    )
    assert answered.questions == ()
