"""A stamp that changes whenever published knowledge changes.

Every process (web workers, Celery workers) holds its own in-memory decision
graph; comparing this one row tells it when to rebuild. The stamp is written in
the same transaction as the change, so a reader sees both or neither; it is
random, so a rolled-back change never makes a stale graph look current.
"""

from __future__ import annotations

import uuid

from django.db import models

from kb.transaction_marks import first_time, forget

CHANGE_MARK = "knowledge-revision"


class KnowledgeRevision(models.Model):
    """A single row: `number` counts changes, `stamp` identifies the latest one."""

    number = models.PositiveBigIntegerField(default=0)
    stamp = models.CharField(max_length=32, default="")
    changed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"revision {self.number}"

    @classmethod
    def current(cls) -> str:
        # Whoever reads the stamp must see the next change move it, even mid-transaction.
        forget(CHANGE_MARK)
        row = cls.objects.filter(pk=1).values_list("number", "stamp").first()
        return f"{row[0]}:{row[1]}" if row else "0:"

    @classmethod
    def bump(cls) -> None:
        stamp = uuid.uuid4().hex
        updated = cls.objects.filter(pk=1).update(number=models.F("number") + 1, stamp=stamp)
        if not updated:
            cls.objects.get_or_create(pk=1, defaults={"number": 1, "stamp": stamp})

    @classmethod
    def bump_once(cls) -> None:
        """Bump, once per transaction until the stamp is read again."""
        if first_time(CHANGE_MARK):
            cls.bump()
