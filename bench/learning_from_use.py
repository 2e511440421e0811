"""Does learning from use help? The shared real reports replayed in order, pastes learned.

Reads the shared real-reports set (../shared/corpus/real-reports; only bench/ reads it).
The knowledge base starts as the eval's: each bug's first report is a published
finding. The other reports of known bugs then arrive one at a time, in id order, as a
team would paste them. Three runs:

- no learning: every report is answered by the starting knowledge base (what
  `real-reports-eval` measures);
- learning each miss: when the answer does not put the report's bug first, the paste
  is added to that finding's samples before the next report, as a reviewer does with
  "add to samples" on a "fixed it" vote (`kb/services/feedback.py`, `learn_paste`), and
  the graph is rebuilt;
- learning each miss with an error line: the same, but a paste with no error line of
  its own (a traceback cut before its exception) is not learned, as a reviewer warned
  by the finding page's "Pastes a fix fixed" would decide.

Each prints top-1 and top-3 by the report's place among its bug's reports (the second
report meets one sample, a later one may meet learned ones), the controls answered
(after everything was learned: a learned paste may draw an unrelated report), and
the reports whose answer changed.

    .venv/bin/python bench/learning_from_use.py
"""

from __future__ import annotations

import dataclasses
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import shared_reports  # noqa: E402
from diagnose_accuracy import context_for, findings_in_order  # noqa: E402

from decisiontree.answer import Diagnosis  # noqa: E402
from decisiontree.diagnose import diagnose  # noqa: E402
from decisiontree.fingerprint import ends_before_error, signatures_of  # noqa: E402
from decisiontree.graph import KnowledgeGraph, build_graph  # noqa: E402
from decisiontree.records import FindingRecord  # noqa: E402
from decisiontree.traceback import InputRejected, parse  # noqa: E402

PLACES = ("2nd", "3rd", "4th+")


@dataclasses.dataclass(frozen=True)
class Replay:
    name: str
    found: dict[str, list[int]]  # report id -> finding ids, best first
    controls: dict[str, list[int]]  # control id -> finding ids answered
    learned: int


def diagnosed(graph: KnowledgeGraph, report: shared_reports.Report) -> Diagnosis | None:
    try:
        return diagnose(report.text, context_for(report.text, report.gpu, report.launch_cmd), graph)
    except InputRejected:
        return None


def answer(graph: KnowledgeGraph, report: shared_reports.Report) -> list[int]:
    result = diagnosed(graph, report)
    return findings_in_order(result) if result is not None else []


def replay(
    name: str,
    records: Sequence[FindingRecord],
    queries: Sequence[shared_reports.Report],
    number: dict[str, int],
    learn: str,
) -> Replay:
    by_id = {record.id: record for record in records}
    graph = build_graph(list(by_id.values()))
    found: dict[str, list[int]] = {}
    learned = 0
    for report in sorted((q for q in queries if q.known), key=lambda q: q.id):
        found[report.id] = answer(graph, report)
        expected = number[report.bug]
        if learn and found[report.id][:1] != [expected] and learnable(report.text, learn):
            record = by_id[expected]
            by_id[expected] = dataclasses.replace(record, samples=(*record.samples, report.text))
            learned += 1
            graph = build_graph(list(by_id.values()))
    controls = {q.id: answer(graph, q) for q in queries if not q.known}
    return Replay(name, found, {k: v for k, v in controls.items() if v}, learned)


def places(queries: Sequence[shared_reports.Report]) -> dict[str, str]:
    """Report id -> its place among its bug's reports (the first is the finding)."""
    by_bug: dict[str, list[str]] = defaultdict(list)
    for report in sorted((q for q in queries if q.known), key=lambda q: q.id):
        by_bug[report.bug].append(report.id)
    return {
        report_id: PLACES[min(turn, len(PLACES) - 1)]
        for ids in by_bug.values()
        for turn, report_id in enumerate(ids)
    }


def table(
    runs: Sequence[Replay],
    place_of: dict[str, str],
    expected: Callable[[str], int],
    controls: int,
) -> list[str]:
    head = (
        "| run | learned | top-1 | top-3 | "
        + " | ".join(f"{p} top-1 / top-3" for p in PLACES)
        + " | controls answered |"
    )
    lines = [head, "|" + " --- |" * (5 + len(PLACES))]
    for run in runs:
        cells = [run.name, str(run.learned), *_shares(run.found, list(run.found), expected)]
        for place in PLACES:
            ids = [r for r in run.found if place_of[r] == place]
            cells.append(" / ".join(_shares(run.found, ids, expected)) + f" (n={len(ids)})")
        named = ", ".join(sorted(run.controls)) or "none"
        cells.append(f"{len(run.controls) / controls:.2f} ({named})")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _shares(
    found: dict[str, list[int]], ids: Sequence[str], expected: Callable[[str], int]
) -> list[str]:
    """(top-1, top-3) of the reports `ids`, formatted; dashes where there are none."""
    if not ids:
        return ["-", "-"]
    top1 = sum(found[r][:1] == [expected(r)] for r in ids) / len(ids)
    top3 = sum(expected(r) in found[r][:3] for r in ids) / len(ids)
    return [f"{top1:.2f}", f"{top3:.2f}"]


def _place_in(found: list[int], expected: int) -> str:
    if found[:1] == [expected]:
        return "first"
    return "top-3" if expected in found[:3] else "missed"


def main() -> int:
    if not shared_reports.available():
        print(shared_reports.absent_note())
        return 0
    known, queries = shared_reports.split(shared_reports.load())
    records = shared_reports.finding_records(known)
    number = {report.bug: record.id for record, report in zip(records, known, strict=True)}
    bug_of = {q.id: q.bug for q in queries}

    def expected(report_id: str) -> int:
        return number[bug_of[report_id]]

    runs = [
        replay("no learning", records, queries, number, learn=""),
        replay("learning each miss", records, queries, number, learn="every paste"),
        # What the reviewer's warning on a paste with no error line of its own leads to.
        replay("learning each miss with an error line", records, queries, number, learn="error"),
    ]
    controls = sum(not q.known for q in queries)
    print("\n".join(table(runs, places(queries), expected, controls)))
    before, after = runs[:2]
    moves = {
        r: (_place_in(before.found[r], expected(r)), _place_in(after.found[r], expected(r)))
        for r in sorted(before.found)
    }
    changed = [f"{r}: {was} -> {now}" for r, (was, now) in moves.items() if was != now]
    print("\nchanged by learning: " + ("; ".join(changed) or "none"))
    # What makes a miss learnable in use: on "no known match" the page lists the nearest
    # findings with their fixes and a "this fixed it" button; a miss whose right finding
    # is among them can be marked by whoever it fixed, with nobody searching for it.
    graph = build_graph(records)
    missed = [q for q in queries if q.known and expected(q.id) not in before.found[q.id][:3]]
    offered = [q.id for q in missed if expected(q.id) in nearest(graph, q)]
    named = [q.id for q in queries if not q.known and nearest(graph, q)]
    print(
        f"\nmisses (right finding not among the first three): {len(missed)}; "
        f"its finding among the nearest offered on 'no known match': {len(offered)} "
        f"({', '.join(offered) or 'none'}); controls with a nearest finding named: "
        f"{len(named)} of {controls}"
    )
    return 0


def learnable(text: str, learn: str) -> bool:
    """Whether this run learns the paste: every one, or those with an error line."""
    if learn != "error":
        return bool(learn)
    try:
        found = signatures_of(parse(text))
    except InputRejected:
        return False
    return not ends_before_error(found[0].exception_type if found else None)


def nearest(graph: KnowledgeGraph, report: shared_reports.Report) -> list[int]:
    """The nearest findings an answer offers beside "no known match", closest first."""
    result = diagnosed(graph, report)
    return [near.finding.id for near in result.nearest] if result is not None else []


if __name__ == "__main__":
    raise SystemExit(main())
