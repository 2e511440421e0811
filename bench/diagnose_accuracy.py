"""Does diagnosis find the right finding for a report it has never seen?

Reads bench/corpus/reports/manifest.json: each finding has one `known_report`
(indexed as the finding's sample) and `query_reports` (other reports of the same
bug). Prints top-1 / top-3 over the queries and the false-match rate over the
`unrelated` reports, beside two baselines computed here:

- TF-IDF cosine over the raw text (nearest known report, fixed threshold);
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
from dataclasses import dataclass
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
from decisiontree.traceback import InputRejected, parse  # noqa: E402

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


def fixgraph_ranker(graph: KnowledgeGraph) -> Ranker:
    def rank(text: str) -> list[int]:
        result = diagnose(text, context_for(text), graph)
        return findings_in_order(result)

    return rank


def context_for(text: str) -> Context:
    """What the user's paste itself tells (GPU, launch command, server_args)."""
    try:
        return build_context(text)
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


# --- baseline 2: exception type + innermost in-app frame ------------------------------


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


def table(scores: Sequence[Score], corpus: Corpus) -> Iterable[str]:
    yield (
        f"{len(corpus.findings)} findings, {len(corpus.queries)} query reports, "
        f"{len(corpus.unrelated)} unrelated reports"
    )
    yield f"{'method':<34} {'top-1':>7} {'top-3':>7} {'false match':>12} {'ms/report':>10}"
    for s in scores:
        yield (
            f"{s.name:<34} {s.top1:>7.1%} {s.top3:>7.1%} {s.false_match:>12.1%} "
            f"{s.ms_per_report:>10.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    parser.add_argument("--verbose", action="store_true", help="list every miss")
    args = parser.parse_args()
    corpus = load_corpus(args.manifest)
    graph = build_graph(corpus.findings)
    scores = [
        evaluate("FixGraph diagnose", fixgraph_ranker(graph), corpus),
        evaluate(f"TF-IDF cosine (>= {TFIDF_THRESHOLD})", tfidf_ranker(corpus.known_texts), corpus),
        evaluate("exception type + in-app frame", grouping_ranker(corpus.known_texts), corpus),
    ]
    print("\n".join(table(scores, corpus)))
    if graph.skipped_samples:
        print(f"unreadable known reports: {len(graph.skipped_samples)}")
    if args.verbose:
        for score in scores:
            print(f"\n{score.name} misses:")
            print("\n".join(f"  {miss}" for miss in score.misses) or "  none")


if __name__ == "__main__":
    main()
