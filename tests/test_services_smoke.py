"""The services that `make test` starts are real and reachable.

scripts/test-services.sh starts PostgreSQL, Redis and sshd and exports their
addresses; these tests prove each one answers, so a later failure elsewhere is
not blamed on a missing service. Without those variables they skip locally and
fail under CI, so a CI job can never pass by silently skipping them.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.services import require_services

SSH_TIMEOUT_S = 20


@dataclass(frozen=True)
class SshTarget:
    host: str
    port: int
    user: str
    key: Path
    host_key: Path


@pytest.fixture
def database_url() -> str:
    require_services()
    return os.environ["DATABASE_URL"]


@pytest.fixture
def ssh_target() -> SshTarget:
    require_services()
    env = os.environ
    return SshTarget(
        host=env["FIXGRAPH_TEST_SSH_HOST"],
        port=int(env["FIXGRAPH_TEST_SSH_PORT"]),
        user=env["FIXGRAPH_TEST_SSH_USER"],
        key=Path(env["FIXGRAPH_TEST_SSH_KEY"]),
        host_key=Path(env["FIXGRAPH_TEST_SSH_HOST_KEY"]),
    )


def pinned_known_hosts(target: SshTarget, folder: Path) -> Path:
    # The host key file reads "TYPE BASE64 COMMENT"; known_hosts wants "[host]:port TYPE BASE64".
    key_type, key_b64 = target.host_key.read_text().split()[:2]
    known_hosts = folder / "known_hosts"
    known_hosts.write_text(f"[{target.host}]:{target.port} {key_type} {key_b64}\n")
    return known_hosts


def run_ssh(
    target: SshTarget, key: Path, known_hosts: Path, *command: str
) -> subprocess.CompletedProcess[str]:
    options = [
        "-o", "BatchMode=yes",
        "-o", "IdentitiesOnly=yes",
        "-o", "PasswordAuthentication=no",
        "-o", "StrictHostKeyChecking=yes",
        "-o", f"UserKnownHostsFile={known_hosts}",
        "-o", "ConnectTimeout=10",
        "-F", "/dev/null",
    ]  # fmt: skip
    return subprocess.run(
        ["ssh", *options, "-i", str(key), "-p", str(target.port),
         f"{target.user}@{target.host}", *command],
        capture_output=True, text=True, timeout=SSH_TIMEOUT_S, check=False,
    )  # fmt: skip


def fresh_key(folder: Path) -> Path:
    key = folder / "stranger_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
        check=True, capture_output=True,
    )  # fmt: skip
    return key


@pytest.mark.services
def test_it_serves_postgresql_15_or_newer(database_url: str) -> None:
    import psycopg

    with psycopg.connect(database_url, connect_timeout=10) as conn:
        row = conn.execute("SHOW server_version_num").fetchone()
    assert row is not None
    assert int(row[0]) >= 150000


@pytest.mark.services
def test_it_gives_new_databases_trigram_similarity(database_url: str) -> None:
    # Django's test runner makes its own database from template1; pg_trgm must be there too.
    import psycopg
    from psycopg import sql

    name = f"smoke_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True, connect_timeout=10) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        other_url = database_url.rsplit("/", 1)[0] + "/" + name
        with psycopg.connect(other_url, connect_timeout=10) as conn:
            row = conn.execute(
                "SELECT similarity('sm_120 blackwell', 'sm_120 blackwel')"
            ).fetchone()
    finally:
        with psycopg.connect(database_url, autocommit=True, connect_timeout=10) as admin:
            admin.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(name)))
    assert row is not None
    assert 0.5 < row[0] < 1.0


@pytest.mark.services
@pytest.mark.parametrize("variable", ["REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"])
def test_it_answers_redis_ping(variable: str) -> None:
    require_services()
    import redis

    client = redis.Redis.from_url(os.environ[variable], socket_timeout=10)
    try:
        assert client.ping() is True
    finally:
        client.close()


@pytest.mark.services
def test_it_runs_a_command_over_ssh_with_the_test_key(
    ssh_target: SshTarget, tmp_path: Path
) -> None:
    known_hosts = pinned_known_hosts(ssh_target, tmp_path)
    result = run_ssh(ssh_target, ssh_target.key, known_hosts, "echo", "fixgraph-ssh-ok")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "fixgraph-ssh-ok"


@pytest.mark.services
def test_it_refuses_an_unknown_ssh_key(ssh_target: SshTarget, tmp_path: Path) -> None:
    known_hosts = pinned_known_hosts(ssh_target, tmp_path)
    result = run_ssh(ssh_target, fresh_key(tmp_path), known_hosts, "echo", "should-not-run")
    assert result.returncode == 255
    assert "Permission denied" in result.stderr
    assert "should-not-run" not in result.stdout


def test_it_fails_instead_of_skipping_when_ci_has_no_services(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A CI job that forgot `make test` must go red, not green with everything skipped.
    monkeypatch.delenv("FIXGRAPH_SERVICES", raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="make test"):
        require_services()


def test_it_skips_with_a_hint_outside_ci_without_services(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FIXGRAPH_SERVICES", raising=False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="make test"):
        require_services()
