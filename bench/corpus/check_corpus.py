"""Check that the benchmark corpora are well-formed.

    python bench/corpus/check_corpus.py          # exits 1 and lists problems, if any

It checks shape only (files exist, names are canonical, outcomes are known), never
whether a matcher gets the answers right: that is the benchmark's job.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from decisiontree.conditions import ConditionError, canonical_key  # noqa: E402
from decisiontree.flags import canonical_flag  # noqa: E402

ACTIONS = {"set_flag", "remove_flag", "set_env", "pin_version", "patch", "other"}
OUTCOMES = {"resolves", "partial", "no_effect", "worse"}
HELPFUL = {"resolves", "partial"}
FINDING_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
LABEL_KEYS = {"gpus", "models", "frameworks", "flags", "error_types", "fixes"}
MIN_FINDINGS, MIN_UNRELATED, MIN_WRITEUPS = 35, 30, 10


def is_canonical_flag(name: str) -> bool:
    """Written as the flag tables name it: no dashes, the newest spelling (not `nsa-*`)."""
    return bool(name) and canonical_flag(name) == name and not name.startswith("-")


def check_change(change: dict[str, Any], where: str) -> list[str]:
    problems = []
    if change.get("action") not in ACTIONS:
        problems.append(f"{where}: unknown action {change.get('action')!r}")
    name = change.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{where}: change without a name")
    elif change.get("action") in ("set_flag", "remove_flag") and not is_canonical_flag(name):
        problems.append(f"{where}: flag name {name!r} is not canonical")
    if not isinstance(change.get("value"), str | None):
        problems.append(f"{where}: value must be a string or null")
    return problems


def check_fix(fix: dict[str, Any], where: str) -> list[str]:
    problems = [] if fix.get("summary") else [f"{where}: fix without a summary"]
    if fix.get("outcome") not in OUTCOMES:
        problems.append(f"{where}: unknown outcome {fix.get('outcome')!r}")
    changes = fix.get("changes") or []
    if not changes:
        problems.append(f"{where}: fix without changes")
    for n, change in enumerate(changes):
        problems += check_change(change, f"{where} change {n}")
    return problems


def check_condition(condition: dict[str, Any], where: str) -> list[str]:
    key, value = condition.get("key"), condition.get("value")
    if not isinstance(value, str) or not value:
        return [f"{where}: condition without a value"]
    if not isinstance(key, str):
        return [f"{where}: condition without a key"]
    try:
        canonical = canonical_key(key)
    except ConditionError:
        return [f"{where}: unknown condition key {key!r}"]
    return [] if canonical == key else [f"{where}: condition key {key!r} is not {canonical!r}"]


def check_report_path(root: Path, path: Any, finding_id: str, where: str) -> list[str]:
    if not isinstance(path, str) or not path.startswith(f"pairs/{finding_id}."):
        return [f"{where}: {path!r} is not pairs/{finding_id}.<x>.txt"]
    file = root / path
    if not file.is_file() or not file.read_text(encoding="utf-8").strip():
        return [f"{where}: {path} is missing or empty"]
    return []


def check_finding(root: Path, finding: dict[str, Any]) -> list[str]:
    fid = str(finding.get("id", ""))
    where = f"finding {fid!r}"
    problems = [] if FINDING_ID.match(fid) else [f"{where}: id is not a slug"]
    for text_field in ("title", "cause"):
        if not str(finding.get(text_field, "")).strip():
            problems.append(f"{where}: empty {text_field}")
    fixes = finding.get("fixes") or []
    if not any(fix.get("outcome") in HELPFUL for fix in fixes):
        problems.append(f"{where}: no fix that resolves or partly resolves it")
    for n, fix in enumerate(fixes):
        problems += check_fix(fix, f"{where} fix {n}")
    for condition in finding.get("conditions", []):
        problems += check_condition(condition, where)
    queries = finding.get("query_reports") or []
    if not queries:
        problems.append(f"{where}: no query reports")
    for path in [finding.get("known_report"), *queries]:
        problems += check_report_path(root, path, fid, where)
    return problems


def referenced_reports(manifest: dict[str, Any]) -> list[str]:
    paths = list(manifest["unrelated"])
    for finding in manifest["findings"]:
        paths += [finding["known_report"], *finding["query_reports"]]
    return paths


def check_coverage(root: Path, manifest: dict[str, Any]) -> list[str]:
    """Every report file is listed exactly once, and nothing listed is missing."""
    listed = referenced_reports(manifest)
    problems = [f"{p} is listed twice" for p in sorted(set(listed)) if listed.count(p) > 1]
    on_disk = {str(p.relative_to(root)) for p in root.glob("*/*.txt")}
    problems += [f"{p} is not in the manifest" for p in sorted(on_disk - set(listed))]
    missing = set(listed) - on_disk
    problems += [f"{p} is listed but missing" for p in sorted(missing)]
    return problems


def check_reports(root: Path) -> list[str]:
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    findings, unrelated = manifest.get("findings", []), manifest.get("unrelated", [])
    problems = []
    ids = [f.get("id") for f in findings]
    problems += [f"duplicate id {i!r}" for i in sorted(set(ids)) if ids.count(i) > 1]
    for finding in findings:
        problems += check_finding(root, finding)
    problems += [
        f"{p!r} is not under unrelated/" for p in unrelated if not p.startswith("unrelated/")
    ]
    if len(findings) < MIN_FINDINGS or len(unrelated) < MIN_UNRELATED:
        problems.append(f"too few: {len(findings)} findings, {len(unrelated)} unrelated")
    return problems + check_coverage(root, manifest)


def check_label_entries(labels: dict[str, Any], where: str) -> list[str]:
    problems = []
    for gpu in labels["gpus"]:
        if not (gpu.get("name") and re.match(r"^sm_\d+$", str(gpu.get("arch")))):
            problems.append(f"{where}: gpu {gpu!r} needs a name and an sm_XX arch")
        if not isinstance(gpu.get("count"), int) or gpu["count"] < 1:
            problems.append(f"{where}: gpu {gpu.get('name')!r} needs a positive count")
    for name, value in labels["flags"].items():
        if not is_canonical_flag(name) or not isinstance(value, str):
            problems.append(f"{where}: flag {name!r}={value!r} is not canonical")
    for fix in labels["fixes"]:
        if not fix.get("change") or fix.get("outcome") not in OUTCOMES:
            problems.append(f"{where}: bad fix label {fix!r}")
    return problems


def check_labels(path: Path) -> list[str]:
    labels = json.loads(path.read_text(encoding="utf-8"))
    keys = set(labels)
    if keys != LABEL_KEYS:
        return [f"{path.name}: keys {sorted(keys)} != {sorted(LABEL_KEYS)}"]
    return check_label_entries(labels, path.name)


EPISODE_OUTCOMES = OUTCOMES | {"proposed"}


def check_episodes(path: Path, fixes: list[dict[str, Any]] | None = None) -> list[str]:
    """Symptoms with markers; every attempt on one of them; the attempts are the labelled fixes."""
    episodes = json.loads(path.read_text(encoding="utf-8"))
    symptoms, attempts = episodes.get("symptoms") or {}, episodes.get("attempts") or []
    problems = [
        f"{path.name}: symptom {name!r} needs markers"
        for name, symptom in symptoms.items()
        if not symptom.get("markers")
    ]
    for attempt in attempts:
        if attempt.get("symptom") not in symptoms or not attempt.get("change"):
            problems.append(f"{path.name}: attempt {attempt!r} is on no labelled symptom")
        if attempt.get("outcome") not in EPISODE_OUTCOMES:
            problems.append(f"{path.name}: unknown outcome in {attempt!r}")
    told = sorted((a.get("change"), a.get("outcome")) for a in attempts)
    if fixes is not None and told != sorted((f["change"], f["outcome"]) for f in fixes):
        problems.append(f"{path.name}: attempts differ from the fixes of the labels")
    return problems


def check_writeups(root: Path) -> list[str]:
    docs = [p for p in sorted(root.iterdir()) if p.suffix in (".md", ".txt")]
    problems = []
    for doc in docs:
        labels = doc.with_name(f"{doc.stem}.labels.json")
        problems += check_labels(labels) if labels.is_file() else [f"{doc.name}: no labels"]
        episodes = doc.with_name(f"{doc.stem}.episodes.json")
        if not episodes.is_file():
            problems.append(f"{doc.name}: no episode labels")
        elif labels.is_file():
            fixes = json.loads(labels.read_text(encoding="utf-8"))["fixes"]
            problems += check_episodes(episodes, fixes)
    for labels in root.glob("*.labels.json"):
        stem = labels.name.removesuffix(".labels.json")
        if not any(d.stem == stem for d in docs):
            problems.append(f"{labels.name}: no write-up beside it")
    if len(docs) < MIN_WRITEUPS:
        problems.append(f"too few write-ups: {len(docs)}")
    return problems


def main() -> int:
    problems = check_reports(HERE / "reports") + check_writeups(HERE / "writeups")
    for seed in sorted((HERE / "seeds").glob("*.episodes.json")):
        problems += check_episodes(seed)
    for problem in problems:
        print(problem)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
