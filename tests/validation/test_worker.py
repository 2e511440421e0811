"""Validation through a real Celery worker on the real Redis broker, and what a worker
killed mid-run leaves behind (nothing on the host, a marked run in the database)."""

from __future__ import annotations

import io
import json
import os
import signal
import uuid
from collections.abc import Callable

import pytest
from django.core.management import call_command

from kb import remote
from kb.models import Fix, Host, ValidationRun
from kb.services import validation

from .conftest import FAST_LOAD, queue_run, remote_group_alive, throughput_fits, wait_until

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
Status = ValidationRun.Status
WATCHDOG_BOUND_S = 30  # lease (6 s) + the watchdog's 1 s poll + TERM grace, with room


def test_it_validates_a_fix_through_a_worker_on_its_hosts_queue(
    make_host: Callable[..., Host],
    make_fix: Callable[..., Fix],
    celery_worker: Callable[[str], int],
    settings,
) -> None:
    settings.FIXGRAPH_QUEUE_PER_LABEL = True
    label = f"lab-{uuid.uuid4().hex[:6]}"
    host, fix = make_host(labels=(label,)), make_fix()
    celery_worker(f"hosts.{label}")
    out = io.StringIO()
    recipe = json.dumps({"load": FAST_LOAD, "startup_timeout_s": 30, "lease_s": 6})
    call_command(
        "validate",
        "--fix",
        str(fix.pk),
        "--host",
        host.name,
        "--wait",
        "--timeout",
        "120",
        "--recipe",
        recipe,
        stdout=out,
    )
    printed = out.getvalue()
    assert f"queued on hosts.{label}" in printed
    assert ": passed" in printed
    run = ValidationRun.objects.get(fix=fix)
    assert run.task_id
    assert throughput_fits(FAST_LOAD, run.metrics["throughput_tok_s"])
    assert f"throughput_tok_s: {run.metrics['throughput_tok_s']}" in printed


def test_it_leaves_no_server_and_a_marked_run_when_the_worker_is_killed(
    make_host: Callable[..., Host],
    make_fix: Callable[..., Fix],
    celery_worker: Callable[[str], int],
    ssh_target: remote.Target,
    settings,
) -> None:
    settings.FIXGRAPH_QUEUE_PER_LABEL = True
    label = f"lab-{uuid.uuid4().hex[:6]}"
    host = make_host(labels=(label,))
    worker_pid = celery_worker(f"hosts.{label}")
    endless = {"requests": 400, "concurrency": 2, "input_tokens": 8, "output_tokens": 400}
    run = queue_run(make_fix(), host, load=endless)
    from config.celery import app

    app.send_task("kb.run_validation", args=[run.pk], queue=validation.queue_for(host))
    assert wait_until(lambda: "healthy; load" in ValidationRun.objects.get(pk=run.pk).log, 60)
    assert remote_group_alive(ssh_target, run)

    os.kill(worker_pid, signal.SIGKILL)

    assert wait_until(lambda: not remote_group_alive(ssh_target, run), WATCHDOG_BOUND_S, step=1)
    assert ValidationRun.objects.get(pk=run.pk).status == Status.RUNNING  # nobody said otherwise
    assert wait_until(lambda: validation.sweep(grace_s=0) == [run.pk], 30, step=1)
    run.refresh_from_db()
    host.refresh_from_db()
    assert run.status == Status.ERROR and "lease" in run.error
    assert host.locked_by_id is None
