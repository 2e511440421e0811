"""Can this FixGraph serve, and is anything behind it missing? The checks of `/healthz`
and of the Validation page's worker line.

Each check says what it found in words an operator can act on. None names an address,
a user or an exception's text (a load balancer asks anonymously, and a driver's message
carries the database's host): those go to the server log.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.core.cache import cache, caches
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from django.utils.timesince import timesince

from kb.models import WorkerHeartbeat

logger = logging.getLogger(__name__)

HEARTBEAT_S = 30  # how often a running worker writes its row (kb/heartbeat.py)
# Two missed beats and then some: a worker this quiet died without deleting its row.
STALE_AFTER_S = 3 * HEARTBEAT_S
# A probe waits at most this long on the broker: load balancers time out at a few seconds.
BROKER_TIMEOUT_S = 2.0


REQUIRED = {"database", "migrations", "cache"}


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    @property
    def required(self) -> bool:
        """The site cannot answer without it: its failure makes the report "failing" (503).
        Without the others it answers, and what needs them (validation runs) waits."""
        return self.name in REQUIRED


@dataclass(frozen=True)
class Report:
    checks: tuple[Check, ...]

    @property
    def status(self) -> str:
        if any(not c.ok and c.required for c in self.checks):
            return "failing"
        return "ok" if all(c.ok for c in self.checks) else "degraded"

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "checks": {
                c.name: {"ok": c.ok, "required": c.required, "detail": c.detail}
                for c in self.checks
            },
        }


def report() -> Report:
    reached = database()
    if reached.ok:
        schema = migrations()
    else:
        schema = _skipped("migrations", "the database cannot be reached")
    # The workers' rows are in a table of their own: read them only where it exists.
    if schema.ok:
        workers_check = workers()
    else:
        workers_check = _skipped("workers", f"the {schema.name} check failed")
    return Report((reached, schema, cache_check(), broker(), workers_check))


def database() -> Check:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        logger.warning("health: the database cannot be reached: %s", exc)
        return _failed("database", exc)
    return Check("database", True, f"{connection.vendor} answered in {_ms(started)}")


def migration_state() -> tuple[int, list[str]]:
    """(migrations the database has applied, those of this code it lacks, in order)."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    pending = [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
    return len(executor.loader.applied_migrations), pending


def migrations() -> Check:
    try:
        applied, pending = migration_state()
    except DatabaseError as exc:
        logger.warning("health: cannot read the applied migrations: %s", exc)
        return _failed("migrations", exc)
    if not pending:
        return Check("migrations", True, f"all {applied} applied")
    what = "has no tables" if not applied else "is behind this code"
    return Check(
        "migrations",
        False,
        f"the database {what}: {len(pending)} migration(s) not applied, e.g. {pending[0]}; "
        "run `manage.py migrate`",
    )


def cache_check() -> Check:
    """Throttles and login lockouts count in the cache: without it requests fail."""
    key, value = f"fixgraph:health:{uuid.uuid4().hex}", "1"
    started = time.perf_counter()
    try:
        cache.set(key, value, timeout=10)
        read = cache.get(key)
        cache.delete(key)
    except Exception as exc:  # every backend raises its own client's errors
        logger.warning("health: the cache failed: %s", exc)
        return _failed("cache", exc)
    if read != value:
        return Check("cache", False, "a value written was not read back")
    return Check("cache", True, f"{_cache_kind()} answered in {_ms(started)}")


def broker() -> Check:
    """Validation runs and search refreshes are queued here; the site answers without it."""
    from config.celery import app

    started = time.perf_counter()
    try:
        with app.connection_for_write(connect_timeout=BROKER_TIMEOUT_S) as conn:
            conn.ensure_connection(max_retries=1, timeout=BROKER_TIMEOUT_S)
            transport = conn.transport_cls
    except Exception as exc:  # kombu raises each transport's own errors
        logger.warning("health: the Celery broker cannot be reached: %s", exc)
        return _failed("broker", exc)
    return Check("broker", True, f"{transport} answered in {_ms(started)}")


def live_workers() -> list[WorkerHeartbeat]:
    since = timezone.now() - timedelta(seconds=STALE_AFTER_S)
    return list(WorkerHeartbeat.objects.filter(seen_at__gte=since))


def workers() -> Check:
    try:
        live = live_workers()
    except DatabaseError as exc:
        logger.warning("health: cannot read the workers' heartbeats: %s", exc)
        return _failed("workers", exc)
    if live:
        queues = sorted({str(queue) for worker in live for queue in worker.queues})
        return Check(
            "workers",
            True,
            f"{len(live)} reporting, consuming {', '.join(queues) or 'no queue'}",
        )
    return Check("workers", False, silent_workers())


def silent_workers() -> str:
    """Why queued work waits, when no worker reports."""
    last = WorkerHeartbeat.objects.order_by("-seen_at").first()
    if last is None:
        return "no worker is running: validation runs wait until one starts"
    return (
        f"no worker has reported for {timesince(last.seen_at)}: validation runs wait "
        "until one starts"
    )


def queue_listened(queue: str) -> bool:
    """Whether a worker that reports consumes `queue`."""
    return any(queue in worker.queues for worker in live_workers())


def _skipped(name: str, why: str) -> Check:
    return Check(name, False, f"not checked: {why}")


def _failed(name: str, exc: BaseException) -> Check:
    # The kind of error only: its text may name hosts and users (the log has it).
    return Check(name, False, f"failed ({type(exc).__name__}); the server log says why")


def _cache_kind() -> str:
    return type(caches["default"]).__name__.removesuffix("Cache").lower() or "cache"


def _ms(started: float) -> str:
    return f"{(time.perf_counter() - started) * 1000:.0f} ms"
