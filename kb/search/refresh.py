"""Keeping search documents up to date: a queue in the database, drained after commit.

A change to a finding (or what hangs off it, see kb.signals) queues the finding in
the writer's transaction; the document is rebuilt once that transaction commits.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from kb.models import Finding
from kb.models.search import FindingSearchDocument, SearchRefresh, SearchWord
from kb.search.documents import write_documents
from kb.transaction_marks import first_time, forget

BATCH = 500


def queue_refresh(finding_id: int) -> None:
    """Mark a finding's document stale, in the caller's transaction; rebuilt after commit."""
    if not first_time(("search-refresh", finding_id)):
        return
    # A re-queue moves queued_at, so a refresh already under way keeps the row for later.
    SearchRefresh.objects.bulk_create(
        [SearchRefresh(finding_id=finding_id, queued_at=timezone.now())],
        update_conflicts=True,
        unique_fields=["finding_id"],
        update_fields=["queued_at"],
    )
    if _deferred.get():
        return  # a bulk load refreshes everything it queued once, at its end
    if not any(entry[1] is refresh_queued for entry in connection.run_on_commit):
        transaction.on_commit(refresh_queued)


def queue_refreshes(finding_ids: list[int]) -> None:
    """Queue many new findings at once (a bulk load); rebuilt as `queue_refresh` says."""
    now = timezone.now()
    SearchRefresh.objects.bulk_create(
        [SearchRefresh(finding_id=pk, queued_at=now) for pk in finding_ids],
        update_conflicts=True,
        unique_fields=["finding_id"],
        update_fields=["queued_at"],
        batch_size=BATCH,
    )
    for finding_id in finding_ids:
        first_time(("search-refresh", finding_id))  # a later save in this run need not
    queued = any(entry[1] is refresh_queued for entry in connection.run_on_commit)
    if finding_ids and not _deferred.get() and not queued:
        transaction.on_commit(refresh_queued)


_deferred: ContextVar[bool] = ContextVar("search_refresh_deferred", default=False)


@contextmanager
def refresh_afterwards() -> Iterator[None]:
    """Queue refreshes while the block runs (ingesting many documents), rebuild them at the
    end in batches. The queue is in the database: if the block dies, the next search or
    `reindex_search` still finds the work."""
    token = _deferred.set(True)
    try:
        yield
    finally:
        _deferred.reset(token)
        refresh_queued()


def refresh_queued(batch: int = BATCH) -> int:
    """Rebuild every queued document. Search calls it too: nothing stale is ever served."""
    queued = sorted(SearchRefresh.objects.values_list("finding_id", "queued_at"))
    for start in range(0, len(queued), batch):
        refresh_batch(queued[start : start + batch])
    return len(queued)


def refresh_batch(queued: list[tuple[int, datetime]]) -> None:
    write_documents([finding_id for finding_id, _ in queued])
    done = Q()
    for finding_id, queued_at in queued:
        done |= Q(finding_id=finding_id, queued_at=queued_at)
        forget(("search-refresh", finding_id))  # a later change must queue it again
    SearchRefresh.objects.filter(done).delete()


def refresh_if_queued() -> None:
    """Before reading documents: rebuild what is queued (one cheap query when nothing is)."""
    if SearchRefresh.objects.exists():
        refresh_queued()


def build_missing_documents() -> int:
    """Documents for findings saved without signals (bulk loads, raw SQL, old rows)."""
    missing = list(
        Finding.objects.filter(search_document__isnull=True).values_list("pk", flat=True)
    )
    stale = FindingSearchDocument.objects.filter(built_at__lt=F("finding__updated_at"))
    ids = missing + list(stale.values_list("finding_id", flat=True))
    refresh_in_batches(ids)
    return len(ids)


def rebuild_all() -> int:
    """Every document from scratch: after a restore, or when the document rules change."""
    ids = list(Finding.objects.values_list("pk", flat=True))
    SearchWord.objects.all().delete()  # words of deleted findings go too
    refresh_in_batches(ids)
    return len(ids)


def refresh_in_batches(ids: list[int], size: int = BATCH) -> None:
    for start in range(0, len(ids), size):
        write_documents(ids[start : start + size])
