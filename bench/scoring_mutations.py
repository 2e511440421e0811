"""Seven deliberate mutations of the diagnosis scoring; the pure tests must catch each.

mutmut (`make mutation`) mutates code. The numbers that score a diagnosis — the
condition and evidence factors of `decisiontree/data/ranking.json`, the verifier's
known cut-off in `decisiontree/data/matcher_tuning.json` — are data, which it leaves
alone; and a version bound compared with `<` instead of `<=` is one of its mutants
among a thousand. Each mutation below is applied to a copy of the repository, the
tests of the diagnosis are run there (`-x`, no services), and the table says whether
they failed ("caught") as they must.

    .venv/bin/python bench/scoring_mutations.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LEFT_OUT = (".git", ".venv", "mutants", "var", "node_modules", "__pycache__", ".mypy_cache")
TESTS = [
    "tests/decisiontree/test_diagnose.py",
    "tests/decisiontree/test_walk.py",
    "tests/decisiontree/test_walk_siblings.py",
    "tests/decisiontree/test_condition_ranking.py",
    "tests/decisiontree/test_derived_conditions.py",
    "tests/decisiontree/test_fix_evidence.py",
    "tests/decisiontree/test_match.py",
    "tests/decisiontree/test_no_match.py",
    "tests/decisiontree/test_nearest_explained.py",
    "tests/decisiontree/test_questions.py",
    "tests/decisiontree/test_version_conditions.py",
    "tests/decisiontree/test_versions.py",
    "tests/decisiontree/test_lookup_answers.py",
]
RANKING = "decisiontree/data/ranking.json"
MATCHER = "decisiontree/data/matcher_tuning.json"


@dataclass(frozen=True)
class Mutation:
    what: str
    path: str
    apply: Callable[[str], str]


def in_json(*keys: str, to: Callable[[Any, Any], Any]) -> Callable[[str], str]:
    """Set data[keys...] to `to(old value, whole data)`."""

    def apply(text: str) -> str:
        data = json.loads(text)
        node = data
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = to(node[keys[-1]], data)
        return json.dumps(data, indent=1)

    return apply


def replaced(old: str, new: str) -> Callable[[str], str]:
    def apply(text: str) -> str:
        if text.count(old) != 1:
            raise SystemExit(
                f"the mutation's text {old!r} is not in the code once: update this bench"
            )
        return text.replace(old, new)

    return apply


MUTATIONS = (
    Mutation(
        "a met condition weighs no more than an unknown one",
        RANKING,
        in_json("condition", "met", "value", to=lambda old, data: 1.0),
    ),
    Mutation(
        "a contradicted condition costs nothing",
        RANKING,
        in_json("condition", "contradicted", "value", to=lambda old, data: 1.0),
    ),
    Mutation(
        "a contradicted derived condition costs as much as a stated one",
        RANKING,
        in_json(
            "condition",
            "contradicted_derived",
            "value",
            to=lambda old, data: data["condition"]["contradicted"]["value"],
        ),
    ),
    Mutation(
        "a run on the user's GPU counts as one elsewhere",
        RANKING,
        in_json(
            "validated",
            "same_arch",
            "value",
            to=lambda old, data: data["validated"]["other_arch"]["value"],
        ),
    ),
    Mutation(
        "another symptom's fix counts double the matched one's",
        RANKING,
        in_json("same_cause_step", "value", to=lambda old, data: 2 * old),
    ),
    Mutation(
        "every finding reached is shown, however weak its match",
        RANKING,
        in_json("relative_cutoff", "value", to=lambda old, data: 0.0),
    ),
    Mutation(
        "the known cut-off drops to the similar one",
        MATCHER,
        in_json("verifier", "known", to=lambda old, data: data["verifier"]["similar"]),
    ),
    Mutation(
        "a release at its upper bound no longer meets it (<= becomes <)",
        "decisiontree/versions.py",
        replaced("have <= bound", "have < bound"),
    ),
)


def caught(mutation: Mutation, copy: Path) -> tuple[bool, float]:
    target = copy / mutation.path
    original = target.read_text(encoding="utf-8")
    target.write_text(mutation.apply(original), encoding="utf-8")
    try:
        started = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *TESTS],
            cwd=copy,
            env={**os.environ, "DEBUG": "True"},
            capture_output=True,
            text=True,
            check=False,
        )
        if run.returncode not in (0, 1):
            raise SystemExit(f"pytest could not run ({run.returncode}):\n{run.stdout[-2000:]}")
        return run.returncode == 1, time.monotonic() - started
    finally:
        target.write_text(original, encoding="utf-8")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="scoring-mutations-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(*LEFT_OUT))
        print(f"{'mutation':<66}{'caught':>8}{'s':>6}")
        missed = 0
        for mutation in MUTATIONS:
            found, seconds = caught(mutation, copy)
            missed += not found
            print(f"{mutation.what:<66}{'yes' if found else 'NO':>8}{seconds:>6.0f}")
    print(f"{len(MUTATIONS) - missed} of {len(MUTATIONS)} caught")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
