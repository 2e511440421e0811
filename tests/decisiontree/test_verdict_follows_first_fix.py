"""The verdict is told about the finding behind the first fix, not the best match alone."""

from __future__ import annotations

from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Condition
from tests.decisiontree.test_walk import (
    KV_AUTO_PROPOSED,
    NAN_ASSERT,
    NAN_ASSERT_ELSEWHERE,
    UNSET_BACKEND,
    finding,
    on_sm120,
)


def test_a_first_fix_from_a_finding_on_another_setup_makes_the_verdict_different_setup() -> None:
    # The finding that fits this setup has only a proposal; the fix with evidence comes
    # from a finding seen on Hopper with vLLM, and the verdict says so.
    fits = finding(10, NAN_ASSERT, (KV_AUTO_PROPOSED,), cause="one cause written in full")
    elsewhere = finding(
        20,
        NAN_ASSERT,
        (UNSET_BACKEND,),
        cause="another cause written in full",
        conditions=(Condition("gpu.arch", "sm_90"), Condition("framework", "vllm")),
    )

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([fits, elsewhere]))

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
