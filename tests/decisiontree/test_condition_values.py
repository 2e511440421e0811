"""A finding's condition and the user's setup compare as values, however each is written:
another name of one dtype, quotes around an answer, a model name in capitals."""

from __future__ import annotations

from decisiontree.context import Context, build_context
from decisiontree.records import Condition
from decisiontree.setup import State, assess
from decisiontree.vocabulary import load

SGLANG = "python -m sglang.launch_server --model-path Qwen/Qwen3-8B"


def test_a_launch_with_bfloat16_meets_a_finding_that_needs_bf16() -> None:
    context = build_context(launch_command=f"{SGLANG} --dtype bfloat16")

    assert assess(Condition("flag.dtype", "bf16"), context, load()) is State.MET
    assert assess(Condition("flag.dtype", "fp16"), context, load()) is State.CONTRADICTED


def test_an_answer_typed_in_quotes_is_the_value_inside_them() -> None:
    context = build_context(launch_command=SGLANG).with_answer("flag.kv-cache-dtype", "'fp8_e4m3'")

    assert assess(Condition("flag.kv-cache-dtype", "fp8_e4m3"), context, load()) is State.MET


def test_a_model_name_written_in_capitals_meets_the_same_name_in_lower_case() -> None:
    # A name that begins with an X, as XVERSE's models do, is still the whole name.
    context = Context(model="xverse-13b")

    assert assess(Condition("model.name", "XVERSE-13B"), context, load()) is State.MET
    assert assess(Condition("model.name", "VERSE-13B"), context, load()) is State.CONTRADICTED
