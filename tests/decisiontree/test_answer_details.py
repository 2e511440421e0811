"""What an answer carries beside its fixes: the drawn path, each condition as the
finding states it, and flags spelled for the user's framework and release.

The paste is the NaN decode assert of tests/decisiontree/test_questions.py. SGLang
0.5.9 and older call the sparse decode kernel flag --nsa-decode-backend, later
releases --dsa-decode-backend; vLLM has no such flag.
"""

from __future__ import annotations

from pathlib import Path

from decisiontree.answer import PathStep
from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, Condition, FindingRecord, FixRecord, Outcome

FIXTURES = Path(__file__).parent / "fixtures" / "diagnose"
NAN_ASSERT = (FIXTURES / "decode_assert_rtx_host_a.txt").read_text()
NAN_ASSERT_ELSEWHERE = (FIXTURES / "decode_assert_rtx_host_b.txt").read_text()

TO_TRTLLM = FixRecord(
    7,
    "Switch --dsa-decode-backend to trtllm",
    (Change(ChangeAction.SET_FLAG, "dsa-decode-backend", "trtllm"),),
    Outcome.RESOLVES,
)
NOT_BF16 = Condition("flag.kv-cache-dtype", "bf16", negate=True)
SPARSE_KERNEL = FindingRecord(
    id=4,
    title="NaN in decode with the flashmla sparse kernel",
    kind="crash",
    cause="the flashmla sparse decode kernel reads an FP8 cache wrongly",
    samples=(NAN_ASSERT,),
    conditions=(Condition("framework", "sglang"), NOT_BF16),
    fixes=(TO_TRTLLM,),
)
GRAPH = build_graph([SPARSE_KERNEL])


def test_the_drawn_path_runs_from_the_pasted_error_through_the_finding_to_the_fix() -> None:
    result = diagnose(NAN_ASSERT_ELSEWHERE, build_context(framework="sglang"), GRAPH)

    assert result.fixes[0].path == (
        PathStep("signature", "the pasted error"),
        PathStep("finding", SPARSE_KERNEL.title, SPARSE_KERNEL.id),
        PathStep("fix", TO_TRTLLM.summary, TO_TRTLLM.id),
    )


def test_a_condition_that_needs_any_value_but_one_is_kept_with_its_negation() -> None:
    result = diagnose(NAN_ASSERT_ELSEWHERE, build_context(framework="sglang"), GRAPH)

    [step] = [s for s in result.fixes[0].why if s.key == "flag.kv-cache-dtype"]
    assert step.value == "!=bf16"


def test_a_release_given_without_its_framework_does_not_spell_the_findings_flags() -> None:
    # 0.5.9 could be any framework's release: the finding's flag is spelled as the
    # newest SGLang spells it, with a note on the older spelling.
    release_only = build_context(framework_version="0.5.9")

    first = diagnose(NAN_ASSERT_ELSEWHERE, release_only, GRAPH).fixes[0]

    assert first.command_changes == ("--dsa-decode-backend trtllm",)
    assert first.spellings == (
        "--dsa-decode-backend is --nsa-decode-backend in sglang 0.5.9 and older",
    )


def test_on_another_framework_a_withheld_flag_is_spelled_for_that_framework_not_the_findings() -> (
    None
):
    # vLLM 0.5.4 is older than SGLang's rename; spelled as SGLang 0.5.4 it would read
    # --nsa-decode-backend, a flag name that never meant anything to vLLM.
    old_vllm = build_context(framework="vllm", framework_version="0.5.4")

    first = diagnose(NAN_ASSERT_ELSEWHERE, old_vllm, GRAPH).fixes[0]

    [withheld] = first.withheld
    assert withheld.command_change == "--dsa-decode-backend trtllm"
    assert withheld.reason == "vllm has no --dsa-decode-backend"
    assert first.summary == TO_TRTLLM.summary
