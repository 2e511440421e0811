"""Under `make mutation` only: each mutant's tests run fastest first.

mutmut runs a mutant's tests in no particular order and stops at the first that
fails; a mutant the quick unit tests catch need not wait for the pinned answers of
tests/decisiontree/test_lookup_answers.py. The durations are those mutmut measured
on the unmutated code (`mutmut-stats.json` in the directory it runs the tests in).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

STATS = Path("mutmut-stats.json")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", "") or not STATS.exists():
        return
    durations = json.loads(STATS.read_text())["duration_by_test"]
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
