"""Celery tasks: small wrappers that load by id and call the validation service; and the
worker's heartbeat, started and stopped with the worker."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from celery.signals import worker_ready, worker_shutdown

from kb import heartbeat
from kb.search.refresh import refresh_queued
from kb.services import validation

MAX_RETRIES = 5


@shared_task(bind=True, name="kb.run_validation", acks_late=True, max_retries=MAX_RETRIES)
def run_validation(self: Task, run_id: int) -> None:
    """Run a queued validation run. Retried only while nothing was launched yet
    (host unreachable or busy); a redelivered message finds the run claimed and returns."""
    try:
        validation.run(run_id)
    except validation.RETRYABLE as exc:
        if self.request.retries >= MAX_RETRIES:
            validation.give_up(run_id, str(exc))
            return
        raise self.retry(exc=exc, countdown=min(300, 15 * 2**self.request.retries)) from exc


@shared_task(name="kb.sweep_validation_runs")
def sweep_validation_runs() -> list[int]:
    """Mark runs whose worker died as errors and free their hosts (run it every minute)."""
    return validation.sweep()


@shared_task(name="kb.refresh_search_documents", acks_late=True)
def refresh_search_documents() -> int:
    """Build the search documents writers queued (a search never builds them)."""
    return refresh_queued()


@shared_task(name="kb.revalidate_fixes")
def revalidate_fixes(older_than_days: float = 30) -> list[int]:
    """Queue fresh runs of fixes whose last run on a host is older than the limit."""
    return [run.pk for run in validation.revalidate(older_than_days=older_than_days)]


@worker_ready.connect
def start_heartbeat(sender: Any, **_: Any) -> None:
    """`sender` is the worker's consumer: its node name and the queues it was told to read."""
    queues = sorted(sender.app.amqp.queues.consume_from or sender.app.amqp.queues)
    heartbeat.start(sender.hostname, queues)


@worker_shutdown.connect
def stop_heartbeat(sender: Any, **_: Any) -> None:
    heartbeat.stop(sender.hostname)
