"""Does diagnosis find the right finding for a report it has never seen?

Two corpora, side by side in one table:

- ours, bench/corpus/reports/manifest.json: each finding has one `known_report`
  (indexed as the finding's sample) and `query_reports` (other reports of the same
  bug), plus `unrelated` reports;
- the shared real-reports set (../shared/corpus/real-reports, read only here and in
  bench/fit_matcher.py; left out, saying so, when absent), split as its eval does:
  each bug's first report is the finding, every other report and every control a query.

Prints top-1 / top-3 over the queries and the false-match rate over the unrelated
reports for FixGraph, ranking fixes by a walk of the decision graph and, beside it, by
the plain ranking (the matched findings' own fixes only) and by what a user sees
either way (the fixes, or on "no known match" the nearest findings it names: a
"false match" there is a control beside which any finding is named, never as a fix),
and, computed here on the same split, three baselines:

- TF-IDF cosine over the raw text (nearest known report, fixed threshold);
- BM25 (Okapi, k1 1.2, b 0.75) over the same identifier- and path-aware words the
  matcher reads, never abstaining: how far ranking alone goes;
- grouping by exception type + innermost in-app frame (what many trackers do).

    .venv/bin/python bench/diagnose_accuracy.py [--manifest PATH] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from decisiontree.context import Context, build_context  # noqa: E402
from decisiontree.diagnose import Diagnosis, diagnose  # noqa: E402
from decisiontree.fingerprint import signatures_of  # noqa: E402
from decisiontree.graph import KnowledgeGraph, build_graph  # noqa: E402
from decisiontree.records import (  # noqa: E402
    Change,
    ChangeAction,
    Condition,
    FindingRecord,
    FixRecord,
    Outcome,
)
from decisiontree.terms import words_of  # noqa: E402
from decisiontree.traceback import InputRejected, parse  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import shared_reports  # noqa: E402

DEFAULT_MANIFEST = ROOT / "bench" / "corpus" / "reports" / "manifest.json"
TFIDF_THRESHOLD = 0.3  # cosine below this is "no match" for the baseline
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{1,}")

# A ranker: text -> finding ids, best first (empty = "no match").
Ranker = Callable[[str], list[int]]


@dataclass(frozen=True)
class Corpus:
    findings: tuple[FindingRecord, ...]
    queries: tuple[tuple[int, str, str], ...]  # (expected finding id, path, text)
    unrelated: tuple[tuple[str, str], ...]  # (path, text)
    known_texts: dict[int, str]
    # (gpu, launch command) given beside a paste, by its path; the paste alone otherwise
    given: dict[str, tuple[str, str]] = field(default_factory=dict)


# --- the corpus --------------------------------------------------------------------


def load_corpus(manifest: Path) -> Corpus:
    data = json.loads(manifest.read_text())
    base = manifest.parent
    findings, queries, known = [], [], {}
    for number, entry in enumerate(data["findings"], start=1):
        known[number] = (base / entry["known_report"]).read_text(errors="replace")
        findings.append(finding_record(number, entry, known[number]))
        queries += [
            (number, q, (base / q).read_text(errors="replace"))
            for q in entry.get("query_reports", ())
        ]
    unrelated = [(u, (base / u).read_text(errors="replace")) for u in data.get("unrelated", ())]
    return Corpus(tuple(findings), tuple(queries), tuple(unrelated), known)


def finding_record(number: int, entry: dict[str, Any], sample: str) -> FindingRecord:
    fixes = tuple(
        fix_record(number * 100 + k, fix) for k, fix in enumerate(entry.get("fixes", ()), start=1)
    )
    conditions = tuple(
        Condition(c["key"], str(c["value"]), bool(c.get("negate", False)))
        for c in entry.get("conditions", ())
    )
    return FindingRecord(
        number,
        entry.get("title", entry["id"]),
        "bench",
        entry.get("cause", ""),
        (sample,),
        conditions,
        fixes,
    )


def fix_record(fix_id: int, fix: dict[str, Any]) -> FixRecord:
    changes = tuple(
        Change(ChangeAction(c["action"]), c["name"], _value(c.get("value")))
        for c in fix.get("changes", ())
    )
    return FixRecord(
        fix_id, fix.get("summary", ""), changes, Outcome(fix.get("outcome", "resolves"))
    )


def _value(value: object) -> str | None:
    return None if value is None else str(value)


# --- FixGraph ----------------------------------------------------------------------


def fixgraph_ranker(
    graph: KnowledgeGraph,
    given: dict[str, tuple[str, str]],
    *,
    plain: bool = False,
    nearest: bool = False,
) -> Ranker:
    """`plain=True`: the matched findings' own fixes only, no walk of the graph.
    `nearest=True`: on "no known match", the nearest findings the answer names instead
    (what a user can still open; a control "matches" when any finding is named)."""
    by_text = {text: pair for text, pair in given.items()}

    def rank(text: str) -> list[int]:
        gpu, launch = by_text.get(text, ("", ""))
        result = diagnose(text, context_for(text, gpu, launch), graph, plain=plain)
        if nearest and result.match == "none":
            return [near.finding.id for near in result.nearest]
        return findings_in_order(result)

    return rank


def context_for(text: str, gpu: str = "", launch: str = "") -> Context:
    """What the user's paste itself tells (GPU, launch command, server_args), and what
    was given beside it."""
    try:
        return build_context(text, gpu=gpu or None, launch_command=launch or None)
    except Exception:  # a context we cannot read is no reason to skip the query
        return Context()


def findings_in_order(result: Diagnosis) -> list[int]:
    if result.match == "none":
        return []
    order = [ranked.finding.id for ranked in result.fixes]
    order += [c.finding_id for c in result.candidates]
    return list(dict.fromkeys(order))


# --- baseline 1: TF-IDF cosine over the raw text ------------------------------------


def tfidf_ranker(known: dict[int, str]) -> Ranker:
    docs = {fid: Counter(tokens(text)) for fid, text in known.items()}
    df = Counter(term for bag in docs.values() for term in bag)
    idf = {t: math.log((1 + len(docs)) / (1 + n)) + 1 for t, n in df.items()}
    vectors = {fid: _unit(bag, idf) for fid, bag in docs.items()}

    def rank(text: str) -> list[int]:
        query = _unit(Counter(tokens(text)), idf)
        scored = sorted(
            ((_dot(query, v), fid) for fid, v in vectors.items()),
            key=lambda pair: (-pair[0], pair[1]),
        )
        return [fid for score, fid in scored if score >= TFIDF_THRESHOLD]

    return rank


def tokens(text: str) -> list[str]:
    return [t.lower() for t in TOKEN.findall(text)]


def _unit(bag: Counter[str], idf: dict[str, float]) -> dict[str, float]:
    vector = {t: (1 + math.log(n)) * idf.get(t, 0.0) for t, n in bag.items()}
    norm = math.sqrt(sum(w * w for w in vector.values())) or 1.0
    return {t: w / norm for t, w in vector.items() if w}


def _dot(a: dict[str, float], b: dict[str, float]) -> float:
    small, large = (a, b) if len(a) < len(b) else (b, a)
    return sum(w * large.get(t, 0.0) for t, w in small.items())


# --- baseline 2: BM25 over identifier- and path-aware words ---------------------------


def bm25_ranker(known: dict[int, str], k1: float = 1.2, b: float = 0.75) -> Ranker:
    docs = {fid: Counter(words_of(text)) for fid, text in known.items()}
    lengths = {fid: sum(bag.values()) for fid, bag in docs.items()}
    average = sum(lengths.values()) / max(len(lengths), 1)
    df = Counter(term for bag in docs.values() for term in bag)
    n = len(docs)
    idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def rank(text: str) -> list[int]:
        query = set(words_of(text))
        scores = []
        for fid, bag in docs.items():
            norm = k1 * (1 - b + b * lengths[fid] / average)
            score = sum(idf[t] * bag[t] * (k1 + 1) / (bag[t] + norm) for t in query if t in bag)
            if score > 0:
                scores.append((score, fid))
        return [fid for _, fid in sorted(scores, key=lambda pair: (-pair[0], pair[1]))]

    return rank


# --- baseline 3: exception type + innermost in-app frame ------------------------------


def grouping_ranker(known: dict[int, str]) -> Ranker:
    groups: dict[tuple[str, str], list[int]] = {}
    for fid, text in sorted(known.items()):
        key = group_key(text)
        if key is not None:
            groups.setdefault(key, []).append(fid)

    def rank(text: str) -> list[int]:
        key = group_key(text)
        return list(groups.get(key, [])) if key is not None else []

    return rank


def group_key(text: str) -> tuple[str, str] | None:
    try:
        signatures = signatures_of(parse(text))
    except InputRejected:
        return None
    if not signatures:
        return None
    top = signatures[0]
    return top.exception_type, top.key_frames[0] if top.key_frames else ""


# --- scoring -------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    name: str
    top1: float
    top3: float
    false_match: float
    ms_per_report: float
    misses: tuple[str, ...]


def evaluate(name: str, rank: Ranker, corpus: Corpus) -> Score:
    started = time.perf_counter()
    hits1 = hits3 = 0
    misses = []
    for expected, path, text in corpus.queries:
        found = _safe(rank, text)
        hits1 += found[:1] == [expected]
        hits3 += expected in found[:3]
        if found[:1] != [expected]:
            misses.append(f"{path}: expected {expected}, got {found[:3]}")
    false = sum(bool(_safe(rank, text)) for _, text in corpus.unrelated)
    misses += [
        f"{path}: false match {_safe(rank, text)[:3]}"
        for path, text in corpus.unrelated
        if _safe(rank, text)
    ]
    runs = len(corpus.queries) + len(corpus.unrelated)
    elapsed_ms = (time.perf_counter() - started) * 1000 / max(runs, 1)
    return Score(
        name,
        _share(hits1, len(corpus.queries)),
        _share(hits3, len(corpus.queries)),
        _share(false, len(corpus.unrelated)),
        elapsed_ms,
        tuple(misses),
    )


def _safe(rank: Ranker, text: str) -> list[int]:
    try:
        return rank(text)
    except InputRejected:
        return []


def _share(part: int, whole: int) -> float:
    return part / whole if whole else float("nan")


def shared_corpus() -> Corpus | None:
    """The shared real-reports set, split as its eval splits it; None when absent."""
    if not shared_reports.available():
        return None
    known, queries = shared_reports.split(shared_reports.load())
    records = shared_reports.finding_records(known)
    number = {report.bug: record.id for record, report in zip(records, known, strict=True)}
    return Corpus(
        findings=tuple(records),
        queries=tuple((number[q.bug], q.id, q.text) for q in queries if q.known),
        unrelated=tuple((q.id, q.text) for q in queries if not q.known),
        known_texts={number[k.bug]: k.text for k in known},
        given={q.text: (q.gpu, q.launch_cmd) for q in queries},
    )


def scores_of(corpus: Corpus) -> list[Score]:
    graph = build_graph(corpus.findings)
    return [
        evaluate("FixGraph diagnose (graph walk)", fixgraph_ranker(graph, corpus.given), corpus),
        evaluate(
            "FixGraph, plain ranking (no walk)",
            fixgraph_ranker(graph, corpus.given, plain=True),
            corpus,
        ),
        evaluate(
            "FixGraph, or the nearest on 'none'",
            fixgraph_ranker(graph, corpus.given, nearest=True),
            corpus,
        ),
        evaluate(f"TF-IDF cosine (>= {TFIDF_THRESHOLD})", tfidf_ranker(corpus.known_texts), corpus),
        evaluate("BM25, path-aware words, no cut-off", bm25_ranker(corpus.known_texts), corpus),
        evaluate("exception type + in-app frame", grouping_ranker(corpus.known_texts), corpus),
    ]


def table(columns: Sequence[tuple[str, Corpus, list[Score]]]) -> Iterable[str]:
    for name, corpus, _ in columns:
        yield (
            f"{name}: {len(corpus.findings)} findings, {len(corpus.queries)} query reports, "
            f"{len(corpus.unrelated)} unrelated reports"
        )
    head = "".join(f" | {name[:27]:^27}" for name, _, _ in columns)
    yield f"{'':<36}{head}"
    sub = " | top-1   top-3   false" * len(columns)
    yield f"{'method':<36}{sub}"
    for row in range(len(columns[0][2])):
        cells = "".join(
            f" | {s.top1:>5.1%} {s.top3:>7.1%} {s.false_match:>7.1%}"
            for s in (scores[row] for _, _, scores in columns)
        )
        yield f"{columns[0][2][row].name:<36}{cells}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    parser.add_argument("--verbose", action="store_true", help="list every miss")
    args = parser.parse_args()
    ours = load_corpus(args.manifest)
    columns = [("bench/corpus/reports", ours, scores_of(ours))]
    shared = shared_corpus()
    if shared is None:
        print(shared_reports.absent_note())
    else:
        columns.append(("shared real-reports", shared, scores_of(shared)))
    print("\n".join(table(columns)))
    if args.verbose:
        for name, _, scores in columns:
            for score in scores:
                print(f"\n{name}, {score.name} misses:")
                print("\n".join(f"  {miss}" for miss in score.misses) or "  none")


if __name__ == "__main__":
    main()
