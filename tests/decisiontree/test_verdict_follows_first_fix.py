"""The verdict is told about the finding behind the first fix, not the best match alone."""

from __future__ import annotations

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
