"""Keeping search documents up to date: a queue in the database, drained by a worker.

A change to a finding (or what hangs off it, see kb.signals) queues the finding in
the writer's transaction; once that transaction commits, a Celery task
(`kb.refresh_search_documents`) rebuilds what is queued. A search never builds
documents: it reads what is built and, when it sees a backlog (an ingest that was
killed, a worker that was down), asks for the task. A bulk ingest builds its own
documents at its end, in the ingest's process. Drains take turns (an advisory lock
on PostgreSQL), so the task and an ingest never write the same documents at once.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from celery import current_app
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from decisiontree.collector import collector_paused
from decisiontree.samples import scheme
from kb.models import Finding
from kb.models.search import FindingSearchDocument, GraphWords, SearchRefresh, SearchWord
from kb.search.documents import write_documents
from kb.transaction_marks import first_time, forget

BATCH = 500
TASK = "kb.refresh_search_documents"
# A search that sees a backlog asks for the task at most this often (per cache).
ASK_EVERY_S = 30
DRAIN_LOCK = 0x46475352  # "FGSR": any constant all drains agree on
log = logging.getLogger(__name__)


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
    ask_after_commit()


def queue_refreshes(finding_ids: list[int]) -> None:
    """Queue many new findings at once (a bulk load); rebuilt as `queue_refresh` says."""
    now = timezone.now()
    if connection.vendor == "postgresql":
        # One array of ids: bulk_create would build a model instance a row and send
        # both columns as arrays escaped in Python.
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {connection.ops.quote_name(SearchRefresh._meta.db_table)}"  # noqa: S608
                " (finding_id, queued_at) SELECT unnest(%s::bigint[]), %s"
                " ON CONFLICT (finding_id) DO UPDATE SET queued_at = EXCLUDED.queued_at",
                [finding_ids, now],
            )
    else:
        SearchRefresh.objects.bulk_create(
            [SearchRefresh(finding_id=pk, queued_at=now) for pk in finding_ids],
            update_conflicts=True,
            unique_fields=["finding_id"],
            update_fields=["queued_at"],
            batch_size=BATCH,
        )
    for finding_id in finding_ids:
        first_time(("search-refresh", finding_id))  # a later save in this run need not
    if finding_ids and not _deferred.get():
        ask_after_commit()


def ask_after_commit() -> None:
    """Once this transaction commits, have a worker build what it queued."""
    if first_time("search-refresh-asked"):
        transaction.on_commit(ask_for_refresh)


def ask_for_refresh() -> None:
    """Put the refresh task in the broker. A broker that is down loses nothing: the
    queue is in the database, and the beat schedule asks again every minute."""
    try:
        current_app.send_task(TASK, retry=False)  # a request never waits on a broker
    except Exception:  # any broker failure: the rows wait for the next ask
        log.warning("could not ask for a search refresh; the beat schedule will", exc_info=True)


def ask_if_behind() -> None:
    """Before a search reads documents: if some are queued, ask a worker (never build here)."""
    if SearchRefresh.objects.exists() and cache.add("search-refresh-asked", 1, ASK_EVERY_S):
        ask_for_refresh()


_deferred: ContextVar[bool] = ContextVar("search_refresh_deferred", default=False)


@contextmanager
def refresh_afterwards() -> Iterator[None]:
    """Queue refreshes while the block runs (ingesting many documents), rebuild them at the
    end in batches. The queue is in the database: if the block dies, the refresh task
    (asked by the next search or the beat schedule) or `reindex_search` finds the work."""
    token = _deferred.set(True)
    try:
        yield
    finally:
        _deferred.reset(token)
        refresh_queued()


def refresh_queued(batch: int = BATCH) -> int:
    """Rebuild every queued document (the task's work, and a bulk ingest's last step),
    in batches of their own transaction."""
    queued = sorted(SearchRefresh.objects.values_list("finding_id", "queued_at"))
    for start in range(0, len(queued), batch):
        with collector_paused():
            refresh_batch(queued[start : start + batch])
    return len(queued)


@transaction.atomic
def refresh_batch(queued: list[tuple[int, datetime]]) -> None:
    take_drain_turn()
    # What another drain built while this one waited for its turn is not built twice.
    ids = [finding_id for finding_id, _ in queued]
    queued = [
        row
        for start in range(0, len(ids), BATCH)
        for row in SearchRefresh.objects.filter(
            finding_id__in=ids[start : start + BATCH]
        ).values_list("finding_id", "queued_at")
    ]
    if not queued:
        return
    write_documents(sorted(finding_id for finding_id, _ in queued))
    for finding_id, _ in queued:
        forget(("search-refresh", finding_id))  # a later change must queue it again
    for start in range(0, len(queued), BATCH):
        SearchRefresh.objects.filter(drained(queued[start : start + BATCH])).delete()


def drained(queued: list[tuple[int, datetime]]) -> Q:
    """The queue rows just built, as they were read: a row re-queued meanwhile (its
    `queued_at` moved) stays. One condition per queue time, with its ids: a bulk load
    queues a whole batch at one time, so its drain deletes in one short statement."""
    by_time: dict[datetime, list[int]] = defaultdict(list)
    for finding_id, queued_at in queued:
        by_time[queued_at].append(finding_id)
    return Q(
        *(Q(queued_at=at, finding_id__in=ids) for at, ids in by_time.items()),
        _connector=Q.OR,
    )


def take_drain_turn() -> None:
    """Wait while another drain writes documents (held until this transaction ends)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [DRAIN_LOCK])


def build_missing_documents() -> int:
    """Documents for findings saved without signals (bulk loads, raw SQL, old rows), and
    those whose words for the graph build were read by older code (an upgrade)."""
    missing = Finding.objects.filter(
        Q(search_document__isnull=True) | Q(graph_words__isnull=True)
    ).values_list("pk", flat=True)
    stale = FindingSearchDocument.objects.filter(built_at__lt=F("finding__updated_at"))
    older_words = GraphWords.objects.filter(
        ~Q(stored__has_key="scheme") | ~Q(stored__scheme=scheme())
    )
    ids = sorted(
        {
            *missing,
            *stale.values_list("finding_id", flat=True),
            *older_words.values_list("finding_id", flat=True),
        }
    )
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
