"""The host flag policy's own data: every entry names a flag the vocabulary knows, says why,
and a free-text entry is a flag that takes free text in some framework."""

from __future__ import annotations

import json

from decisiontree import flags
from decisiontree.host_flags import POLICY_FILE, flag_problem


def entries(kind: str) -> list[dict[str, str]]:
    return json.loads(POLICY_FILE.read_text(encoding="utf-8"))[kind]


def specs_of(name: str) -> list[flags.FlagSpec]:
    return [
        spec
        for framework in ("sglang", "vllm")
        if (spec := flags.flag(name, framework)) is not None and spec.name == name
    ]


def test_every_entry_names_a_known_flag_and_says_why() -> None:
    for entry in entries("refused") + entries("free_text"):
        assert specs_of(entry["name"]), entry["name"]
        assert len(entry["why"]) > 20, entry["name"]


def test_a_free_text_entry_takes_free_text_somewhere() -> None:
    for entry in entries("free_text"):
        assert any(s.type in ("str", "json") and not s.choices for s in specs_of(entry["name"]))


def test_a_number_passes_for_any_free_text_flag_and_a_word_only_for_a_vetted_one() -> None:
    [unvetted] = specs_of("download-dir")[:1]
    assert flag_problem(unvetted, "4096") is None
    assert "not among the flags vetted" in (flag_problem(unvetted, "cache") or "")
    [vetted] = specs_of("served-model-name")[:1]
    assert flag_problem(vetted, "glm-5") is None
