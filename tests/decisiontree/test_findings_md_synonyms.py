"""A FINDINGS.md written with the field synonyms docs/findings-format.md offers is read as one.

Whether a document is FINDINGS.md or a free-form write-up decides what a user gets: fields
read as written, or a draft guessed from prose. The names that decide it are the names the
entry reader accepts, all of them, and the format guide lists exactly those.
"""

from __future__ import annotations

import re
from pathlib import Path

from decisiontree.documents import extract_document
from decisiontree.documents.findings_md import FIELD_NAMES
from decisiontree.documents.model import GpuMention
from decisiontree.records import Change, ChangeAction, Outcome

FORMAT_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "findings-format.md"


def test_an_entry_written_only_with_synonyms_is_read_field_by_field():
    document = extract_document(
        "# Bring-up log\n"
        "\n"
        "## Server aborts while loading the checkpoint on the new cards\n"
        "- GPU: 2x H200\n"
        "- Root cause: the FP8 KV cache needs a kernel this build does not ship.\n"
        "- Solution: --kv-cache-dtype auto\n"
        "- Did not help: --disable-cuda-graph\n",
        "FINDINGS.md",
    )

    assert document.format == "findings_md"
    (finding,) = document.findings
    assert finding.title == "Server aborts while loading the checkpoint on the new cards"
    assert finding.gpus == (GpuMention("NVIDIA H200", "sm_90", 2),)
    assert finding.cause == "the FP8 KV cache needs a kernel this build does not ship."
    assert [(fix.text, fix.changes, fix.outcome) for fix in finding.fixes] == [
        (
            "--kv-cache-dtype auto",
            (Change(ChangeAction.SET_FLAG, "kv-cache-dtype", "auto"),),
            Outcome.RESOLVES,
        ),
        (
            "--disable-cuda-graph",
            (Change(ChangeAction.SET_FLAG, "disable-cuda-graph", None),),
            Outcome.NO_EFFECT,
        ),
    ]
    assert dict(finding.extra) == {}


def test_a_write_up_with_a_stray_field_like_bullet_in_its_prose_stays_a_write_up():
    # One such bullet above the first `## ` section and one inside a section: the rule
    # (two known field bullets under `## ` headings) is not met, whatever the names.
    document = extract_document(
        "# Incident: decode workers hung after the driver upgrade\n"
        "\n"
        "- Root cause: still being argued about, see the end.\n"
        "\n"
        "## What happened\n"
        "\n"
        "After the upgrade the four decode workers stopped answering within a minute of\n"
        "traffic. We rolled the driver back on one host and it kept serving.\n"
        "\n"
        "## What we did\n"
        "\n"
        "- Solution: pinning the old driver on every host, for now.\n"
        "\n"
        "Nobody has tried the new driver with the patched NCCL yet.\n",
        "incident.md",
    )

    assert document.format == "writeup"
    assert len(document.findings) == 1


def documented_rows() -> list[tuple[str, list[str], str]]:
    """(main name, synonyms, example value) of each row of the guide's field table."""
    text = FORMAT_GUIDE.read_text(encoding="utf-8")
    table = text.split("\n## Fields\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        if not re.match(r"\| [A-Z]", line):
            continue
        name_cell, example_cell = (cell.strip() for cell in line.strip("|").split("|")[:2])
        names, _, synonyms = name_cell.partition("[")
        for name in names.split("/"):
            rows.append(
                (
                    name.strip(),
                    [synonym.strip() for synonym in synonyms.rstrip("]").split(",") if synonym],
                    example_cell.strip("`"),
                )
            )
    return rows


def entry_with(name: str, value: str) -> str:
    return f"## Decode hangs after warm-up\n- Status: open\n- {name}: {value}\n"


def test_every_synonym_the_format_guide_lists_means_what_its_main_name_means():
    rows = documented_rows()
    assert len(rows) >= 15, "the guide's field table was not found"
    for name, synonyms, example in rows:
        as_named = extract_document(entry_with(name, example), "FINDINGS.md")
        assert as_named.format == "findings_md", name
        for synonym in synonyms:
            assert extract_document(entry_with(synonym, example), "FINDINGS.md") == as_named, (
                f"{synonym} is not read as {name}"
            )


def test_the_format_guide_lists_every_field_name_the_reader_accepts():
    documented = {
        " ".join(spelled.lower().split())
        for name, synonyms, _ in documented_rows()
        for spelled in (name, *synonyms)
    }
    assert sorted(set(FIELD_NAMES) - documented) == []
