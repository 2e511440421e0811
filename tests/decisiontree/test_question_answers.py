"""How a question names the answer that changes things, and what each answer would do.

The paste is the NaN decode assert of tests/decisiontree/test_questions.py; the
findings here differ in the facts they were seen under.
"""

from __future__ import annotations

import dataclasses

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import (
    Change,
    ChangeAction,
    Condition,
    Evidence,
    FindingRecord,
    FixRecord,
    Outcome,
)
from tests.decisiontree.test_questions import (
    BF16,
    DSA_FIX,
    NAN_ASSERT,
    NAN_ASSERT_ELSEWHERE,
    UPGRADE,
)


def finding(finding_id: int, conditions: tuple[Condition, ...], fix: FixRecord) -> FindingRecord:
    return FindingRecord(
        id=finding_id,
        title=f"NaN in decode sampling ({finding_id})",
        kind="crash",
        cause=f"cause number {finding_id}",
        samples=(NAN_ASSERT,),
        conditions=conditions,
        fixes=(fix,),
    )


SGLANG = Condition("framework", "sglang")
# Seen with one setting only; the other finding holds whatever it is.
ANY_SETTING = finding(20, (SGLANG,), UPGRADE)


def only_question(*findings: FindingRecord) -> tuple[str, dict[str, str]]:
    result = diagnose(
        NAN_ASSERT_ELSEWHERE, build_context(framework="sglang"), build_graph(findings)
    )
    [question] = result.questions
    return question.text, dict(question.first_fix_by_answer)


def test_a_flag_whose_other_values_change_the_first_fix_is_asked_about_as_another_value() -> None:
    flashinfer = finding(10, (Condition("flag.attention-backend", "flashinfer"), SGLANG), BF16)

    text, by_answer = only_question(flashinfer, ANY_SETTING)

    assert text == (
        "What is --attention-backend set to (in the launch command or the server_args log "
        "line)? On another value of --attention-backend the first fix differs."
    )
    assert by_answer == {"flashinfer": BF16.summary, "other": UPGRADE.summary}


def test_a_package_release_question_names_the_package_in_its_other_answer() -> None:
    on_torch_28 = finding(10, (Condition("version.torch", "2.8.0"), SGLANG), BF16)

    text, by_answer = only_question(on_torch_28, ANY_SETTING)

    assert text == "What is version.torch? On another version.torch the first fix differs."
    assert by_answer == {"2.8.0": BF16.summary, "other": UPGRADE.summary}


def test_a_fix_first_only_while_the_gpu_is_unknown_makes_the_gpu_a_question() -> None:
    # Seen on two architectures, so any one GPU contradicts one of them: whatever the
    # user answers, the other finding's fix comes first, though now it is second.
    two_archs = finding(10, (Condition("gpu.arch", "sm_90"), Condition("gpu.arch", "sm_100")), BF16)
    no_conditions = finding(20, (), UPGRADE)
    result = diagnose(
        NAN_ASSERT_ELSEWHERE,
        build_context(framework="sglang"),
        build_graph([two_archs, no_conditions]),
    )

    assert [fix.fix.id for fix in result.fixes] == [BF16.id, UPGRADE.id]
    [question] = result.questions
    # A real architecture is named, not "another GPU", when one changes the answer.
    assert question.text == "Which GPU? On sm_100 the first fix differs."
    assert dict(question.first_fix_by_answer) == {
        "sm_100": UPGRADE.summary,
        "sm_90": UPGRADE.summary,
        "other": UPGRADE.summary,
    }


def test_a_question_that_changes_the_first_fix_comes_before_one_that_changes_the_command() -> None:
    # On sm_90 another finding's fix comes first; on a model that is not DSA the sparse
    # kernel flag of this one's fix is withheld from the command.
    on_blackwell = finding(30, (Condition("gpu.arch", "sm_120"), SGLANG), DSA_FIX)
    on_hopper = finding(
        40, (Condition("gpu.arch", "sm_90"), Condition("model.arch", "glm_moe_dsa")), UPGRADE
    )
    result = diagnose(
        NAN_ASSERT_ELSEWHERE,
        build_context(framework="sglang"),
        build_graph([on_blackwell, on_hopper]),
    )

    assert [q.text for q in result.questions] == [
        "Which GPU? On sm_90 the first fix differs.",
        "Which model architecture (model_type in its config.json)? On another model the corrected command differs.",
    ]


def test_a_stored_condition_on_a_key_since_dropped_stops_no_question() -> None:
    # "cuda.driver" is no condition key today (conditions.canonical keeps such a row as
    # it was stored); no answer can be taken for it, and it sorts before "gpu.arch".
    legacy = Condition("cuda.driver", "550")
    on_blackwell = finding(10, (Condition("gpu.arch", "sm_120"), SGLANG, legacy), BF16)
    on_hopper = finding(20, (Condition("gpu.arch", "sm_90"), SGLANG), UPGRADE)

    text, by_answer = only_question(on_blackwell, on_hopper)

    assert text.startswith("Which GPU?")
    assert set(by_answer) == {"sm_120", "sm_90", "other"}


def test_an_answer_under_which_nothing_is_left_to_try_names_no_fix() -> None:
    # Both fixes that are not in the command yet failed their runs on sm_100, and the
    # third, BF16, is already in it: on sm_100 there is no first fix to name.
    failed_on_sm100 = Evidence(validated_failed=(("sm_100", 2),))
    upgrade = dataclasses.replace(UPGRADE, evidence=failed_on_sm100)
    pytorch_sampling = FixRecord(
        3,
        "Sample with the pytorch backend",
        (Change(ChangeAction.SET_FLAG, "sampling-backend", "pytorch"),),
        Outcome.RESOLVES,
        failed_on_sm100,
    )
    findings = [
        finding(10, (Condition("gpu.arch", "sm_100"), SGLANG), upgrade),
        finding(20, (SGLANG,), BF16),
        finding(30, (Condition("gpu.arch", "sm_90"), SGLANG), pytorch_sampling),
    ]
    context = build_context(
        launch_command="python -m sglang.launch_server --model-path Qwen/Qwen3-8B "
        "--kv-cache-dtype bf16"
    )

    result = diagnose(NAN_ASSERT_ELSEWHERE, context, build_graph(findings))

    [question] = result.questions
    assert question.text == "Which GPU? On sm_90 the first fix differs."
    assert dict(question.first_fix_by_answer) == {
        "sm_100": "none",
        "sm_90": pytorch_sampling.summary,
        "other": UPGRADE.summary,
    }
