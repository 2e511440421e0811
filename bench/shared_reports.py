"""The shared real-reports set (../shared/corpus/real-reports), read the way its eval reads it.

Only bench/ reads ../shared. The protocol is the one its README describes: for each
bug, the first report (by id) becomes a FINDINGS.md entry titled with the bug's slug
and its last error line, ingested as a published finding; every other report, and
every control, is a query. Here the FINDINGS.md text goes through the same extractor
the `ingest` command uses, and diagnosis runs in this process, so a whole pass takes
seconds instead of the minutes of one `manage.py diagnose` per report.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from decisiontree.documents import extract_document
from decisiontree.records import FindingRecord, FixRecord

ROOT = Path(__file__).resolve().parents[1]
SHARED_SET = ROOT.parent / "shared" / "corpus" / "real-reports"


@dataclass(frozen=True)
class Report:
    id: str
    bug: str
    text: str
    known: bool  # False for a control ("no_known_match")
    gpu: str
    launch_cmd: str


def available(directory: Path = SHARED_SET) -> bool:
    return (directory / "cases.jsonl").is_file()


def absent_note(directory: Path = SHARED_SET) -> str:
    return f"shared real-reports set not found at {directory}: its rows are left out"


def load(directory: Path = SHARED_SET) -> list[Report]:
    reports = []
    for name in ("cases.jsonl", "controls.jsonl"):
        path = directory / name
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            if line.strip():
                reports.append(_report(json.loads(line)))
    return reports


def _report(raw: dict[str, Any]) -> Report:
    context = raw.get("context") or {}
    return Report(
        id=raw["id"],
        bug=raw["bug"],
        text=raw["traceback"],
        known=raw.get("expected") != "no_known_match",
        gpu=context.get("gpu") or "",
        launch_cmd=(context.get("launch_cmd") or "").split("\n", 1)[0],
    )


def by_bug(reports: Iterable[Report]) -> dict[str, list[Report]]:
    """Each bug's reports (controls left out), in id order."""
    found: dict[str, list[Report]] = defaultdict(list)
    for report in reports:
        if report.known:
            found[report.bug].append(report)
    for group in found.values():
        group.sort(key=lambda r: r.id)
    return found


def rotations(reports: list[Report], views: int) -> list[tuple[list[Report], list[Report]]]:
    """(findings, queries) for turns 1 .. views - 1: each bug's report of that turn is the
    finding (the last one where a bug has fewer), its other reports and every control are
    queries. Turn 0 is `split`, the protocol."""
    bugs = by_bug(reports)
    controls = [r for r in reports if not r.known]
    found = []
    for turn in range(1, views):
        findings = [bugs[bug][min(turn, len(bugs[bug]) - 1)] for bug in sorted(bugs)]
        rest = [r for bug in sorted(bugs) for r in bugs[bug] if r not in findings]
        found.append((findings, rest + controls))
    return found


def split(reports: Iterable[Report]) -> tuple[list[Report], list[Report]]:
    """(known reports, one per bug; queries: the other reports and every control)."""
    by_bug: dict[str, list[Report]] = defaultdict(list)
    queries: list[Report] = []
    for report in reports:
        (by_bug[report.bug] if report.known else queries).append(report)
    known = []
    for _, group in sorted(by_bug.items()):
        group.sort(key=lambda r: r.id)
        known.append(group[0])
        queries.extend(group[1:])
    return known, queries


def raw_cases(directory: Path = SHARED_SET) -> dict[str, dict[str, Any]]:
    """The report records as stored, by id (fixes and contexts for the FINDINGS.md entries)."""
    found = {}
    for name in ("cases.jsonl", "controls.jsonl"):
        path = directory / name
        if path.is_file():
            for line in path.read_text().splitlines():
                if line.strip():
                    raw = json.loads(line)
                    found[raw["id"]] = raw
    return found


def findings_md_entry(raw: dict[str, Any]) -> str:
    """One FINDINGS.md entry, in the shape the set's README describes."""
    context = raw.get("context") or {}
    text = raw["traceback"]
    last = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "error")
    lines = [f"## [{raw['bug']}] {last[:100]}"]
    for key, label in (("gpu", "Hardware"), ("model", "Model"), ("framework", "Framework")):
        if context.get(key):
            lines.append(f"- {label}: {context[key]}")
    if context.get("launch_cmd"):
        lines.append(f"- Flags: {context['launch_cmd'].splitlines()[0]}")
    lines.append(f"- Symptom: {last[:200]}")
    fix = raw["fix"]
    if raw.get("fix_flags"):
        fix += " (" + " ".join(raw["fix_flags"]) + ")"
    lines += [f"- Fix: {fix}", "- Status: resolved", "", "```", text, "```", ""]
    return "\n".join(lines)


def finding_records(known: Sequence[Report], directory: Path = SHARED_SET) -> list[FindingRecord]:
    """The known reports as published findings, numbered 1.. in order; title keeps the slug."""
    raws = raw_cases(directory)
    records = []
    for number, report in enumerate(known, start=1):
        entry = findings_md_entry(raws[report.id])
        document = extract_document("# Findings\n\n" + entry, "FINDINGS.md")
        records.append(_record(number, document.findings[0]))
    return records


def _record(number: int, extracted: Any) -> FindingRecord:
    fixes = tuple(
        FixRecord(
            number * 100 + k,
            fix.text,
            tuple(fix.changes),
            fix.outcome,
        )
        for k, fix in enumerate(extracted.fixes, start=1)
    )
    return FindingRecord(
        number,
        extracted.title,
        extracted.kind,
        extracted.cause,
        tuple(extracted.samples),
        tuple(extracted.conditions),
        fixes,
        summary=extracted.summary,
    )
