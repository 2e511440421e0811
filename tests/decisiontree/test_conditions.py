"""A condition means the same wherever a person typed it."""

from __future__ import annotations

import pytest

from decisiontree.conditions import (
    ConditionError,
    as_dict,
    canonical,
    checked,
    condition,
    in_words,
    parse_line,
)
from decisiontree.records import Condition


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("arch = sm_120", Condition("gpu.arch", "sm_120")),
        ("gpu.arch = SM120", Condition("gpu.arch", "sm_120")),
        ("arch: RTX PRO 6000", Condition("gpu.arch", "sm_120")),
        ("gpu = H200", Condition("gpu.name", "H200")),
        ("Framework = SGLang", Condition("framework", "sglang")),
        ("version = >=0.5.9", Condition("framework.version", ">=0.5.9")),
        (
            "flag.nsa_decode_backend != flashmla_kv",
            Condition("flag.dsa-decode-backend", "flashmla_kv", True),
        ),
        ("flag.--tp = 8", Condition("flag.tp-size", "8")),
        ("version.PyTorch = >=2.8", Condition("version.torch", ">=2.8")),
        ("env.NCCL_P2P_DISABLE = 1", Condition("env.NCCL_P2P_DISABLE", "1")),
        ("gpu.count = 8", Condition("gpu.count", "8")),
    ],
)
def test_it_reads_a_condition_in_the_form_the_diagnosis_reads(
    line: str, expected: Condition
) -> None:
    assert parse_line(line) == expected


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("sm_120", "is not a condition"),
        ("colour = blue", "is not a condition key"),
        ("env.1A = 1", "is not a condition key"),  # not a variable name
        ("arch = ``", "needs a value"),
    ],
)
def test_it_explains_what_it_cannot_read(line: str, says: str) -> None:
    with pytest.raises(ConditionError, match=says):
        parse_line(line)


def test_the_json_form_is_checked_the_same_way() -> None:
    stored = checked(
        [{"key": "arch", "value": "sm120"}, {"key": "flag.tp", "value": "8", "negate": True}]
    )
    assert stored == [
        {"key": "gpu.arch", "value": "sm_120", "negate": False},
        {"key": "flag.tp-size", "value": "8", "negate": True},
    ]
    for bad in (
        [{"key": "arch"}],
        {"key": "arch", "value": "x"},
        [{"key": "a", "value": "b", "negate": "no"}],
    ):
        with pytest.raises(ConditionError):
            checked(bad)


def test_a_stored_condition_in_an_old_spelling_reads_as_today() -> None:
    old = Condition("arch", "sm_120")
    assert canonical(old) == Condition("gpu.arch", "sm_120")
    kept = Condition("colour", "blue")  # nothing reads it; kept as it was, not dropped
    assert canonical(kept) is kept
    assert (
        condition("flag.cuda-graph-bs", "8", framework="sglang").key == "flag.cuda-graph-bs-decode"
    )


@pytest.mark.parametrize(
    "line, words",
    [
        ("flag.kv-cache-dtype != bf16", "--kv-cache-dtype is not bf16"),
        ("arch = sm_120", "GPU architecture is sm_120"),
        ("model.arch = glm_moe_dsa", "model architecture is glm_moe_dsa"),
        ("framework = sglang", "framework is sglang"),
        ("framework.version = >=0.5.9", "framework release >=0.5.9"),
        ("version.torch != <2.9", "torch release not <2.9"),
        ("env.NCCL_P2P_DISABLE = 1", "NCCL_P2P_DISABLE is 1"),
    ],
)
def test_a_condition_reads_in_words_without_its_key_syntax(line: str, words: str) -> None:
    parsed = parse_line(line)
    assert in_words(parsed) == words
    assert in_words(as_dict(parsed)) == words
