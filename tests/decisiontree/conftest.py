"""Under `make mutation` only: each mutant's tests start with empty caches and run fastest first.

mutmut forks every mutant's run from a process that has imported and collected the
tests; whatever a `functools.cache` of decisiontree/ computed there (the vocabulary,
the flag tables, the environment policy) was computed by the unmutated code, and a
mutant of the code that builds it would pass every test. So each run starts by
emptying those caches (about 12 ms to build the flag tables and the vocabulary again).

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


def empty_decisiontree_caches() -> None:
    for name, module in list(sys.modules.items()):
        if name == "decisiontree" or name.startswith("decisiontree."):
            for value in list(vars(module).values()):
                cache_clear = getattr(value, "cache_clear", None)
                if callable(cache_clear):
                    cache_clear()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        return
    empty_decisiontree_caches()
    if not STATS.exists():
        return
    durations = json.loads(STATS.read_text())["duration_by_test"]
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
