"""The site as a careless operator and an attacker would meet it: HTTPS settings that
`check --deploy` accepts, logins that lock out guessing, a CSP header, a diagnose form
with a budget per client, a database outage that says "try again", password reset
only with mail, a new API token shown once and never put in a cookie, a `.env` read."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from api.models import ApiToken
from tests.gunicorn import gunicorn, request

REPO = Path(__file__).resolve().parents[2]
PRODUCTION = {
    # The production settings docs/security.md and .env.example document.
    "DEBUG": "False",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "fixgraph.example.internal",
    "FIXGRAPH_HTTPS": "True",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "True",
    "SECURE_HSTS_PRELOAD": "True",
    "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`manage.py ARGS` in a fresh process, with only the environment given (and PATH)."""
    base = {"PATH": os.environ["PATH"], "FIXGRAPH_ENV_FILE": os.devnull}
    for name in ("DATABASE_URL", "FIXGRAPH_VAR_DIR"):
        if name in os.environ:
            base[name] = os.environ[name]
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_with_the_production_settings_prints_no_security_warning() -> None:
    checked = manage("check", "--deploy", **PRODUCTION)
    # Any warning, not only Django's security ones: axes, csp, drf_spectacular's too.
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == "System check identified no issues (0 silenced).", (
        checked.stdout + checked.stderr
    )
    # Without them Django names each hole.
    plain = manage("check", "--deploy", **{**PRODUCTION, "FIXGRAPH_HTTPS": "False"})
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in plain.stdout + plain.stderr


def test_manage_py_reads_a_local_env_file(tmp_path: Path) -> None:
    """README commands work in a second terminal: `.env` says DEBUG=True, not the shell."""
    refused = manage("check", FIXGRAPH_VAR_DIR=str(tmp_path))
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines() == [
        "FixGraph is not configured: SECRET_KEY is required when DEBUG is off. Set SECRET_KEY "
        "(or SECRET_KEY_FILE), or DEBUG=True for local development (`make run` writes "
        "DEBUG=True to .env, which manage.py reads)."
    ]
    env_file = tmp_path / ".env"
    env_file.write_text("DEBUG=True\n")
    checked = manage("check", FIXGRAPH_ENV_FILE=str(env_file), FIXGRAPH_VAR_DIR=str(tmp_path))
    assert checked.returncode == 0, checked.stderr
    assert "System check identified no issues" in checked.stdout


def test_a_command_before_the_first_migrate_says_what_to_run(tmp_path: Path) -> None:
    """`make install`, then a README command before `make run`: one line, no traceback."""
    paste = tmp_path / "crash.txt"
    paste.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    empty = f"sqlite:///{tmp_path / 'fresh.sqlite3'}"

    ran = manage(
        "diagnose", str(paste), DEBUG="True", DATABASE_URL=empty, FIXGRAPH_VAR_DIR=str(tmp_path)
    )

    assert ran.returncode == 1
    [line] = ran.stderr.strip().splitlines()
    assert line.startswith("FixGraph's database has no tables yet (no such table: ")
    assert line.endswith(
        "Run `make run` once, or `.venv/bin/python manage.py migrate`, then this command again."
    )


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy(client: Client) -> None:
    policy = client.get("/diagnose/")["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy


@pytest.mark.django_db
@pytest.mark.parametrize("login_url", ["/accounts/login/", "/admin/login/"])
def test_a_login_is_locked_after_five_wrong_passwords(login_url: str) -> None:
    User.objects.create_superuser("alice", "alice@example.org", "the-right-password-42")
    client = Client()
    statuses = [
        client.post(login_url, {"username": "alice", "password": f"guess-{i}"}).status_code
        for i in range(5)
    ]
    assert statuses == [200, 200, 200, 200, 429]  # the form again, then the lockout page
    locked = client.post(login_url, {"username": "alice", "password": "the-right-password-42"})
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    # Another address is not locked out of the same account.
    other = Client(REMOTE_ADDR="192.0.2.44")
    ok = other.post(login_url, {"username": "alice", "password": "the-right-password-42"})
    assert ok.status_code == 302


@pytest.mark.django_db
def test_password_reset_exists_only_with_mail(client: Client, settings) -> None:
    assert client.get("/accounts/password_reset/").status_code == 404
    settings.FIXGRAPH_MAIL_CONFIGURED = True
    assert client.get("/accounts/password_reset/").status_code == 200


@pytest.mark.django_db
def test_a_new_api_token_is_shown_once_on_the_page_and_never_in_a_cookie() -> None:
    admin = User.objects.create_superuser("root", "root@example.org", "pw-long-enough-1")
    client = Client()
    client.force_login(admin)
    response = client.post(
        "/admin/api/apitoken/add/", {"user": str(admin.pk), "name": "bot", "scopes": '["read"]'}
    )
    assert response.status_code == 200
    token = ApiToken.objects.get()
    page = response.content.decode()
    raw = page.split('<code id="issued-token">', 1)[1].split("</code>", 1)[0]
    assert raw.startswith(token.prefix) and len(raw) > 30
    assert all(raw not in morsel.value for morsel in response.cookies.values())
    assert "messages" not in response.cookies
    assert "no-store" in response["Cache-Control"]
    again = client.get(f"/admin/api/apitoken/{token.pk}/change/").content.decode()
    assert raw not in again


@pytest.mark.django_db
def test_the_diagnose_form_gives_each_client_a_budget(client: Client, settings) -> None:
    settings.FIXGRAPH_WEB_DIAGNOSE_RATE = "3/min"
    paste = {"text": "AssertionError: boom"}
    statuses = [client.post("/diagnose/", paste).status_code for _ in range(4)]
    assert statuses == [303, 303, 303, 429]
    refused = client.post("/diagnose/", paste)
    assert int(refused["Retry-After"]) >= 1
    assert "Too many diagnoses" in refused.content.decode()
    # Another client (address) has its own budget.
    assert Client(REMOTE_ADDR="192.0.2.9").post("/diagnose/", paste).status_code == 303


@pytest.mark.django_db
def test_the_paste_limit_counts_pasted_bytes_not_url_encoded_ones(client: Client, settings) -> None:
    settings.FIXGRAPH_MAX_PASTE_BYTES = 100_000
    # 80 kB pasted, ~240 kB on the wire once URL-encoded: within the limit.
    paste = "RuntimeError: " + "[]{}" * 20_000
    assert client.post("/diagnose/", {"text": paste}).status_code == 303
    too_big = client.post("/diagnose/", {"text": "x" * 100_001})
    assert too_big.status_code == 413


@pytest.mark.services
@pytest.mark.django_db
def test_a_database_that_is_down_gives_503_with_retry_after() -> None:
    from tests.gunicorn import free_port

    closed = free_port()  # nothing listens there: PostgreSQL is down
    env = {
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed}/fixgraph",
        "FIXGRAPH_ALLOW_ANONYMOUS_API": "True",
        "DATABASE_CONN_MAX_AGE": "0",
    }
    with gunicorn(workers=1, **env) as port:
        page_status, page_headers, page_body = request(port, "GET", "/")
        api_status, api_headers, api_body = request(
            port, "GET", "/api/v1/findings/", headers={"Authorization": "Token fxg_x"}
        )
    assert page_status == 503 and page_headers["Retry-After"] == "30"
    assert b"Try again soon" in page_body
    assert api_status == 503 and api_headers["Retry-After"] == "30"
    assert b'"code":"database_unavailable"' in api_body


@pytest.mark.django_db
def test_anonymous_diagnoses_wait_when_every_shared_place_is_taken(client: Client) -> None:
    from django.core.cache import cache

    cache.add("slot:web-diagnose:0", "another worker", 60)  # the one place is busy
    busy = client.post("/diagnose/", {"text": "AssertionError: boom"})
    assert busy.status_code == 503 and busy["Retry-After"] == "5"
    assert "busy with other diagnoses" in busy.content.decode()
    member = Client()
    member.force_login(User.objects.create_user("bob", "b@example.org", "pw-long-enough-1"))
    assert member.post("/diagnose/", {"text": "AssertionError: boom"}).status_code == 303
    cache.delete("slot:web-diagnose:0")
    assert client.post("/diagnose/", {"text": "AssertionError: boom"}).status_code == 303


def test_a_command_on_a_database_behind_the_code_says_to_migrate(tmp_path: Path) -> None:
    """A `git pull` with a new migration, then a README command before `make run`."""
    env = {
        "DEBUG": "True",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'older.sqlite3'}",
        "FIXGRAPH_VAR_DIR": str(tmp_path),
    }
    steps = (
        ("migrate", "-v0"),
        ("ingest", str(REPO / "knowledge"), "--publish"),  # rows whose columns are read
        ("migrate", "kb", "0016", "-v0"),  # kb one step back
    )
    for step in steps:
        migrated = manage(*step, **env)
        assert migrated.returncode == 0, migrated.stderr

    ran = manage("export_findings", **env)

    assert ran.returncode == 1
    [line] = ran.stderr.strip().splitlines()
    assert line.startswith("FixGraph's database is behind this code (no such column: ")
    assert "not applied, e.g. kb.0017_finding_started_from)" in line
    assert line.endswith("Run `.venv/bin/python manage.py migrate` (`make run` does it), "
                         "then this command again.")  # fmt: skip
