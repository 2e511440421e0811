"""Print the mutation score of the last `make mutation` run (mutmut's own counts).

Score = killed / (killed + survived + timeout + suspicious + no tests): every mutant
that no test noticed counts against it. A table per mutated module follows, then the
mutants not killed, by name; `.venv/bin/mutmut show NAME` prints one.
bench/README.md "Mutation testing" lists the equivalent ones and why.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

MUTANTS = Path("mutants")
STATS = MUTANTS / "mutmut-cicd-stats.json"
COUNTED = ("killed", "survived", "timeout", "suspicious", "no_tests")


def status_of(exit_code: int | None) -> str:
    """mutmut's reading of a mutant's exit code (mutmut.stats.status_by_exit_code)."""
    from mutmut.stats import status_by_exit_code

    return str(status_by_exit_code[exit_code]).replace(" ", "_")


def per_module() -> dict[str, Counter[str]]:
    found: dict[str, Counter[str]] = {}
    for meta in sorted(MUTANTS.glob("**/*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        module = str(meta.relative_to(MUTANTS)).removesuffix(".meta")
        found[module] = Counter(status_of(code) for code in codes.values())
    return found


def score(killed: int, judged: int) -> str:
    return f"{100 * killed / judged:.1f}%" if judged else "-"


def main() -> int:
    if not STATS.exists():
        print(f"{STATS} is missing: run `make mutation` first", file=sys.stderr)
        return 1
    stats = json.loads(STATS.read_text())
    judged = sum(stats[key] for key in COUNTED)
    print(f"{'module':<28}{'mutants':>8}{'killed':>8}{'not killed':>11}{'score':>8}")
    for module, counts in per_module().items():
        module_judged = sum(counts[key] for key in COUNTED)
        missed = module_judged - counts["killed"]
        print(
            f"{module:<28}{sum(counts.values()):>8}{counts['killed']:>8}{missed:>11}"
            f"{score(counts['killed'], module_judged):>8}"
        )
    killed = stats["killed"]
    print(
        f"{'all':<28}{stats['total']:>8}{killed:>8}{judged - killed:>11}{score(killed, judged):>8}"
    )
    print()
    for key in (*COUNTED, "skipped", "segfault"):
        print(f"{key:<12}{stats[key]:>6}")
    print(f"mutation score: {score(killed, judged)} ({killed} of {judged} killed)")
    results = subprocess.run(
        [str(Path(sys.executable).parent / "mutmut"), "results"],
        capture_output=True,
        text=True,
        check=False,
    )
    print("not killed:")
    print(results.stdout.rstrip() or "    none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
