"""Print the mutation score of the last `make mutation` run.

Read from mutmut's own results (mutants/**/*.py.meta) and the plan of
bench/mutation_run.py (mutants/sample.json). A mutant is caught when a test fails on
it or mypy --strict rejects it; it counts against the score when it is judged and
nothing noticed it (survived, timeout, suspicious, no tests); a mutant the run did
not take ("not checked") counts in neither.

Per module: a module of `census` ran every mutant, its score is exact; another
module ran a seeded random sample of its mutants, its score is the sample's with a
95 % Wilson interval. For decisiontree/ as a whole the modules are the strata of a
stratified random sample (Cochran, *Sampling Techniques*, 3rd ed., ch. 5): each
module's score weighed by its share of the package's mutants, variance
sum(W_h^2 (1 - n_h/N_h) p_h (1 - p_h) / (n_h - 1)) over the sampled modules (the
census modules add none), and a 95 % normal interval. `make mutation MUTATE=...`
scores what it ran, unweighed. The mutants not killed follow, by name; `.venv/bin/mutmut
show NAME` prints one; bench/README.md "Mutation testing" lists the equivalent ones.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MUTANTS = Path("mutants")
PLAN = MUTANTS / "sample.json"
CAUGHT = ("killed", "caught_by_type_check")
COUNTED = (*CAUGHT, "survived", "timeout", "suspicious", "no_tests")
Z95 = 1.959964


def status_of(exit_code: int | None) -> str:
    """mutmut's reading of a mutant's exit code (mutmut.stats.status_by_exit_code)."""
    from mutmut.stats import status_by_exit_code

    return str(status_by_exit_code[exit_code]).replace(" ", "_")


def results() -> dict[str, dict[str, str]]:
    """module -> mutant name -> status, for every mutated module."""
    found: dict[str, dict[str, str]] = {}
    for meta in sorted(MUTANTS.glob("**/*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if codes:
            module = str(meta.relative_to(MUTANTS)).removesuffix(".meta")
            found[module] = {name: status_of(code) for name, code in codes.items()}
    return found


@dataclass
class Stratum:
    """One module: its mutants, and what happened to those the run judged."""

    module: str
    mutants: int
    census: bool
    counts: Counter[str]

    @property
    def judged(self) -> int:
        return sum(self.counts[key] for key in COUNTED)

    @property
    def caught(self) -> int:
        return sum(self.counts[key] for key in CAUGHT)

    @property
    def score(self) -> float | None:
        return self.caught / self.judged if self.judged else None


def wilson(caught: int, judged: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion (Wilson 1927)."""
    p = caught / judged
    centre = p + Z95**2 / (2 * judged)
    spread = Z95 * math.sqrt(p * (1 - p) / judged + Z95**2 / (4 * judged**2))
    scale = 1 + Z95**2 / judged
    return (centre - spread) / scale, (centre + spread) / scale


def stratified(strata: list[Stratum]) -> tuple[float, float, float]:
    """The package's score from its strata and its 95 % interval (Cochran, ch. 5)."""
    everyone = sum(stratum.mutants for stratum in strata)
    estimate = variance = 0.0
    for stratum in strata:
        p = stratum.score
        if p is None:
            continue
        weight = stratum.mutants / everyone
        estimate += weight * p
        n = stratum.judged
        if not stratum.census and 1 < n < stratum.mutants:
            variance += weight**2 * (1 - n / stratum.mutants) * p * (1 - p) / (n - 1)
    judged_share = sum(s.mutants for s in strata if s.score is not None) / everyone
    estimate /= judged_share
    spread = Z95 * math.sqrt(variance) / judged_share
    return estimate, max(0.0, estimate - spread), min(1.0, estimate + spread)


def estimated(strata: list[Stratum]) -> str:
    estimate, low, high = stratified(strata)
    return f"{percent(estimate)}, 95% interval {percent(low)}-{percent(high)}"


def percent(value: float | None) -> str:
    return f"{100 * value:.1f}%" if value is not None else "-"


def row(stratum: Stratum) -> str:
    counts = stratum.counts
    if stratum.census or stratum.judged == stratum.mutants:
        interval = "exact"
    elif stratum.judged:
        low, high = wilson(stratum.caught, stratum.judged)
        interval = f"{percent(low)}-{percent(high)}"
    else:
        interval = "-"
    return (
        f"{stratum.module:<38}{stratum.mutants:>8}{stratum.judged:>6}{counts['killed']:>9}"
        f"{counts['caught_by_type_check']:>8}{stratum.judged - stratum.caught:>11}"
        f"{percent(stratum.score):>8}  {interval}"
    )


def strata_of(found: dict[str, dict[str, str]], plan: dict[str, Any]) -> list[Stratum]:
    modules: dict[str, dict[str, Any]] = plan.get("modules", {})
    strata = []
    for module, statuses in found.items():
        entry = modules.get(module)
        counts = Counter(statuses.values())
        if entry is None:  # a MUTATE run, or one before the plan: score what it ran
            if any(status != "not_checked" for status in statuses.values()):
                strata.append(Stratum(module, len(statuses), True, counts))
            continue
        strata.append(Stratum(module, int(entry["mutants"]), bool(entry["census"]), counts))
    return strata


def main() -> int:
    found = results()
    if not found:
        print(f"no mutation results under {MUTANTS}/: run `make mutation` first", file=sys.stderr)
        return 1
    plan: dict[str, Any] = json.loads(PLAN.read_text()) if PLAN.exists() else {}
    strata = strata_of(found, plan)
    if "seed" in plan:
        print(
            f"every mutant of the census modules; of the others a random sample stratified "
            f"by module, seed {plan['seed']}, sample_size {plan['sample_size']} "
            f"([tool.fixgraph.mutation] in pyproject.toml)"
        )
    elif "mutate" in plan:
        print(f"MUTATE={' '.join(plan['mutate'])}: every mutant it names")
    heads = (
        ("module", -38),
        ("mutants", 8),
        ("run", 6),
        ("by tests", 9),
        ("by mypy", 8),
        ("not killed", 11),
        ("score", 8),
        ("  95% interval", -16),
    )
    print(
        "".join(f"{head:<{-width}}" if width < 0 else f"{head:>{width}}" for head, width in heads)
    )
    for stratum in strata:
        print(row(stratum))
    total: Counter[str] = Counter()
    for stratum in strata:
        total.update(stratum.counts)
    parts = [
        ("census" if "seed" in plan else "run in full", [s for s in strata if s.census]),
        ("sampled", [s for s in strata if not s.census]),
    ]
    print()
    for name, part in parts:
        if part:
            judged = sum(s.judged for s in part)
            caught = sum(s.caught for s in part)
            mutants = sum(s.mutants for s in part)
            print(f"{name} modules: {len(part)}, {mutants} mutants, {judged} run, {caught} caught")
    for key in (*COUNTED, "skipped", "segfault"):
        print(f"{key:<22}{total[key]:>6}")
    full, sampled = parts[0][1], parts[1][1]
    if full:
        judged = sum(s.judged for s in full)
        caught = sum(s.caught for s in full)
        score = percent(caught / judged if judged else None)
        what = "the census modules" if "seed" in plan else "the mutants this run took"
        print(f"mutation score of {what} (exact): {score} ({caught} of {judged})")
    if sampled:
        print(f"sampled modules' score (estimate): {estimated(sampled)}")
        print(f"mutation score of decisiontree/ (estimate): {estimated(strata)}")
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
