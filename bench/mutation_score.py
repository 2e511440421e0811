"""Print the mutation score of the last `make mutation` run (mutmut's own counts).

Score = killed / (killed + survived + timeout + suspicious + no tests): every mutant
that no test noticed counts against it. The surviving mutants follow, by name;
`.venv/bin/mutmut show NAME` prints one. bench/README.md lists the equivalent ones.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

STATS = Path("mutants/mutmut-cicd-stats.json")


def main() -> int:
    if not STATS.exists():
        print(f"{STATS} is missing: run `make mutation` first", file=sys.stderr)
        return 1
    stats = json.loads(STATS.read_text())
    counted = ("killed", "survived", "timeout", "suspicious", "no_tests")
    judged = sum(stats[key] for key in counted)
    print(f"{'mutants':<12}{stats['total']:>6}")
    for key in (*counted, "skipped", "segfault"):
        print(f"{key:<12}{stats[key]:>6}")
    score = 100 * stats["killed"] / judged if judged else 0.0
    print(f"mutation score: {score:.1f}% ({stats['killed']} of {judged} killed)")
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
