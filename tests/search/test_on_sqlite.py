"""The search tests once more on SQLite, the database `make run` uses (FTS5 where
PostgreSQL has tsvector and pg_trgm): in a child pytest with no DATABASE_URL, so
`make test` checks both backends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SEARCH_TESTS = Path(__file__).resolve().parent
ROOT = SEARCH_TESTS.parents[1]


@pytest.mark.postgresql  # this test is the SQLite run's parent
def test_the_search_tests_pass_on_sqlite(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": "",
        "FIXGRAPH_VAR_DIR": str(tmp_path),  # the child's database and secret key
        "FIXGRAPH_TEST_ON_SQLITE": "1",
    }
    child = subprocess.run(
        [sys.executable, "-m", "pytest", str(SEARCH_TESTS), "-q", "-p", "no:cacheprovider"]
        + ["-m", "not postgresql"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 0, child.stdout[-6000:] + child.stderr[-2000:]
    summary = child.stdout.splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, summary
