"""Print the mutation score of the last `make mutation` run.

Read from mutmut's own results (mutants/**/*.py.meta). Score = (killed by a test +
rejected by mypy --strict) / every mutant judged (those two, survived, timeout,
suspicious, no tests): every mutant that nothing noticed counts against it; a mutant
the run did not take (`make mutation MUTATE=...`, "not checked") counts in neither.
A table per module follows, then the mutants not killed, by name; `.venv/bin/mutmut
show NAME` prints one. bench/README.md "Mutation testing" lists the equivalent ones
and why.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

MUTANTS = Path("mutants")
CAUGHT = ("killed", "caught_by_type_check")
COUNTED = (*CAUGHT, "survived", "timeout", "suspicious", "no_tests")


def status_of(exit_code: int | None) -> str:
    """mutmut's reading of a mutant's exit code (mutmut.stats.status_by_exit_code)."""
    from mutmut.stats import status_by_exit_code

    return str(status_by_exit_code[exit_code]).replace(" ", "_")


def results() -> dict[str, dict[str, str]]:
    """module -> mutant name -> status, for the modules this run took."""
    found: dict[str, dict[str, str]] = {}
    for meta in sorted(MUTANTS.glob("**/*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        statuses = {name: status_of(code) for name, code in codes.items()}
        if any(status != "not_checked" for status in statuses.values()):
            found[str(meta.relative_to(MUTANTS)).removesuffix(".meta")] = statuses
    return found


def score(caught: int, judged: int) -> str:
    return f"{100 * caught / judged:.1f}%" if judged else "-"


def row(module: str, counts: Counter[str]) -> str:
    judged = sum(counts[key] for key in COUNTED)
    caught = sum(counts[key] for key in CAUGHT)
    return (
        f"{module:<28}{judged:>8}{counts['killed']:>9}{counts['caught_by_type_check']:>8}"
        f"{judged - caught:>11}{score(caught, judged):>8}"
    )


def main() -> int:
    found = results()
    if not found:
        print(f"no mutation results under {MUTANTS}/: run `make mutation` first", file=sys.stderr)
        return 1
    total: Counter[str] = Counter()
    heads = ("mutants", 8), ("by tests", 9), ("by mypy", 8), ("not killed", 11), ("score", 8)
    print(f"{'module':<28}" + "".join(f"{head:>{width}}" for head, width in heads))
    for module, statuses in found.items():
        counts = Counter(statuses.values())
        total.update(counts)
        print(row(module, counts))
    print(row("all", total))
    print()
    for key in (*COUNTED, "skipped", "segfault", "not_checked"):
        print(f"{key:<22}{total[key]:>6}")
    judged = sum(total[key] for key in COUNTED)
    caught = sum(total[key] for key in CAUGHT)
    print(
        f"mutation score: {score(caught, judged)} ({caught} of {judged}: "
        f"{total['killed']} killed by a test, {total['caught_by_type_check']} by mypy)"
    )
    print("not killed:")
    missed = [
        f"    {name}: {status}"
        for statuses in found.values()
        for name, status in statuses.items()
        if status not in (*CAUGHT, "not_checked")
    ]
    print("\n".join(missed) or "    none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
