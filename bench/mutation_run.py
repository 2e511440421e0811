"""Run `make mutation`: every mutant of the deciding modules, a seeded sample of the rest.

mutmut 3.8.1 mutates every module of decisiontree/ (`[tool.mutmut]`); this script
first has mutmut write its `mutants/` tree (the same generation step `mutmut run`
starts with, which `mutmut run` then finds up to date and keeps), reads the mutant
names from mutmut's `mutants/**/*.py.meta` files, and chooses which of them to run:

- every mutant of the modules named in `census` of `[tool.fixgraph.mutation]`
  (pyproject.toml): the ones that decide an answer, scored exactly;
- of every other module, a simple random sample of its mutants (a stratified
  random sample, one stratum per module), `sample_size` in all, allocated in
  proportion to each module's mutants with at least `min_per_module`, drawn by
  `random.Random(f"{seed}:{module}")` from the sorted names: the same names on
  every run while a module's mutants stay the same.

It writes the plan to `mutants/sample.json` (each module's mutants and how many were
chosen; `bench/mutation_score.py` weighs the sample by it) and hands over to
`mutmut run NAMES...`. With `MUTATE` set (mutmut's names with `*`) it runs those
instead of the plan, all of them. bench/README.md "Mutation testing".
"""

from __future__ import annotations

import bisect
import json
import os
import random
import sys
import tomllib
from pathlib import Path
from typing import Any

MUTANTS = Path("mutants")
PLAN = MUTANTS / "sample.json"


def settings() -> dict[str, Any]:
    data = tomllib.loads(Path("pyproject.toml").read_text("utf-8"))
    return dict(data["tool"]["fixgraph"]["mutation"])


def generate_mutants(max_children: int) -> None:
    """mutmut's own generation step (the start of `mutmut run`), nothing after it."""
    from mutmut.__main__ import create_mutants
    from mutmut.mutation.trampoline import set_mutant_under_test
    from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths

    set_mutant_under_test("mutant_generation")
    MUTANTS.mkdir(exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    create_mutants(max_children)


def mutants_by_module() -> dict[str, list[str]]:
    """'decisiontree/walk.py' -> its mutant names, sorted, from mutmut's .meta files."""
    found = {}
    for meta in sorted(MUTANTS.glob("decisiontree/**/*.py.meta")):
        names = sorted(json.loads(meta.read_text("utf-8"))["exit_code_by_key"])
        if names:
            found[str(meta.relative_to(MUTANTS)).removesuffix(".meta")] = names
    return found


def allocate(sizes: dict[str, int], total: int, least: int) -> dict[str, int]:
    """Proportional allocation of `total` over the strata, at least `least` each."""
    everyone = sum(sizes.values())
    return {
        module: min(size, max(least, round(total * size / everyone)))
        for module, size in sizes.items()
    }


def plan(found: dict[str, list[str]], config: dict[str, Any]) -> dict[str, Any]:
    census = set(config["census"])
    missing = census - set(found)
    if missing:
        raise SystemExit(f"census modules without mutants: {sorted(missing)}")
    sampled = {module: len(names) for module, names in found.items() if module not in census}
    sizes = allocate(sampled, int(config["sample_size"]), int(config["min_per_module"]))
    modules: dict[str, dict[str, Any]] = {}
    for module, names in found.items():
        if module in census:
            chosen = names
        else:
            chosen = sorted(
                random.Random(f"{config['seed']}:{module}").sample(names, sizes[module])
            )
        modules[module] = {"mutants": len(names), "census": module in census, "chosen": chosen}
    return {"seed": config["seed"], "sample_size": config["sample_size"], "modules": modules}


def mutmut_arguments(the_plan: dict[str, Any]) -> list[str]:
    """Patterns for the census modules first, then the sampled names one by one.

    mutmut tests every mutant's name against each argument in turn (`fnmatch`), so a
    census module costs one pattern, not a thousand names.
    """
    modules: dict[str, dict[str, Any]] = the_plan["modules"]
    patterns = [
        module.removesuffix(".py").replace("/", ".") + ".*"
        for module, entry in modules.items()
        if entry["census"]
    ]
    names = [name for entry in modules.values() if not entry["census"] for name in entry["chosen"]]
    return patterns + names


def type_checked_mutants() -> dict[str, Any]:
    """mutmut's mypy-first step, each error charged by mutmut's own line spans.

    The same as `mutmut.mutation.file_mutation.filter_mutants_with_type_checker`: one
    run of `type_check_command` over mutants/, each error charged to the mutant function
    whose lines hold it. mutmut finds those lines by parsing every mutated file again
    with libcst, about 4.7 min of one core for the 335,000 lines of decisiontree/'s
    mutants (8.4 s for fingerprint.py's 10,000); the line spans it wrote beside each
    file when it made the mutants (`*.py.spans`) give the same answer at once.
    """
    from mutmut.configuration import config
    from mutmut.mutation.data import MutantLineSpans
    from mutmut.mutation.file_mutation import FailedTypeCheckMutant, MutatedMethodLocation
    from mutmut.type_checking import run_type_checker
    from mutmut.utils.format_utils import get_mutant_name

    root = Path.cwd()
    os.chdir(MUTANTS)
    try:
        errors = run_type_checker(config().type_check_command)
    finally:
        os.chdir(root)
    spans: dict[Path, list[tuple[int, int, str]]] = {}
    caught: dict[str, Any] = {}
    for error in errors:
        path = error.file_path.relative_to((root / MUTANTS).absolute())
        if path not in spans:
            index = MutantLineSpans.load(path)
            found = index.span_by_function_name.items() if index else ()
            spans[path] = sorted((span.start, span.end, name) for name, span in found)
        if not spans[path]:  # not a mutated file: mutmut passes over it too
            continue
        starts = [start for start, _, _ in spans[path]]
        at = bisect.bisect_right(starts, error.line_number) - 1
        if at < 0 or spans[path][at][1] < error.line_number:
            raise SystemExit(
                f"mypy found an error outside every mutant: {path}:{error.line_number} "
                f"({error.error_description}); `make lint` should be clean before `make mutation`"
            )
        start, end, function = spans[path][at]
        name = get_mutant_name(path, function)
        where = MutatedMethodLocation(error.file_path, function, start, end)
        caught[name] = FailedTypeCheckMutant(method_location=where, name=name, error=error)
    return caught


def main() -> int:
    max_children = int(os.environ.get("MUTMUT_CHILDREN", "2"))
    generate_mutants(max_children)
    selection = os.environ.get("MUTATE", "").split()
    if selection:
        the_plan: dict[str, Any] = {"mutate": selection}
        arguments = selection
    else:
        the_plan = plan(mutants_by_module(), settings())
        arguments = mutmut_arguments(the_plan)
    PLAN.write_text(json.dumps(the_plan, indent=1), "utf-8")
    sys.stdout.flush()
    import mutmut.__main__

    # `mutmut run`, with its mypy-first step read from the line spans (above).
    mutmut.__main__.filter_mutants_with_type_checker = type_checked_mutants
    mutmut.__main__.cli(["run", "--max-children", str(max_children), *arguments])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
