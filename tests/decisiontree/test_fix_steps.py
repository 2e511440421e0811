"""A fix that changes a flag by a step ("lower --mem-fraction-static by 0.05") is written
into the corrected command from the value the user's launch has."""

from __future__ import annotations

import pytest

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.documents.changes import step_of
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, FixRecord, Outcome
from tests.decisiontree.test_walk import finding

CAPTURE_OOM = (
    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.02 GiB.\n"
)


@pytest.mark.parametrize(
    ("words", "step"),
    [
        ("lower --mem-fraction-static by 0.05 to 0.1", -0.05),
        ("Raise --mem_fraction_static in steps of 0.05, leaving room for graphs", 0.05),
        ("reduce the --mem-fraction-static by 0.1", -0.1),
        ("--mem-fraction-static 0.88", None),  # a value, no step
        ("lower --mem-fraction-static by 10%", None),  # a share of what? not written
        ("set --mem-fraction-static by hand", None),
        ("compare --mem-fraction-static by 0.05 steps", None),  # no direction
    ],
)
def test_the_step_a_fix_gives_a_flag_is_read_from_its_words(words: str, step: float) -> None:
    assert step_of(words, "mem-fraction-static", "sglang") == step


def lower_by_step(launch: str | None) -> tuple[str, ...]:
    fix = FixRecord(
        1,
        "lower --mem-fraction-static by 0.05 to 0.1",
        (Change(ChangeAction.SET_FLAG, "mem-fraction-static", None),),
        Outcome.PROPOSED,
    )
    graph = build_graph([finding(1, CAPTURE_OOM, (fix,), cause="graph buffers do not fit")])
    context = build_context(CAPTURE_OOM, launch_command=launch, framework="sglang")
    answer = diagnose(CAPTURE_OOM, context, graph)
    return answer.fixes[0].command_changes


def test_a_step_from_the_launchs_value_becomes_a_value_to_copy() -> None:
    launch = "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --mem-fraction-static 0.9"

    changes = lower_by_step(launch)

    assert changes == ("--mem-fraction-static 0.85",)


def test_without_a_value_in_the_launch_nothing_is_written() -> None:
    """SGLang picks its own fraction when none is given: a step from it is unknown."""
    assert lower_by_step("python -m sglang.launch_server --model-path Qwen/Qwen3-8B") == ()
    assert lower_by_step(None) == ()
