"""Celery tasks: small wrappers that load by id and call the validation service."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

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


def route_validation(
    name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **extra: Any
) -> dict[str, str] | None:
    """`CELERY_TASK_ROUTES` router: a run goes to the queue of its host's first label,
    so it lands on a worker that can reach that host."""
    if name != "kb.run_validation" or not args:
        return None
    from kb.models import ValidationRun

    run = ValidationRun.objects.select_related("host").filter(pk=args[0]).first()
    return {"queue": validation.queue_for(run.host)} if run else None
