"""Every spelling of a launch flag reads as one canonical name, in every reader."""

from __future__ import annotations

import pytest

from decisiontree.flags import (
    canonical_flag,
    flags_in_text,
    known_flag,
    lookup,
    python_value,
    spell,
)


@pytest.mark.parametrize(
    ("written", "framework", "canonical"),
    [
        ("--nsa-decode-backend", None, "dsa-decode-backend"),  # renamed in 0.5.10
        ("nsa_decode_backend", "sglang", "dsa-decode-backend"),
        ("--tp", None, "tp-size"),  # argparse takes a unique prefix
        ("-tp", None, "tensor-parallel-size"),  # vLLM's short form
        ("-tp", "vllm", "tensor-parallel-size"),
        ("--mem_fraction_static=0.8", None, "mem-fraction-static"),
        (" mem-fraction-static 0.8", None, "mem-fraction-static"),
        ("--no-enforce-eager", "vllm", "enforce-eager"),
    ],
)
def test_it_reads_any_spelling_as_the_canonical_name(
    written: str, framework: str | None, canonical: str
) -> None:
    assert canonical_flag(written, framework) == canonical


def test_an_unknown_flag_keeps_its_name_tidied() -> None:
    assert canonical_flag("--My_Own_Flag=3") == "my-own-flag"
    assert known_flag("--my-own-flag") is None
    assert canonical_flag("--") == ""


def test_a_negated_spelling_says_so() -> None:
    hit = lookup("--no-enforce-eager", "vllm")
    assert hit is not None and hit.negated and hit.spec.name == "enforce-eager"


def test_it_spells_a_renamed_flag_as_the_release_did() -> None:
    assert spell("dsa-decode-backend", "sglang", "0.5.9") == "--nsa-decode-backend"
    assert spell("dsa-decode-backend", "sglang", "v0.5.4") == "--nsa-decode-backend"
    assert spell("nsa-decode-backend", "sglang", "0.5.10") == "--dsa-decode-backend"
    assert spell("dsa-decode-backend", "sglang", "main") == "--dsa-decode-backend"


def test_it_finds_flags_in_prose_under_their_canonical_name() -> None:
    found = flags_in_text("We had --nsa-decode-backend flashmla_kv and -tp 8 set.", "sglang")
    assert ("dsa-decode-backend", "flashmla_kv") in found


# --- found by `make mutation` (sampled flags.py mutants that survived) ----------------


@pytest.mark.parametrize(
    ("sentence", "read"),
    [
        ("We lowered --mem-fraction-static from 0.9 to 0.8.", ("mem-fraction-static", "0.8")),
        ("Set --mem-fraction-static = 0.8 and it started.", ("mem-fraction-static", "0.8")),
        ("With a --mem-fraction-static of 0.8 it started.", ("mem-fraction-static", "0.8")),
        ("Run --attention-backend as triton instead.", ("attention-backend", "triton")),
    ],
)
def test_it_reads_the_value_a_sentence_gives_a_flag(sentence: str, read: tuple[str, str]) -> None:
    assert flags_in_text(sentence, "sglang") == [read]


def test_a_switch_mentioned_in_a_sentence_is_on_and_takes_no_word_as_its_value() -> None:
    assert flags_in_text("We added --enable-torch-compile and it crashed.", "sglang") == [
        ("enable-torch-compile", None)
    ]
    assert flags_in_text("We added --no-enable-torch-compile.", "sglang") == [
        ("enable-torch-compile", "false")
    ]


def test_a_switchs_opposite_spelling_turns_it_off() -> None:
    # vLLM's --enable-custom-all-reduce is the opposite of --disable-custom-all-reduce.
    assert flags_in_text("We passed --enable-custom-all-reduce.", "vllm") == [
        ("disable-custom-all-reduce", "false")
    ]


def test_a_length_written_in_thousands_is_a_number() -> None:
    assert flags_in_text("--max-model-len 32K", "vllm") == [("max-model-len", "32K")]


@pytest.mark.parametrize(
    ("printed", "value"),
    [
        ("torch.bfloat16", "bfloat16"),
        ("'auto'", "auto"),
        ("True", "true"),
        ("None", None),
        (" ;", None),
    ],
)
def test_a_value_printed_by_python_reads_as_a_user_would_write_it(
    printed: str, value: str | None
) -> None:
    assert python_value(printed) == value
