"""Suite-wide fixtures.

`make test` starts PostgreSQL, Redis and sshd and exports their addresses; the
suite refuses to run its database tests on anything but PostgreSQL under CI, so
a missing service fails the run instead of being skipped.
"""

from __future__ import annotations

import os

import pytest
from django.conf import settings


def pytest_configure(config: pytest.Config) -> None:
    engine = settings.DATABASES["default"]["ENGINE"]
    if os.environ.get("CI") == "true" and "postgresql" not in engine:
        raise pytest.UsageError(
            f"CI=true but the database is {engine}: run the suite with `make test`, "
            "which starts PostgreSQL and exports DATABASE_URL."
        )


def services_missing_reason() -> str | None:
    if os.environ.get("FIXGRAPH_SERVICES") == "1":
        return None
    return "PostgreSQL/Redis/sshd are not running: use `make test`"


@pytest.fixture
def needs_services() -> None:
    """Fail under CI, skip on a developer's machine, when the services are not up."""
    reason = services_missing_reason()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)
