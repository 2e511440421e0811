"""A counter that moves whenever published knowledge changes.

Every process (web workers, Celery workers) holds its own in-memory decision
graph; comparing this one number tells it when to rebuild.
"""

from __future__ import annotations

from django.db import models


class KnowledgeRevision(models.Model):
    """A single row; `number` grows with every change that can alter a diagnosis."""

    number = models.PositiveBigIntegerField(default=0)
    changed_at = models.DateTimeField(auto_now=True)

    @classmethod
    def current(cls) -> int:
        row = cls.objects.filter(pk=1).values_list("number", flat=True).first()
        return row or 0

    @classmethod
    def bump(cls) -> None:
        updated = cls.objects.filter(pk=1).update(number=models.F("number") + 1)
        if not updated:
            cls.objects.get_or_create(pk=1, defaults={"number": 1})
