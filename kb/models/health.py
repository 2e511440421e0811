"""Signs of life of the Celery workers, written by the workers themselves."""

from __future__ import annotations

from django.db import models


class WorkerHeartbeat(models.Model):
    """One row per running worker (kb/heartbeat.py writes it every half minute and
    deletes it on a clean stop): which workers are up, and which queues they consume.
    A row that stops moving is a worker that died without saying so."""

    name = models.CharField(max_length=255, unique=True)  # Celery's node name, celery@host
    queues = models.JSONField(default=list)
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
