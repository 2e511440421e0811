"""Extraction quality on labelled write-ups: precision and recall per field, and episodes.

    python bench/ingest_quality.py [DIR ...]     # default: bench/corpus/writeups
    python bench/ingest_quality.py --episodes    # episode measures only
    python bench/ingest_quality.py --outcomes    # the outcome judge on verdict sentences

Each `<name>.labels.json` beside a write-up lists what a careful human found in
it (format: bench/corpus/README.md). A FINDINGS.md file counts as one document:
the union of its entries is compared with its labels.

Episodes: `<name>.episodes.json` says which symptoms a document tells and which
symptom each attempt was tried against. The episode table reads the write-ups and
the seed incidents (`../shared/seeds`, labels in bench/corpus/seeds) and reports, per
document and overall, the labelled attempts found, found with the right outcome,
found on the finding of the right symptom, and the precision of the extracted fixes.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from decisiontree.documents import ExtractedDocument, extract_document  # noqa: E402
from decisiontree.documents.changes import changes_in  # noqa: E402
from decisiontree.vocabulary import load  # noqa: E402

FIELDS = (
    "gpus",
    "arch",
    "models",
    "framework",
    "framework version",
    "flags",
    "error types",
    "fixes",
    "fix changes",
)
Item = tuple[str, ...]


@dataclass
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    misses: list[str] = field(default_factory=list)

    def add(self, name: str, predicted: set[Item], expected: set[Item]) -> None:
        predicted = _align_free_text(predicted, expected)
        self.tp += len(predicted & expected)
        self.fp += len(predicted - expected)
        self.fn += len(expected - predicted)
        for item in sorted(expected - predicted):
            self.misses.append(f"{name}: missed {'/'.join(item)}")
        for item in sorted(predicted - expected):
            self.misses.append(f"{name}: extra  {'/'.join(item)}")

    @property
    def precision(self) -> str:
        return f"{self.tp / (self.tp + self.fp):6.2f}" if self.tp + self.fp else "   n/a"

    @property
    def recall(self) -> str:
        return f"{self.tp / (self.tp + self.fn):6.2f}" if self.tp + self.fn else "   n/a"


def _align_free_text(predicted: set[Item], expected: set[Item]) -> set[Item]:
    """A fix in words ("kill the orphaned scheduler") matches a label worded a bit differently."""
    from rapidfuzz import fuzz, utils

    aligned = set()
    for item in predicted:
        structured = item[0].startswith(("--", "remove --")) or re.fullmatch(r"\w+=\S*", item[0])
        if item in expected or structured:
            aligned.add(item)
            continue
        scored = [
            (fuzz.token_set_ratio(e[0], item[0], processor=utils.default_process), e)
            for e in expected
            if e[1:] == item[1:]
        ]
        close = max((pair for pair in scored if pair[0] >= 85), default=None)
        aligned.add(close[1] if close else item)
    return aligned


def _value(value: object) -> str:
    text = str(value).strip()
    try:
        return repr(float(text)) if re.fullmatch(r"-?\d+(?:\.\d+)?", text) else text
    except ValueError:
        return text


SERVERS = frozenset({"sglang", "vllm", "tensorrt-llm", "lmdeploy"})


def _package(name: str) -> str:
    """Labels name packages as pip does ("flashinfer-python"); extraction as people say them."""
    name = name.lower().replace("_", "-")
    return {"flashinfer-python": "flashinfer", "pytorch": "torch"}.get(name, name)


def _short_type(name: str) -> str:
    return re.split(r"\.|::", name.strip())[-1]


def _model_key(name: str) -> str:
    return name.strip().lower().rsplit("/", 1)[-1]


def _change_key(text: str, framework: str | None) -> str:
    changes = changes_in(text, load(), framework)
    if changes:
        return " ".join(sorted(change.describe() for change in changes))
    return " ".join(text.lower().split())


def predicted(document: ExtractedDocument) -> dict[str, set[Item]]:
    found: dict[str, set[Item]] = {name: set() for name in FIELDS}
    for f in document.findings:
        found["gpus"] |= {(g.name, str(g.count)) for g in f.gpus}
        found["arch"] |= {(g.arch,) for g in f.gpus if g.arch}
        found["models"] |= {(_model_key(f.model),)} if f.model else set()
        found["framework"] |= {(f.framework,)} if f.framework else set()
        found["framework version"] |= (
            {(f.framework, f.framework_version)} if f.framework_version else set()
        )
        found["framework version"] |= {
            (_package(name), version) for name, version in f.versions.items()
        }
        found["flags"] |= {(name, _value(value)) for name, value in f.flags}
        found["error types"] |= {(_short_type(t),) for t in error_types(f.samples)}
        for fix in f.fixes:
            key = " ".join(sorted(change.describe() for change in fix.changes))
            found["fixes"].add((key, fix.outcome.value))
            found["fix changes"].add((key,))
    return found


def expected(labels: dict, framework_hint: str | None) -> dict[str, set[Item]]:
    frameworks = labels.get("frameworks") or (
        [{"name": labels["framework"], "version": labels.get("framework_version")}]
        if labels.get("framework")
        else []
    )
    servers = [fw["name"].lower() for fw in frameworks if fw["name"].lower() in SERVERS]
    framework = servers[0] if servers else framework_hint
    fixes = {
        (_change_key(fix["change"], framework), fix["outcome"]) for fix in labels.get("fixes", [])
    }
    return {
        "gpus": {(g["name"], str(g.get("count", 1))) for g in labels.get("gpus", [])},
        "arch": {(g["arch"],) for g in labels.get("gpus", []) if g.get("arch")},
        "models": {(_model_key(m),) for m in labels.get("models", [])},
        "framework": {(fw["name"].lower(),) for fw in frameworks if fw["name"].lower() in SERVERS},
        "framework version": {
            (_package(fw["name"]), fw["version"]) for fw in frameworks if fw.get("version")
        },
        "flags": {(name, _value(value)) for name, value in labels.get("flags", {}).items()},
        "error types": {(_short_type(t),) for t in labels.get("error_types", [])},
        "fixes": fixes,
        "fix changes": {(key,) for key, _ in fixes},
    }


_TERMINATE = re.compile(r"terminate called after throwing an instance of '([^']+)'")


def error_types(samples: Iterable[str]) -> set[str]:
    from decisiontree.traceback import InputRejected, parse

    types: set[str] = set()
    for sample in samples:
        types |= set(_TERMINATE.findall(sample))
        try:
            types |= {exc.type for exc in parse(sample).exceptions if exc.type}
        except InputRejected:
            continue
    return types


def documents(
    directories: list[Path], suffixes: tuple[str, ...] = (".labels.json", ".expected.json")
) -> Iterable[tuple[Path, dict]]:
    for directory in directories:
        for label_file in sorted(directory.glob("*.json")):
            suffix = next((s for s in suffixes if label_file.name.endswith(s)), None)
            if suffix is None:
                continue
            text = _text_beside(directory, label_file.name.removesuffix(suffix))
            if text is not None:
                yield text, json.loads(label_file.read_text())


def _text_beside(directory: Path, stem: str) -> Path | None:
    texts = [p for p in directory.glob(stem + ".*") if p.suffix in (".md", ".txt", ".log")]
    return texts[0] if texts else None


# -- episodes: each attempt on the finding of the symptom it was tried against --------------

WRITEUPS = ROOT / "bench" / "corpus" / "writeups"
SEED_LABELS = ROOT / "bench" / "corpus" / "seeds"
SEEDS = ROOT.parent / "shared" / "seeds"  # the user's own incidents; never in the repo


@dataclass
class EpisodeScore:
    """Counts for one document, or summed over several."""

    attempts: int = 0  # labelled attempts
    found: int = 0  # extracted anywhere in the document
    outcome: int = 0  # ... with the labelled outcome
    symptom: int = 0  # ... on a finding of the labelled symptom
    all_right: int = 0  # ... with the labelled outcome on a finding of the labelled symptom
    extracted: int = 0  # distinct (change, outcome) pairs extracted
    precise: int = 0  # ... of which the labels hold
    placements: int = 0  # (finding, fix) pairs whose change is a labelled one
    placed_right: int = 0  # ... on a finding of a symptom the labels put that change on
    misses: list[str] = field(default_factory=list)

    def __iadd__(self, other: EpisodeScore) -> EpisodeScore:
        for name in self.__dataclass_fields__:
            if name != "misses":
                setattr(self, name, getattr(self, name) + getattr(other, name))
        self.misses += other.misses
        return self


def symptom_of_finding(text: str, symptoms: dict[str, dict]) -> str | None:
    """The labelled symptom whose markers the finding's error text and headline hold most."""
    best, best_hits = None, 0
    for name, symptom in symptoms.items():
        hits = sum(bool(re.search(m, text, re.IGNORECASE)) for m in symptom["markers"])
        if hits > best_hits:
            best, best_hits = name, hits
    return best


def finding_text(finding, document_title: str) -> str:
    """Samples and headline; an episode's title ends with the document's, which is not its own."""
    headline = finding.title.removesuffix(f" — {document_title}")
    return "\n".join((headline, *finding.samples))


def _aligned(key: str, wanted: set[str]) -> str:
    from rapidfuzz import fuzz, utils

    structured = key.startswith(("--", "remove --")) or re.fullmatch(r"\w+=\S*", key)
    if key in wanted or structured:
        return key
    # The closest label, not the first of a set: set order changes from run to run.
    scored = [(fuzz.token_set_ratio(w, key, processor=utils.default_process), w) for w in wanted]
    close = max((pair for pair in scored if pair[0] >= 85), default=None)
    return close[1] if close else key


Changes = frozenset[str]


def _label_changes(text: str, framework: str | None) -> Changes:
    changes = changes_in(text, load(), framework)
    if changes:
        return frozenset(change.describe() for change in changes)
    return frozenset({" ".join(text.lower().split())})


@dataclass(frozen=True)
class _Placed:
    changes: Changes
    outcome: str
    symptom: str | None  # the labelled symptom of the finding it sits on


def score_episodes(document: ExtractedDocument, labels: dict, name: str) -> EpisodeScore:
    """An extracted fix stands for each labelled attempt whose changes it holds: two
    changes tried in one relaunch are one fix that answers both labels."""
    framework = next((f.framework for f in document.findings if f.framework), None)
    wanted = [
        _Placed(_label_changes(a["change"], framework), a["outcome"], a["symptom"])
        for a in labels["attempts"]
    ]
    words = {change for w in wanted for change in w.changes}
    got = []
    for finding in document.findings:
        on = symptom_of_finding(finding_text(finding, document.title), labels["symptoms"])
        for fix in finding.fixes:
            changes = frozenset(_aligned(c.describe(), words) for c in fix.changes)
            got.append(_Placed(changes, fix.outcome.value, on))
    score = EpisodeScore(attempts=len(wanted))
    for want in wanted:
        same = [g for g in got if want.changes <= g.changes]
        score.found += bool(same)
        score.outcome += any(g.outcome == want.outcome for g in same)
        score.symptom += any(g.symptom == want.symptom for g in same)
        right = any((g.outcome, g.symptom) == (want.outcome, want.symptom) for g in same)
        score.all_right += right
        if not right:
            seen = ", ".join(f"{g.outcome} on {g.symptom}" for g in same) or "not found"
            score.misses.append(
                f"{name}: {_shown(want)} wants {want.outcome} on {want.symptom}; got {seen}"
            )
    pairs = {(g.changes, g.outcome) for g in got}
    precise = {pair for pair in pairs if _told_by_labels(*pair, wanted)}
    score.extracted, score.precise = len(pairs), len(precise)
    score.misses += [
        f"{name}: extra {_shown(_Placed(c, o, None))} ({o})" for c, o in pairs - precise
    ]
    placed = [g for g in got if any(w.changes <= g.changes for w in wanted)]
    score.placements = len(placed)
    score.placed_right = sum(
        any(w.changes <= g.changes and w.symptom == g.symptom for w in wanted) for g in placed
    )
    return score


def _told_by_labels(changes: Changes, outcome: str, wanted: list[_Placed]) -> bool:
    """The fix is exactly one or more labelled attempts with its outcome."""
    held = [w for w in wanted if w.changes <= changes and w.outcome == outcome]
    return bool(held) and frozenset().union(*(w.changes for w in held)) == changes


def _shown(placed: _Placed) -> str:
    return " ".join(sorted(placed.changes))


def episode_documents(directories: list[Path]) -> Iterable[tuple[str, Path, dict]]:
    """(group, text, episode labels): the write-ups, then the seeds when they are here."""
    for path, labels in documents(directories or [WRITEUPS], (".episodes.json",)):
        yield "write-ups", path, labels
    if not SEEDS.is_dir():
        print(f"seeds: {SEEDS} is absent; the seed rows are left out\n")
        return
    for label_file in sorted(SEED_LABELS.glob("*.episodes.json")):
        text = _text_beside(SEEDS, label_file.name.removesuffix(".episodes.json"))
        if text is None:
            print(f"seeds: no {label_file.name.removesuffix('.episodes.json')}.* in {SEEDS}")
            continue
        yield "seeds", text, json.loads(label_file.read_text())


def _ratio(part: int, whole: int) -> str:
    return f"{part / whole:7.2f}" if whole else "    n/a"


def episode_table(argv: list[str]) -> int:
    header = (
        f"{'document':<40} {'tried':>5} {'found':>7} {'outcome':>7} {'symptom':>7} "
        f"{'all':>7} {'fixprec':>7} {'placed':>7}"
    )
    print("episodes: labelled attempts found / with the right outcome / on the right symptom /")
    print(
        "both; precision of extracted (change, outcome); extracted placements on a right symptom\n"
    )
    print(header)
    totals: dict[str, EpisodeScore] = {}
    for group, path, labels in episode_documents([Path(a) for a in argv]):
        document = extract_document(path.read_text(errors="replace"), path.name)
        score = score_episodes(document, labels, path.stem)
        _episode_row(path.stem[:40], score)
        totals.setdefault(group, EpisodeScore())
        totals[group] += score
    every = EpisodeScore()
    for group, score in totals.items():
        _episode_row(f"== {group}", score)
        every += score
    _episode_row("== all", every)
    if "-v" in sys.argv or "--verbose" in sys.argv:
        print("\n".join(f"  {line}" for line in every.misses))
    return 0


def _episode_row(name: str, s: EpisodeScore) -> None:
    print(
        f"{name:<40} {s.attempts:5} {_ratio(s.found, s.attempts)} {_ratio(s.outcome, s.attempts)} "
        f"{_ratio(s.symptom, s.attempts)} {_ratio(s.all_right, s.attempts)} "
        f"{_ratio(s.precise, s.extracted)} {_ratio(s.placed_right, s.placements)}"
    )


OUTCOMES = ROOT / "bench" / "corpus" / "outcomes"


def outcome_judge() -> int:
    """The outcome judge on sentences written apart from it (bench/corpus/outcomes)."""
    for name in (
        "sentences.json",
        "heldout.json",
        "heldout2.json",
        "heldout3.json",
        "heldout4.json",
        "heldout5.json",
    ):
        score_judge(OUTCOMES / name)
    return 0


def score_judge(path: Path) -> None:
    from decisiontree.documents.outcomes import judge_outcome, lexicon

    sentences = json.loads(path.read_text())["sentences"]
    by_label: dict[str, list[int]] = {}
    wrong = []
    for item in sentences:
        got = judge_outcome(item["text"])
        label = item["outcome"] or "none"
        right = (got.value if got else None) == item["outcome"]
        by_label.setdefault(label, []).append(int(right))
        if not right:
            wrong.append(f"  want {label:<9} got {got.value if got else 'none':<9} {item['text']}")
    print(f"outcome judge (word classes v{lexicon().version}) on {path.name}\n")
    print(f"{'label':<10} {'right':>5} {'of':>4}")
    for label, marks in sorted(by_label.items()):
        print(f"{label:<10} {sum(marks):5} {len(marks):4}")
    total = sum(sum(m) for m in by_label.values())
    print(f"{'all':<10} {total:5} {len(sentences):4}")
    print("\n".join(wrong) + "\n")


def main(argv: list[str]) -> int:
    if "--outcomes" in sys.argv:
        return outcome_judge()
    if "--episodes" in sys.argv:
        return episode_table(argv)
    directories = [Path(arg) for arg in argv] or [ROOT / "bench" / "corpus" / "writeups"]
    tallies = {name: Tally() for name in FIELDS}
    count = 0
    for path, labels in documents(directories):
        document = extract_document(path.read_text(errors="replace"), path.name)
        got = predicted(document)
        want = expected(labels, next((f.framework for f in document.findings if f.framework), None))
        for name in FIELDS:
            tallies[name].add(path.name, got[name], want[name])
        count += 1
    print(f"{count} labelled documents\n")
    print(f"{'field':<18} {'prec':>6} {'recall':>6} {'tp':>4} {'fp':>4} {'fn':>4}")
    total = Tally()
    for name in FIELDS:
        t = tallies[name]
        print(f"{name:<18} {t.precision} {t.recall} {t.tp:4} {t.fp:4} {t.fn:4}")
        if name != "fix changes":  # a looser view of "fixes"; not counted twice in the total
            total.tp, total.fp, total.fn = total.tp + t.tp, total.fp + t.fp, total.fn + t.fn
    print(
        f"{'micro total':<18} {total.precision} {total.recall} "
        f"{total.tp:4} {total.fp:4} {total.fn:4}"
    )
    if "-v" in sys.argv or "--verbose" in sys.argv:
        for name in FIELDS:
            for line in tallies[name].misses:
                print(f"  [{name}] {line}")
    print()
    return episode_table(argv)


if __name__ == "__main__":
    raise SystemExit(main([a for a in sys.argv[1:] if not a.startswith("-")]))
