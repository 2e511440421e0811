"""A real multi-worker web server (gunicorn) on loopback, against the test database: for
what only shows across processes (shared throttles) or with a database that is down."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def database_url(name: str) -> str:
    """DATABASE_URL pointed at the test database pytest-django made."""
    return os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + name


@contextmanager
def gunicorn(workers: int, **env: str) -> Iterator[int]:
    """`gunicorn config.wsgi` with `workers` processes and extra environment; its port."""
    port = free_port()
    full_env = {
        **os.environ,
        "DEBUG": "False",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECRET_KEY": os.environ.get("SECRET_KEY")
        or "test-secret-key-for-gunicorn-only-0123456789",
        **env,
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--workers",
            str(workers),
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],  # fmt: skip
        cwd=REPO,
        env=full_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        wait_until_up(server, port)
        yield port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


def wait_until_up(server: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn exited: {server.stderr.read().decode()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("gunicorn did not start within 60 s")


def request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One request on its own connection: (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()
