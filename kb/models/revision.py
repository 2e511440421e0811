"""Stamps that change whenever what a diagnosis reads changes.

Every process (web workers, Celery workers) holds its own in-memory decision
graph; comparing this one row tells it when to rebuild. Two stamps: `stamp` moves
with the published findings (a rebuild), `evidence_stamp` with runs and votes on
their fixes (the same graph with new evidence, in milliseconds). A stamp is written
in the same transaction as the change, so a reader sees both or neither; it is
random, so a rolled-back change never makes a stale graph look current.
"""

from __future__ import annotations

import uuid

from django.db import models

from kb.transaction_marks import first_time, forget, pending

CHANGE_MARK = "knowledge-revision"
EVIDENCE_MARK = "knowledge-evidence"


class KnowledgeRevision(models.Model):
    """A single row: `number` counts changes, `stamp` identifies the latest one."""

    number = models.PositiveBigIntegerField(default=0)
    stamp = models.CharField(max_length=32, default="")
    evidence_stamp = models.CharField(max_length=32, default="")
    changed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"revision {self.number}"

    @classmethod
    def current(cls) -> str:
        """The published findings' stamp."""
        return cls.stamps()[0]

    @classmethod
    def stamps(cls) -> tuple[str, str]:
        """The findings' stamp and the evidence's, in one query."""
        # Whoever reads a stamp must see the next change move it, even mid-transaction.
        forget(CHANGE_MARK)
        forget(EVIDENCE_MARK)
        row = cls.objects.filter(pk=1).values_list("number", "stamp", "evidence_stamp").first()
        return (f"{row[0]}:{row[1]}", row[2]) if row else ("0:", "")

    @classmethod
    def bump(cls) -> None:
        stamp = uuid.uuid4().hex
        updated = cls.objects.filter(pk=1).update(number=models.F("number") + 1, stamp=stamp)
        if not updated:
            cls.objects.get_or_create(pk=1, defaults={"number": 1, "stamp": stamp})

    @classmethod
    def bump_evidence(cls) -> None:
        stamp = uuid.uuid4().hex
        if not cls.objects.filter(pk=1).update(evidence_stamp=stamp):
            cls.objects.get_or_create(pk=1, defaults={"evidence_stamp": stamp})

    @classmethod
    def bump_once(cls) -> None:
        """Bump, once per transaction until the stamp is read again."""
        if first_time(CHANGE_MARK):
            cls.bump()

    @classmethod
    def moved_in_this_transaction(cls) -> bool:
        return pending(CHANGE_MARK)

    @classmethod
    def bump_evidence_once(cls) -> None:
        if first_time(EVIDENCE_MARK):
            cls.bump_evidence()
