"""/healthz as a load balancer and an on-call engineer meet it: asked by the server's own
address over plain HTTP under the production settings, on a real gunicorn with the test
PostgreSQL, Redis cache and Redis broker, and with each of them gone in turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection

from tests.gunicorn import database_url, free_port, gunicorn, request
from tests.web.test_hardening import PRODUCTION, manage

pytestmark = [pytest.mark.services, pytest.mark.django_db]


def served_database() -> dict[str, str]:
    """The migrated database pytest-django made, for the server."""
    return {"DATABASE_URL": database_url(connection.settings_dict["NAME"])}


def healthz(port: int, host: str | None = None) -> tuple[int, dict[str, str], dict]:
    status, headers, body = request(
        port, "GET", "/healthz", headers={"Host": host or f"127.0.0.1:{port}"}
    )
    return status, headers, json.loads(body)


def test_a_probe_by_address_over_plain_http_gets_the_checks() -> None:
    with gunicorn(workers=1, **PRODUCTION, **served_database()) as port:
        status, headers, found = healthz(port)
        page_status, _, _ = request(port, "GET", "/", headers={"Host": f"127.0.0.1:{port}"})

    assert status == 200  # not the 400 of a host outside ALLOWED_HOSTS, nor a redirect
    assert "no-store" in headers["Cache-Control"]
    checks = found["checks"]
    assert {name for name, check in checks.items() if check["ok"]} >= {
        "database",
        "migrations",
        "cache",
        "broker",
    }
    assert checks["database"]["detail"].startswith("postgresql answered in ")
    assert checks["cache"]["detail"].startswith("redis answered in ")
    assert checks["broker"]["detail"].startswith("redis answered in ")
    # No worker runs for this test: the site answers, and says what waits.
    assert found["status"] == "degraded"
    assert checks["workers"] == {
        "ok": False,
        "required": False,
        "detail": "no worker is running: validation runs wait until one starts",
    }
    assert page_status == 400  # every other page still checks the host


def test_a_broker_that_does_not_answer_degrades_without_failing() -> None:
    closed = free_port()
    broker = f"redis://127.0.0.1:{closed}/1"
    with gunicorn(workers=1, CELERY_BROKER_URL=broker, **served_database()) as port:
        status, _, found = healthz(port)

    assert status == 200 and found["status"] == "degraded"
    broker = found["checks"]["broker"]
    assert broker["ok"] is False and broker["required"] is False
    assert broker["detail"].startswith("failed (") and str(closed) not in broker["detail"]
    assert found["checks"]["database"]["ok"] is True


def test_a_cache_that_does_not_answer_fails_the_probe() -> None:
    closed = free_port()
    cache = f"redis://127.0.0.1:{closed}/0"
    with gunicorn(workers=1, CACHE_URL=cache, **served_database()) as port:
        status, _, found = healthz(port)

    assert status == 503 and found["status"] == "failing"
    assert found["checks"]["cache"]["ok"] is False
    assert found["checks"]["database"]["ok"] is True


def test_a_database_that_does_not_answer_fails_the_probe_without_naming_it() -> None:
    closed = free_port()
    url = f"postgres://dbadmin@127.0.0.1:{closed}/fixgraph"
    with gunicorn(workers=1, DATABASE_URL=url, DATABASE_CONN_MAX_AGE="0") as port:
        status, _, body = request(port, "GET", "/healthz")
    found = json.loads(body)

    assert status == 503 and found["status"] == "failing"
    assert found["checks"]["database"]["ok"] is False
    assert found["checks"]["migrations"]["detail"] == "not checked: the database cannot be reached"
    for secret in (str(closed), "dbadmin", 'fixgraph"'):
        assert secret.encode() not in body  # the log has the driver's message, not the probe


def test_a_database_behind_the_code_fails_the_probe_and_names_the_migration(
    tmp_path: Path,
) -> None:
    env = {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'older.sqlite3'}",
        "FIXGRAPH_VAR_DIR": str(tmp_path),
        "DEBUG": "True",
    }
    for step in (("migrate", "-v0"), ("migrate", "kb", "0016", "-v0")):
        assert manage(*step, **env).returncode == 0
    with gunicorn(workers=1, **env) as port:
        status, _, found = healthz(port)

    assert status == 503
    migrations = found["checks"]["migrations"]
    assert migrations["ok"] is False
    assert "the database is behind this code" in migrations["detail"]
    assert "e.g. kb.0017_finding_started_from; run `manage.py migrate`" in migrations["detail"]


def test_the_probe_is_not_a_form() -> None:
    with gunicorn(workers=1, **served_database()) as port:
        status, _, _ = request(port, "POST", "/healthz", body=b"x")
    assert status == 405
