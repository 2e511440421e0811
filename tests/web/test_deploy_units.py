"""The systemd units of docs/deploy.md run: each unit's ExecStart, with /srv/fixgraph read as
this checkout, started against the test PostgreSQL and Redis under the production
settings. The web answers /healthz, the worker template's instance becomes the queue it
reads and the node name it reports, and the schedule starts."""

from __future__ import annotations

import configparser
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection

from kb.models import WorkerHeartbeat
from tests.gunicorn import database_url, free_port, request, wait_until_up
from tests.validation.conftest import wait_until
from tests.web.test_hardening import PRODUCTION

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "deploy" / "systemd"
INSTALLED_AT = "/srv/fixgraph"


def exec_start(unit: str, instance: str = "", var: Path | None = None) -> list[str]:
    """The unit's command as systemd would run it here: the instance for %i, a literal %
    for %%, this checkout for /srv/fixgraph (and `var` for its var/)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read(UNITS / unit)
    line = parser["Service"]["ExecStart"]
    line = re.sub(r"%(%|i)", lambda m: "%" if m.group(1) == "%" else instance, line)
    if var is not None:
        line = line.replace(f"{INSTALLED_AT}/var", str(var))
    return shlex.split(line.replace(INSTALLED_AT, str(REPO)))


def environment(tmp_path: Path) -> dict[str, str]:
    """What /etc/fixgraph/env gives the services: production settings, the test services."""
    return {
        "PATH": os.environ["PATH"],
        **PRODUCTION,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": database_url(connection.settings_dict["NAME"]),
        "CACHE_URL": os.environ["REDIS_URL"],
        "CELERY_BROKER_URL": os.environ["CELERY_BROKER_URL"],
        "CELERY_RESULT_BACKEND": os.environ["CELERY_BROKER_URL"],
        "FIXGRAPH_VAR_DIR": str(tmp_path),
    }


@contextmanager
def service(command: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            yield process
        finally:
            os.killpg(process.pid, signal.SIGTERM)  # what `systemctl stop` sends
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def test_the_web_unit_serves_and_the_worker_unit_reports_its_queue(tmp_path: Path) -> None:
    env = environment(tmp_path)
    port = free_port()
    web = [arg.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for arg in exec_start(
        "fixgraph-web.service")]  # fmt: skip
    worker = exec_start("fixgraph-worker@.service", instance="celery")
    assert worker[worker.index("--queues") + 1] == "celery"

    with service(web, env, tmp_path / "web.log") as web_process:
        wait_until_up(web_process, port)
        with service(worker, env, tmp_path / "worker.log") as worker_process:
            reported = wait_until(
                lambda: WorkerHeartbeat.objects.filter(queues=["celery"]).exists(), 60
            )
            assert reported, (tmp_path / "worker.log").read_text(errors="replace")[-3000:]
            status, _, body = request(port, "GET", "/healthz")
            assert worker_process.poll() is None
        stopped_cleanly = not WorkerHeartbeat.objects.exists()

    assert status == 200, body
    assert b'"status": "ok"' in body  # database, migrations, cache, broker and a worker
    [row] = [
        line for line in (tmp_path / "worker.log").read_text().splitlines() if " ready." in line
    ]
    assert "celery@" in row  # the node name is the instance's: %i@%%h
    assert stopped_cleanly  # the worker deleted its row on SIGTERM


def test_the_schedule_unit_starts(tmp_path: Path) -> None:
    beat = exec_start("fixgraph-beat.service", var=tmp_path)
    schedule = Path(beat[beat.index("--schedule") + 1])
    assert schedule.parent == tmp_path

    with service(beat, environment(tmp_path), tmp_path / "beat.log") as process:
        started = wait_until(lambda: "beat: Starting" in (tmp_path / "beat.log").read_text(), 60)
        time.sleep(1)
        alive = process.poll() is None

    assert started and alive, (tmp_path / "beat.log").read_text(errors="replace")[-3000:]
    assert list(tmp_path.glob(f"{schedule.name}*"))  # it keeps its schedule where told
