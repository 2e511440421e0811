"""Suite-wide fixtures.

`make test` starts PostgreSQL, Redis and sshd and exports their addresses; the
suite refuses to run its database tests on anything but PostgreSQL under CI, so
a missing service fails the run instead of being skipped.
"""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.services import in_ci


def pytest_configure(config: pytest.Config) -> None:
    engine = settings.DATABASES["default"]["ENGINE"]
    if in_ci() and "postgresql" not in engine:
        raise pytest.UsageError(
            f"CI=true but the database is {engine}: run the suite with `make test`, "
            "which starts PostgreSQL and exports DATABASE_URL."
        )
