"""How often a "known" answer on words alone is right, with and without a phrase in common.

A match on words alone is the verifier's probability over bags of words: two messages
that share their words in another order ("no available kernel" / "no kernel image is
available") score as high as two that share a phrase. This prints, for every answer the
verifier would call known (its best candidate at or above the `known` cut-off), how
often the answer is right, by layer and by whether one paste message and one finding
message share a pair of words in order (`Features.message_phrase` > 0). Read over the
shared real-reports set: the protocol split and three rotations (each bug's second,
third and fourth report as the finding), as bench/fit_matcher.py reads it.

    .venv/bin/python bench/known_gate.py [--list]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import shared_reports  # noqa: E402

from decisiontree.diagnose import queries_for  # noqa: E402
from decisiontree.fingerprint import signatures_of  # noqa: E402
from decisiontree.graph import build_graph  # noqa: E402
from decisiontree.match import known_threshold, verify  # noqa: E402
from decisiontree.traceback import InputRejected, parse  # noqa: E402

ROTATIONS = 4  # the protocol and three rotations, as bench/fit_matcher.py


def views(reports: list[shared_reports.Report]) -> list[tuple[str, list, list]]:
    known, queries = shared_reports.split(reports)
    turns = shared_reports.rotations(reports, ROTATIONS)
    return [("protocol", known, queries)] + [
        (f"rotation {turn}", findings, rest) for turn, (findings, rest) in enumerate(turns, 1)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the answers without a phrase")
    args = parser.parse_args()
    if not shared_reports.available():
        print(shared_reports.absent_note())
        return 1
    tally: Counter[tuple[str, bool, bool]] = Counter()
    for view, findings, queries in views(shared_reports.load()):
        records = shared_reports.finding_records(list(findings))
        graph = build_graph(records)
        bug_of = {record.id: report.bug for record, report in zip(records, findings, strict=True)}
        for query in queries:
            try:
                signatures = signatures_of(parse(query.text), warnings=True)
            except InputRejected:
                continue
            assessed = graph.index.assess(queries_for(signatures, query.text))
            if not assessed:
                continue
            finding_id, layer, features = max(assessed, key=lambda a: verify(a[2]))
            if verify(features) < known_threshold():
                continue
            right = query.known and bug_of[finding_id] == query.bug
            phrase = features.message_phrase > 0
            tally[(layer, phrase, right)] += 1
            if args.list and layer == "terms" and not phrase:
                verdict = "right" if right else "wrong"
                print(f"  {view:11} {query.id} -> {bug_of[finding_id][:50]} ({verdict})")
    print(f"known-level answers (probability >= {known_threshold():.2f}), right / all")
    print(f"{'layer':12} {'phrase in common':>17} {'no phrase':>12}")
    for layer in ("fingerprint", "template", "terms"):
        cells = []
        for phrase in (True, False):
            right, wrong = tally[(layer, phrase, True)], tally[(layer, phrase, False)]
            cells.append(f"{right}/{right + wrong}" if right + wrong else "-")
        print(f"{layer:12} {cells[0]:>17} {cells[1]:>12}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
