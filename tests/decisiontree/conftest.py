"""Under `make mutation` only: each mutant's tests start with empty caches and run fastest first.

mutmut forks every mutant's run from a process that has imported and collected the
tests; whatever a `functools.cache` of decisiontree/ computed there (the vocabulary,
the flag tables, the environment policy) was computed by the unmutated code, and a
mutant of the code that builds it would pass every test. So each run starts by
emptying those caches (about 12 ms to build the flag tables and the vocabulary again).
mutmut's stats run (one run of the tests that maps each function to the tests calling
it) empties them before every test, so that each test is mapped to the code that
builds the caches it reads, not only the first test that happened to fill them.

mutmut runs a mutant's tests in no particular order and stops at the first that
fails; a mutant the quick unit tests catch need not wait for the pinned answers of
tests/decisiontree/test_lookup_answers.py. The durations are those mutmut measured
on the unmutated code (`mutmut-stats.json` in the directory it runs the tests in).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

STATS = Path("mutmut-stats.json")
# Kept through mutmut's stats run: the background's parsed messages take 65 ms to build
# again, most of what emptying every cache before every test would cost (bench/README.md).
KEPT_IN_STATS = frozenset({"decisiontree.match.ordinary_messages"})


def empty_decisiontree_caches(keep: frozenset[str] = frozenset()) -> None:
    for name, module in list(sys.modules.items()):
        if name == "decisiontree" or name.startswith("decisiontree."):
            for key, value in list(vars(module).items()):
                cache_clear = getattr(value, "cache_clear", None)
                if callable(cache_clear) and f"{name}.{key}" not in keep:
                    cache_clear()


def shared_by_the_module(fixture_name: str, config: pytest.Config) -> str:
    """A fixture's scope: "module", but one per test in mutmut's stats run.

    Set up once for a module, a fixture's code is traced in the first test that asked
    for it only, and its mutants would run against that one test (a finding's derived
    model and framework were mapped to a test that never looks at conditions).
    """
    return "function" if os.environ.get("MUTANT_UNDER_TEST") == "stats" else "module"


def pytest_runtest_setup(item: pytest.Item) -> None:
    # mutmut's stats run maps each function to the tests that call it. A cache filled
    # by collection or an earlier test hides the code that builds it from every later
    # test, and that code's mutants then run against one test or none.
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        empty_decisiontree_caches(keep=KEPT_IN_STATS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        return
    empty_decisiontree_caches()
    if not STATS.exists():
        return
    durations = json.loads(STATS.read_text())["duration_by_test"]
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
