"""Which workers are up, told by the workers themselves: a real Celery worker on the real
Redis broker writes its heartbeat, /healthz and the Validation pages read it, and a run
queued where no worker listens says so."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from kb.models import Fix, Host, WorkerHeartbeat
from kb.services import health

from .conftest import pid_alive, queue_run, wait_until

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def signed_in() -> Client:
    client = Client()
    client.force_login(User.objects.create_user(f"u{uuid.uuid4().hex[:6]}", password="x-long-1"))
    return client


def reporting(queue: str) -> bool:
    return any(queue in worker.queues for worker in health.live_workers())


def test_a_running_worker_is_seen_and_a_queue_nobody_reads_is_named(
    make_host: Callable[..., Host],
    make_fix: Callable[..., Fix],
    celery_worker: Callable[[str], int],
    settings,
) -> None:
    settings.FIXGRAPH_QUEUE_PER_LABEL = True  # runs go to their host's label's queue
    label = f"lab-{uuid.uuid4().hex[:6]}"
    celery_worker(f"hosts.{label}")
    assert wait_until(lambda: reporting(f"hosts.{label}"), 20)

    check = health.workers()
    assert check.ok and f"hosts.{label}" in check.detail
    client = signed_in()
    runs_page = client.get("/runs/").content.decode()
    assert "Workers: " in runs_page and f"hosts.{label}" in runs_page

    fix = make_fix()
    # Rows only (nothing sent): a queued run as the page sees it before a worker takes it.
    heard = queue_run(fix, make_host(labels=(label,)))
    unheard = queue_run(fix, make_host(labels=("lab-nobody",)))
    heard_page = client.get(f"/runs/{heard.pk}/").content.decode()
    unheard_page = client.get(f"/runs/{unheard.pk}/").content.decode()
    assert "No worker that reads the queue" not in heard_page
    assert "No worker that reads the queue <code>hosts.lab-nobody</code>" in unheard_page
    assert "celery -A config worker -Q hosts.lab-nobody" in unheard_page


def test_a_worker_that_stops_takes_its_row_and_one_killed_goes_quiet(
    celery_worker: Callable[[str], int],
) -> None:
    stopped, killed = f"hosts.lab-{uuid.uuid4().hex[:6]}", f"hosts.lab-{uuid.uuid4().hex[:6]}"
    stopped_pid, killed_pid = celery_worker(stopped), celery_worker(killed)
    assert wait_until(lambda: reporting(stopped) and reporting(killed), 20)

    os.kill(stopped_pid, signal.SIGTERM)  # a clean stop (systemctl stop)
    assert wait_until(lambda: not pid_alive(stopped_pid), 30)
    assert not reporting(stopped)
    assert not WorkerHeartbeat.objects.filter(queues__contains=[stopped]).exists()

    os.kill(killed_pid, signal.SIGKILL)  # the out-of-memory killer: no goodbye
    assert wait_until(lambda: not pid_alive(killed_pid), 30)
    assert reporting(killed)  # for now: its last beat is recent
    late = timezone.now() - timedelta(seconds=health.STALE_AFTER_S + 60)
    WorkerHeartbeat.objects.filter(queues__contains=[killed]).update(seen_at=late)  # time passes

    check = health.workers()
    assert not check.ok
    assert check.detail.startswith("no worker has reported for 2\xa0minutes")
    assert health.report().status == "degraded"  # the site still answers
