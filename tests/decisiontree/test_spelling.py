"""One flag spelling per answer: the one the user's framework release reads.

SGLang renamed `--nsa-*-backend` to `--dsa-*-backend` after 0.5.9. A finding
written with the old names must not give a 0.5.9 user a `--dsa-*` chip, nor a
0.5.23 user a heading that says `--nsa-*`.
"""

from __future__ import annotations

from pathlib import Path

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, Condition, FindingRecord, FixRecord, Outcome
from decisiontree.spelling import respell

FIXTURES = Path(__file__).parent / "fixtures" / "diagnose"
POOL_ASSERT = (FIXTURES / "dsa_fp8_pool_assert_a.txt").read_text()
POOL_ASSERT_ELSEWHERE = (FIXTURES / "dsa_fp8_pool_assert_b.txt").read_text()

TRTLLM = FixRecord(
    7,
    "Set --nsa-decode-backend trtllm and --nsa-prefill-backend trtllm",
    (
        Change(ChangeAction.SET_FLAG, "nsa-decode-backend", "trtllm"),
        Change(ChangeAction.SET_FLAG, "nsa-prefill-backend", "trtllm"),
    ),
    Outcome.RESOLVES,
)
POOL = FindingRecord(
    id=1,
    title="Triton attention writes the FP8 DSA pool",
    kind="crash",
    cause="the triton backend writes the packed FP8 sparse-attention pool it cannot handle; "
    "--nsa-decode-backend picks a kernel that can",
    samples=(POOL_ASSERT,),
    conditions=(
        Condition("framework", "sglang"),
        Condition("flag.nsa-decode-backend", "trtllm", negate=True),
    ),
    fixes=(TRTLLM,),
)


def answer_text(version: str | None) -> str:
    context = build_context(framework="sglang", framework_version=version)
    result = diagnose(POOL_ASSERT_ELSEWHERE, context, build_graph([POOL]))
    first = result.fixes[0]
    details = " ".join(step.detail for step in first.why)
    path = " ".join(step.label for step in first.path)
    return " ".join((first.summary, *first.command_changes, details, path))


def test_a_059_user_reads_the_old_spelling_everywhere() -> None:
    text = answer_text("0.5.9")

    assert "--nsa-decode-backend" in text
    assert "dsa-" not in text


def test_a_newer_user_reads_the_new_spelling_everywhere() -> None:
    text = answer_text("0.5.23")

    assert "--dsa-decode-backend trtllm" in text
    assert "nsa-" not in text


def test_without_a_release_the_answer_uses_the_new_name_and_says_the_old_one() -> None:
    context = build_context(framework="sglang")
    result = diagnose(POOL_ASSERT_ELSEWHERE, context, build_graph([POOL]))

    first = result.fixes[0]
    assert first.summary == "Set --dsa-decode-backend trtllm and --dsa-prefill-backend trtllm"
    assert first.command_changes == ("--dsa-decode-backend trtllm", "--dsa-prefill-backend trtllm")
    assert first.spellings == (
        "--dsa-decode-backend is --nsa-decode-backend in sglang 0.5.9 and older",
        "--dsa-prefill-backend is --nsa-prefill-backend in sglang 0.5.9 and older",
    )


def test_the_users_own_flags_are_shown_in_their_spelling() -> None:
    launch = "python -m sglang.launch_server --model-path x/y --nsa-decode-backend flashmla_kv"
    context = build_context(launch_command=launch, framework_version="0.5.9")

    result = diagnose(POOL_ASSERT_ELSEWHERE, context, build_graph([POOL]))

    assert ("--nsa-decode-backend", "flashmla_kv") in result.launch_flags


def test_respell_leaves_words_that_are_no_flags_alone() -> None:
    text = "Pass --nsa-decode-backend, not --no-such-flag; see /opt/x--y."

    spelled = respell(text, "sglang", None)

    assert spelled == "Pass --dsa-decode-backend, not --no-such-flag; see /opt/x--y."


def test_a_summary_that_turns_a_switch_off_still_turns_it_off() -> None:
    # Respelt by the flag it negates, "--no-enable-prefix-caching" would read as its opposite.
    summary = "Start with --no-enable-prefix-caching and --disable-flashinfer-autotune."

    assert respell(summary, "vllm", "0.11.0") == summary
    assert respell(summary, "vllm", None) == summary


def test_a_flag_of_the_other_framework_is_not_respelt_as_this_ones() -> None:
    # "--tp" is no vLLM spelling; SGLang would read it as its --tp-size.
    text = "SGLang's --tp 2 is what vLLM calls -tp 2."

    assert respell(text, "vllm", "0.11.0") == text
