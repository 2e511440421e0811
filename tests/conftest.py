"""Suite-wide fixtures.

`make test` starts PostgreSQL, Redis and sshd and exports their addresses; the
suite refuses to run its database tests on anything but PostgreSQL under CI, so
a missing service fails the run instead of being skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from tests.services import in_ci

STARTER = Path(__file__).resolve().parents[1] / "knowledge"


@pytest.fixture
def vocabulary(db: None) -> None:
    """The GPUs and launch flags of the shipped data files, as rows."""
    call_command("load_vocabulary", verbosity=0)


@pytest.fixture
def starter_kb(vocabulary: None) -> None:
    """The knowledge base `make run` loads: the shipped FINDINGS.md, published."""
    call_command("ingest", str(STARTER), "--publish", verbosity=0)


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Throttles and lockouts count in the cache (Redis under `make test`): every test
    starts with none of another test's requests counted."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def search_worker_keeps_up(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search asks a Celery worker to build queued documents and reads what is built.
    A test's rows live in a transaction no worker process can see, so here the search's
    ask runs the worker's task in the test's process, as a worker that keeps up would.
    tests/kb/test_search_backlog.py checks the real path (mark `real_search_worker`):
    the search builds nothing, the worker of `make test` builds the backlog."""
    uses_database = request.node.get_closest_marker("django_db") or {
        "db",
        "transactional_db",
    } & set(request.fixturenames)
    if not uses_database or request.node.get_closest_marker("real_search_worker"):
        return
    from kb.search import engine
    from kb.search.refresh import refresh_queued

    monkeypatch.setattr(engine, "ask_if_behind", refresh_queued)


def pytest_configure(config: pytest.Config) -> None:
    engine = settings.DATABASES["default"]["ENGINE"]
    # tests/search/test_on_sqlite.py runs the search tests on SQLite on purpose.
    on_sqlite_by_design = os.environ.get("FIXGRAPH_TEST_ON_SQLITE") == "1"
    if in_ci() and "postgresql" not in engine and not on_sqlite_by_design:
        raise pytest.UsageError(
            f"CI=true but the database is {engine}: run the suite with `make test`, "
            "which starts PostgreSQL and exports DATABASE_URL."
        )
