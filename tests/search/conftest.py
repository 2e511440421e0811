"""The search tests run on both backends: on PostgreSQL in the suite (`make test`), and
again on SQLite, the database `make run` uses (see test_on_sqlite.py). Their fixtures
are the API's and the web pages', made with the ORM."""

from __future__ import annotations

from tests.api.conftest import (  # noqa: F401 (fixtures)
    blackwell,
    dsa_finding,
    hopper,
    make_token,
    oom_finding,
    reader,
    user,
    writer,
)
from tests.web.conftest import draft, reviewer  # noqa: F401 (fixtures)
