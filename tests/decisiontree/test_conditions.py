"""A condition means the same wherever a person typed it."""

from __future__ import annotations

import pytest

from decisiontree.conditions import (
    MAX_VALUE_CHARS,
    ConditionError,
    as_dict,
    as_line,
    canonical,
    canonical_key,
    checked,
    condition,
    framework_of,
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
    assert canonical(kept) == Condition("colour", "blue")
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


# --- found by `make mutation`: each test below failed on a mutant that survived -------


def test_a_flag_key_is_read_in_the_framework_s_own_table() -> None:
    """SGLang calls vLLM's --tensor-parallel-size --tp-size: a condition written on an
    SGLang finding must name the flag the SGLang launch command carries."""
    expected = Condition("flag.tp-size", "8")
    assert condition("flag.tensor-parallel-size", "8", framework="sglang") == expected
    assert parse_line("flag.tensor-parallel-size = 8", framework="sglang") == expected
    stored = checked([{"key": "flag.tensor-parallel-size", "value": "8"}], framework="sglang")
    assert stored == [{"key": "flag.tp-size", "value": "8", "negate": False}]
    assert condition("flag.tensor-parallel-size", "8", framework="vllm").key == (
        "flag.tensor-parallel-size"
    )


def test_a_condition_is_not_negated_unless_written_so() -> None:
    assert condition("arch", "sm_120") == Condition("gpu.arch", "sm_120", negate=False)


def test_a_package_name_with_dots_is_a_package() -> None:
    assert canonical_key("version.ruamel.yaml") == "version.ruamel.yaml"


def test_quotes_around_a_value_go_and_its_letters_stay() -> None:
    assert condition("model.name", "`XVERSE-13B`").value == "XVERSE-13B"


def test_a_value_may_be_as_long_as_the_limit() -> None:
    assert len(condition("model.name", "m" * MAX_VALUE_CHARS).value) == MAX_VALUE_CHARS
    with pytest.raises(ConditionError, match=f"over {MAX_VALUE_CHARS} characters"):
        condition("model.name", "m" * (MAX_VALUE_CHARS + 1))


def test_an_unknown_key_is_answered_with_the_keys_there_are() -> None:
    with pytest.raises(ConditionError) as refused:
        canonical_key("colour")
    assert "the keys are gpu.arch, gpu.capability, gpu.name, gpu.count, framework," in str(
        refused.value
    )
    assert str(refused.value).endswith("flag.<name>, version.<name>, env.<name>.")


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"key": "arch"}, 'conditions are a list of {"key": …, "value": …} objects.'),
        ([{"key": "arch"}], 'each condition needs string fields "key" and "value".'),
        ([{"key": "arch", "value": "sm_90", "negate": "no"}], '"negate" is true or false.'),
    ],
)
def test_a_malformed_condition_list_says_what_is_wrong(bad: object, message: str) -> None:
    with pytest.raises(ConditionError) as refused:
        checked(bad)
    assert str(refused.value) == message


def test_a_condition_reads_back_as_the_line_a_reviewer_writes() -> None:
    assert as_line({"key": "gpu.arch", "value": "sm_120", "negate": True}) == "gpu.arch != sm_120"
    assert as_line({"key": "framework", "value": "sglang"}) == "framework = sglang"
    assert as_line(Condition("gpu.arch", "sm_90")) == Condition("gpu.arch", "sm_90").describe()


def test_the_framework_of_a_finding_is_the_one_its_conditions_require() -> None:
    assert framework_of([Condition("gpu.arch", "sm_90"), Condition("framework", "SGLang")]) == (
        "sglang"
    )
    assert framework_of([Condition("framework", "vllm", negate=True)]) is None


def test_a_condition_in_words_reads_every_kind_of_key() -> None:
    assert in_words(parse_line("version.ruamel.yaml = >=0.18")) == "ruamel.yaml release >=0.18"
    # A flag's number is a value, not a release range.
    assert in_words(parse_line("flag.mem-fraction-static = 0.85")) == (
        "--mem-fraction-static is 0.85"
    )
    assert in_words({"key": "colour", "value": "blue"}) == "colour is blue"  # a dropped key
