"""The verdict is told about the finding behind the first fix, not the best match alone."""

from __future__ import annotations

from decisiontree.conditions import parse_line
from decisiontree.context import build_context
from decisiontree.diagnose import Diagnosis, diagnose
from decisiontree.graph import KnowledgeGraph, build_graph
from decisiontree.records import FindingRecord, FixRecord, Outcome
from tests.decisiontree.test_walk import (
    KV_AUTO_PROPOSED,
    UNSET_BACKEND,
    proposal_here_and_evidence_elsewhere,
)


def test_a_first_fix_from_a_finding_on_another_setup_makes_the_verdict_different_setup() -> None:
    result = proposal_here_and_evidence_elsewhere()

    assert [f.fix.id for f in result.fixes] == [UNSET_BACKEND.id, KV_AUTO_PROPOSED.id]
    assert result.verdict == "different_setup"
    assert [d.describe() for d in result.different_setup] == [
        "GPU sm_120 here, sm_90 in the finding",
        "framework sglang here, vllm in the finding",
    ]
    # The answer names the error it read and the findings it weighed, best match first.
    assert result.signature is not None
    assert result.signature.exception_type == "AcceleratorError"
    assert [c.finding_id for c in result.candidates] == [10, 20]


def test_a_finding_on_another_quantization_is_a_different_setup() -> None:
    """The message names AWQ on a 7.0 GPU; the finding is about MXFP4 checkpoints."""
    finding = FindingRecord(
        id=1,
        title="MXFP4 checkpoints need compute capability 8.0",
        kind="crash",
        cause="the MXFP4 kernels need Ampere",
        samples=(
            "ValueError: The quantization method mxfp4 is not supported for the current GPU. "
            "Minimum capability: 80. Current capability: 75.",
        ),
        conditions=(parse_line("model.quantization = mxfp4"), parse_line("gpu.capability = <8.0")),
        fixes=(FixRecord(1, "serve a 16-bit conversion in float16", (), Outcome.RESOLVES),),
    )
    graph = build_graph([finding])

    def answered(method: str, current: str) -> Diagnosis:
        paste = (
            f"ValueError: The quantization method {method} is not supported for the current "
            f"GPU. Minimum capability: 80. Current capability: {current}."
        )
        return diagnose(paste, build_context(paste), graph)

    other = answered("awq", "70")
    assert other.verdict == "different_setup"
    assert [d.describe() for d in other.different_setup] == [
        "quantization awq here, mxfp4 in the finding"
    ]
    assert answered("mxfp4", "75").verdict == "known"
    # The stated capability decides the other condition: 8.6 is not below 8.0.
    assert answered("mxfp4", "86").verdict == "different_setup"


BF16_ON_OLD_GPU = (
    "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0."
)
NO_BACKEND = """\
  File "/usr/local/lib/python3.12/dist-packages/vllm/platforms/cuda.py", line 311, in get_attn_backend_cls
    raise ValueError(
ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(dtype=torch.bfloat16, kv_cache_dtype=fp8). Reasons: {FLASHMLA: [compute capability not supported], TRITON_MLA: [kv_cache_dtype not supported]}.
"""


def bf16_beside_no_backend(
    bf16_conditions: tuple[str, ...], bf16_outcome: Outcome
) -> KnowledgeGraph:
    """A finding of the bf16 error, and one that shares words with it (bfloat16, compute
    capability, supported), whose fix resolved it."""
    bf16 = FindingRecord(
        id=1,
        title="bfloat16 needs compute capability 8.0",
        kind="crash",
        cause="GPUs before Ampere have no bf16 units",
        samples=(BF16_ON_OLD_GPU,),
        conditions=tuple(parse_line(line) for line in bf16_conditions),
        fixes=(FixRecord(1, "--dtype half", (), bf16_outcome),),
    )
    no_backend = FindingRecord(
        id=2,
        title="no attention backend takes this dtype and KV cache",
        kind="crash",
        cause="every backend refused the combination of dtype, KV cache dtype and capability",
        samples=(NO_BACKEND,),
        conditions=(parse_line("framework = vllm"),),
        fixes=(FixRecord(2, "--kv-cache-dtype auto", (), Outcome.RESOLVES),),
    )
    return build_graph([bf16, no_backend])


def test_a_finding_matched_on_words_is_not_known_where_the_pastes_own_error_is_another() -> None:
    """The paste's message is a known sample's, seen on GPUs older than the user's: that
    finding's fix drops below the other's, which leads, as no more than similar."""
    graph = bf16_beside_no_backend(("framework = vllm", "gpu.capability = <8.0"), Outcome.RESOLVES)

    result = diagnose(BF16_ON_OLD_GPU, build_context(gpu="RTX 3090", framework="vllm"), graph)

    assert [c.finding_id for c in result.candidates][0] == 1
    assert result.fixes[0].finding.id == 2
    assert result.verdict == "similar"
    # On the GPUs it was seen on, the known finding is the answer.
    on_t4 = diagnose(BF16_ON_OLD_GPU, build_context(gpu="Tesla T4", framework="vllm"), graph)
    assert (on_t4.verdict, on_t4.fixes[0].finding.id) == ("known", 1)


def test_a_finding_that_leads_on_its_evidence_beside_one_of_the_same_error_stays_known() -> None:
    """Nothing in the setup sets the template's finding back: its fix is only proposed, the
    other finding's resolved it. The other leads, and its verdict is its own match's."""
    graph = bf16_beside_no_backend((), Outcome.PROPOSED)

    result = diagnose(BF16_ON_OLD_GPU, build_context(framework="vllm"), graph)

    assert [c.finding_id for c in result.candidates][0] == 1
    assert result.fixes[0].finding.id == 2
    assert result.verdict == "known"
