"""The starter knowledge base, its documentation and the labelled write-ups.

`knowledge/FINDINGS.md` ships with the product and is what `make run` loads, so a
malformed entry is a finding nobody can be warned by. The write-ups under
`tests/fixtures/writeups/` are examples for extraction tests; their labels must
describe what is really in the text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from decisiontree.documents._vocab import default_vocabulary
from decisiontree.documents.findings_md import parse_findings_md
from decisiontree.records import Change, ChangeAction, Outcome
from tests.decisiontree.conftest import shared_by_the_module

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = ROOT / "knowledge" / "FINDINGS.md"
FORMAT_DOC = ROOT / "docs" / "findings-format.md"
WRITEUPS = ROOT / "tests" / "fixtures" / "writeups"

# Field names of the format, synonyms included, lower-case.
SPEC_FIELDS = frozenset(
    {
        "hardware",
        "gpu",
        "gpus",
        "model",
        "framework",
        "flags",
        "launch",
        "command",
        "kind",
        "symptom",
        "error",
        "signature",
        "cause",
        "root-cause",
        "when",
        "conditions",
        "applies-when",
        "fix",
        "did-not-help",
        "no-effect",
        "tried",
        "made-it-worse",
        "worse",
        "status",
        "works",
        "throughput",
        "ttft",
        "itl",
        "before",
        "after",
        "source",
        "tags",
    }
)
# Extra fields the starter knowledge base uses on purpose (the format keeps unknown ones).
DELIBERATE_EXTRAS = frozenset({"environment"})
CONDITION = re.compile(
    r"^(gpu\.arch|gpu\.name|model\.arch|model\.name|model\.quantization|framework|"
    r"framework\.version|flag\.[a-z0-9][a-z0-9-]*)\s*(!=|=)\s*\S+$"
)
FIELD = re.compile(r"^- ([A-Za-z][A-Za-z ]*?):\s*(.*)$")
FENCE = re.compile(r"^\s*(```|~~~)")
CANONICAL_FLAG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass
class Entry:
    title: str
    fields: list[tuple[str, str]] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)

    def values(self, name: str) -> list[str]:
        return [value for key, value in self.fields if key == name]

    def value(self, name: str) -> str:
        found = self.values(name)
        return found[0] if found else ""


def read_entries(text: str) -> list[Entry]:
    """A deliberately small reader of the format: `##` entries, fields, fenced blocks."""
    entries: list[Entry] = []
    fenced: list[str] | None = None
    for line in text.splitlines():
        if fenced is not None:
            fenced = _inside_fence(entries, fenced, line)
        elif FENCE.match(line):
            fenced = []
        elif line.startswith("## "):
            entries.append(Entry(line[3:].strip()))
        elif entries:
            _take_field_line(entries[-1], line)
    assert fenced is None, "a fenced block is never closed"
    return entries


def _inside_fence(entries: list[Entry], fenced: list[str], line: str) -> list[str] | None:
    if not FENCE.match(line):
        return [*fenced, line]
    if entries:
        entries[-1].blocks.append("\n".join(fenced))
    return None


def _take_field_line(entry: Entry, line: str) -> None:
    match = FIELD.match(line)
    if match and not entry.blocks:
        name = match.group(1).strip().lower().replace(" ", "-")
        entry.fields.append((name, match.group(2).strip()))
    elif line.startswith("  ") and entry.fields and not entry.blocks:
        name, value = entry.fields[-1]
        entry.fields[-1] = (name, f"{value} {line.strip()}")


@pytest.fixture(scope=shared_by_the_module)
def entries() -> list[Entry]:
    return read_entries(FINDINGS.read_text(encoding="utf-8"))


def entry_with_error(entries: list[Entry], text: str) -> Entry:
    return next(entry for entry in entries if text in entry.value("error"))


# --- the starter knowledge base ------------------------------------------------------


def test_it_uses_only_field_names_of_the_format(entries: list[Entry]) -> None:
    """A misspelt field ("Did not hlp") would silently become an extra and lose its meaning."""
    used = {name for entry in entries for name, _ in entry.fields}
    assert used - SPEC_FIELDS - DELIBERATE_EXTRAS == set()


def test_it_gives_every_problem_a_cause_conditions_a_fix_and_a_status(
    entries: list[Entry],
) -> None:
    problems = [entry for entry in entries if entry.value("kind") != "works"]
    assert len(problems) >= 6
    for entry in problems:
        assert entry.value("cause"), entry.title
        assert entry.values("when"), entry.title
        assert entry.values("fix"), entry.title
        assert entry.value("status") in {"resolved", "workaround", "open"}, entry.title


def test_it_writes_conditions_as_key_operator_value(entries: list[Entry]) -> None:
    for entry in entries:
        for when in entry.values("when"):
            for item in filter(None, (part.strip() for part in re.split(r"[;,]", when))):
                assert CONDITION.match(item), f"{entry.title}: {item!r}"


@pytest.mark.parametrize(
    "pasted",
    [
        "probability tensor contains either inf, nan or element < 0",
        "assert not self.nsa_kv_cache_store_fp8",
        "Set NSA backends for fp8_e4m3 KV Cache: prefill=flashmla_auto, decode=flashmla_kv",
        "static_assert(sizeof(DType) == 2)",
    ],
)
def test_it_ships_the_error_texts_users_paste(entries: list[Entry], pasted: str) -> None:
    samples = [text for entry in entries for text in (*entry.blocks, entry.value("error"))]
    assert any(pasted in sample for sample in samples)


def test_it_warns_that_the_triton_backend_does_not_help_the_decode_crash(
    entries: list[Entry],
) -> None:
    decode_crash = entry_with_error(entries, "probability tensor contains")
    assert any("--attention-backend triton" in text for text in decode_crash.values("did-not-help"))
    assert any("--nsa-decode-backend trtllm" in text for text in decode_crash.values("fix"))


def test_it_says_omitting_the_kv_dtype_is_not_choosing_bf16(entries: list[Entry]) -> None:
    override = entry_with_error(entries, "Set NSA backends for fp8_e4m3")
    assert "remove --kv-cache-dtype" in override.values("did-not-help")
    assert "--kv-cache-dtype bf16" in override.values("fix")


def test_it_reports_the_slow_decode_with_its_measured_cost(entries: list[Entry]) -> None:
    slow = next(entry for entry in entries if entry.value("kind") == "slow")
    assert "64.6 ms" in slow.value("before") and "69 %" in slow.value("before")
    assert any("29 %" in fix and fix.endswith("[partial]") for fix in slow.values("fix"))


def test_it_does_not_depend_on_the_research_share() -> None:
    paths = [FINDINGS, FORMAT_DOC, *sorted(WRITEUPS.iterdir())]
    assert not [path.name for path in paths if "/work/shared" in path.read_text(encoding="utf-8")]


# --- with the real FINDINGS.md parser ------------------------------------------------


def parse_with_product(text: str) -> tuple[Any, ...]:
    result: tuple[Any, ...] = parse_findings_md(text, default_vocabulary())
    return result


def test_it_loads_every_entry_without_reviewer_notes(entries: list[Entry]) -> None:
    _, findings, problems = parse_with_product(FINDINGS.read_text(encoding="utf-8"))
    assert problems == ()
    assert [finding.title for finding in findings] == [entry.title for entry in entries]


def test_it_turns_the_decode_crash_fix_into_canonical_flag_changes() -> None:
    _, findings, _ = parse_with_product(FINDINGS.read_text(encoding="utf-8"))
    crash = next(f for f in findings if f.title.startswith("First decode request kills"))
    by_outcome = {(fix.outcome, change) for fix in crash.fixes for change in fix.changes}
    nsa_trtllm = Change(ChangeAction.SET_FLAG, "dsa-decode-backend", "trtllm")
    triton = Change(ChangeAction.SET_FLAG, "attention-backend", "triton")
    assert (Outcome.RESOLVES, nsa_trtllm) in by_outcome
    assert (Outcome.NO_EFFECT, triton) in by_outcome


def test_it_documents_an_example_that_parses() -> None:
    doc = FORMAT_DOC.read_text(encoding="utf-8")
    example = doc.split("````markdown\n", 1)[1].split("\n````", 1)[0]
    _, findings, problems = parse_with_product(example)
    assert problems == ()
    (finding,) = findings
    assert finding.kind == "crash" and finding.status == "resolved"
    assert [fix.outcome for fix in finding.fixes] == [Outcome.RESOLVES, Outcome.NO_EFFECT]


# --- the labelled write-ups ----------------------------------------------------------

WRITEUP_FILES = sorted(path for path in WRITEUPS.iterdir() if path.suffix in {".md", ".txt"})
LABEL_KEYS = {"gpus", "models", "framework", "framework_version", "flags", "error_types", "fixes"}


def labels_of(writeup: Path) -> dict[str, Any]:
    labels: dict[str, Any] = json.loads(writeup.with_suffix(".expected.json").read_text())
    return labels


def test_it_has_three_to_five_labelled_writeups() -> None:
    assert 3 <= len(WRITEUP_FILES) <= 5
    assert all(path.with_suffix(".expected.json").exists() for path in WRITEUP_FILES)


@pytest.mark.parametrize("writeup", WRITEUP_FILES, ids=lambda path: path.stem)
def test_it_labels_only_what_the_writeup_says(writeup: Path) -> None:
    text, labels = writeup.read_text(encoding="utf-8"), labels_of(writeup)
    assert set(labels) == LABEL_KEYS
    assert all(model in text for model in labels["models"])
    assert all(error in text for error in labels["error_types"])
    assert labels["framework_version"] in text
    assert all(value in text for value in labels["flags"].values() if value != "true")


@pytest.mark.parametrize("writeup", WRITEUP_FILES, ids=lambda path: path.stem)
def test_it_labels_in_the_vocabulary_of_the_records(writeup: Path) -> None:
    labels = labels_of(writeup)
    assert all(CANONICAL_FLAG.match(name) for name in labels["flags"])
    assert all(
        re.fullmatch(r"sm_\d{2,3}", gpu["arch"]) and gpu["count"] > 0 for gpu in labels["gpus"]
    )
    assert {fix["outcome"] for fix in labels["fixes"]} <= {outcome.value for outcome in Outcome}
    assert labels["framework"] in {"sglang", "vllm"}
