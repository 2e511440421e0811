"""A setup that meets a finding's conditions puts that finding's fix first."""

from __future__ import annotations

from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Condition
from tests.decisiontree.test_walk import (
    BF16_REPORTED,
    NAN_ASSERT,
    NAN_ASSERT_ELSEWHERE,
    UNSET_BACKEND,
    finding,
    on_sm120,
)


def test_a_finding_whose_conditions_are_met_ranks_above_one_whose_conditions_are_not_known() -> (
    None
):
    # The same error, two causes. The lower id would win a tie.
    model_unknown = finding(
        10,
        NAN_ASSERT,
        (UNSET_BACKEND,),
        cause="one cause of the crash, seen with a GLM-5 checkpoint",
        conditions=(Condition("model.arch", "GlmMoeDsaForCausalLM"),),
    )
    on_this_gpu = finding(
        20,
        NAN_ASSERT,
        (BF16_REPORTED,),
        cause="another cause of the crash, seen on Blackwell workstation cards",
        conditions=(Condition("gpu.arch", "sm_120"),),
    )

    result = diagnose(NAN_ASSERT_ELSEWHERE, on_sm120(), build_graph([model_unknown, on_this_gpu]))

    assert [f.fix.id for f in result.fixes] == [BF16_REPORTED.id, UNSET_BACKEND.id]
