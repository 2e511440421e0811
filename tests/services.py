"""Whether the real services `make test` starts (PostgreSQL, Redis, sshd) are up."""

from __future__ import annotations

import os

import pytest

RUN_HINT = "PostgreSQL, Redis and sshd are not running: run the suite with `make test`"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def require_services() -> None:
    """Fail under CI, skip on a developer's machine, when the services are not up."""
    if os.environ.get("FIXGRAPH_SERVICES") == "1":
        return
    if in_ci():
        pytest.fail(RUN_HINT, pytrace=False)
    pytest.skip(RUN_HINT)
