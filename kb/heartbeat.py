"""A Celery worker's own row in kb.models.WorkerHeartbeat.

Written when the worker is ready and every `HEARTBEAT_S` after, from a thread of the
worker's main process (the pool's children are forked before it starts and carry no
copy); deleted when the worker stops cleanly. A worker killed outright leaves a row
that stops moving, which `/healthz` and the Validation page read as gone.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime

from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

from kb.models import WorkerHeartbeat
from kb.services.health import HEARTBEAT_S

logger = logging.getLogger(__name__)

_stopped = threading.Event()
_writing = threading.Lock()  # a last beat never lands after the row was deleted
_thread: threading.Thread | None = None


def start(name: str, queues: list[str]) -> None:
    """Start beating; a second call (Celery says "ready" again after it reconnects to the
    broker) leaves the running thread alone."""
    global _thread
    if _thread is not None and _thread.is_alive():
        return
    started = timezone.now()
    _stopped.clear()

    def loop() -> None:
        try:
            while not _stopped.is_set():
                beat(name, queues, started)
                _stopped.wait(HEARTBEAT_S)
        finally:
            connection.close()  # this thread's own connection

    _thread = threading.Thread(target=loop, name="fixgraph-heartbeat", daemon=True)
    _thread.start()


def beat(name: str, queues: list[str], started: datetime) -> None:
    with _writing:
        if _stopped.is_set():
            return
        try:
            close_old_connections()  # a database restart leaves this thread a dead one
            WorkerHeartbeat.objects.update_or_create(
                name=name,
                defaults={"queues": queues, "seen_at": timezone.now()},
                create_defaults={
                    "queues": queues,
                    "seen_at": timezone.now(),
                    "started_at": started,
                },
            )
        except DatabaseError as exc:
            # The next beat tries again; the worker's tasks do not depend on it.
            logger.warning("heartbeat of %s not written: %s", name, exc)


def stop(name: str) -> None:
    with _writing:
        _stopped.set()
        try:
            WorkerHeartbeat.objects.filter(name=name).delete()
        except DatabaseError as exc:
            logger.warning("heartbeat of %s not deleted: %s", name, exc)
