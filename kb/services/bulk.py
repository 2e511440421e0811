"""Many new findings of one document, written in a few statements per batch.

A FINDINGS.md of 20,000 entries is one transaction; saved row by row it took about
ten statements an entry and minutes in all. Here a batch of BATCH entries costs a
fixed number of statements: the findings and their first history rows, then each
kind of linked row (sources, GPUs, libraries, flags, signatures, samples, fixes and
their history, the search queue) in one insert; on PostgreSQL the rows go through
COPY, written from tuples with no model instance a row. What per-row saves would have sent
as signals happens once a batch: the knowledge revision moves, the search documents
are queued, and `findings_created` tells its listeners (webhooks) which rows are new.

Must run inside the document's transaction, holding the ingest's store turn (see
kb.services.ingest): the shared rows it creates (models, releases, GPUs, signatures)
are then never created by two writers at once.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, TypeVar

from django.db import connection
from django.db.models import DateTimeField, Field, JSONField, Model
from django.utils import timezone

from decisiontree.documents import ExtractedFinding
from decisiontree.fingerprint import Signature
from decisiontree.samples import SampleSignatures, signatures_of_sample, stored_form
from kb.models import (
    ErrorSample,
    ErrorSignature,
    Finding,
    FindingGpu,
    Fix,
    FlagSetting,
    KnowledgeRevision,
    SourceDocument,
)
from kb.search import queue_refreshes
from kb.services.records import (
    finding_values,
    fix_values,
    hardware_pk,
    known_flags,
    prime_lookups,
    release,
)
from kb.signals import findings_created

BATCH = 1000
HISTORY_BATCH = 500  # ids in one IN list: within SQLite's 999 parameters too
# A document with this many distinct samples has them parsed in a second process while
# its rows are written (parsing is ~0.2 ms a sample, a third of storing's own CPU; the
# worker's start and the results' way back cost ~0.03 ms a sample: bench/README.md).
PARALLEL_AT_LEAST = 1000
PARSE_CHUNK = 100  # samples a worker parses per message
T = TypeVar("T")


@dataclass
class _Table:
    """New rows of one model, each the values of `fields` in that order. Tuples, not
    model instances: on PostgreSQL they go to COPY as they are (see `_write`)."""

    model: type[Model]
    fields: tuple[str, ...]
    rows: list[tuple[Any, ...]] = field(default_factory=list)


FIX_VALUES = ("summary", "passage", "changes", "outcome")  # kb.services.records.fix_values


def _tables() -> dict[str, _Table]:
    """The rows one batch adds beside its findings."""
    finding = ("finding_id",)
    return {
        "sources": _Table(Finding.sources.through, (*finding, "sourcedocument_id")),
        "gpus": _Table(FindingGpu, (*finding, "hardware_id", "count")),
        "libraries": _Table(Finding.libraries.through, (*finding, "frameworkrelease_id")),
        "flags": _Table(FlagSetting, (*finding, "name", "value", "flag_id")),
        "samples": _Table(ErrorSample, (*finding, "text", "signature_id", "parsed", "source_id")),
        "signatures": _Table(Finding.signatures.through, (*finding, "errorsignature_id")),
        "fixes": _Table(Fix, (*finding, "position", "source_id", *FIX_VALUES)),
    }


def create_findings(
    document: SourceDocument,
    keyed: Sequence[tuple[str, ExtractedFinding]],
    *,
    problems: tuple[str, ...],
    publish: bool,
) -> list[int]:
    """Store `keyed` entries of a new `document` as new findings; return their ids."""
    created: list[int] = []
    parsed: dict[str, SampleSignatures] = {}  # a text repeated in a document parses once
    texts = list(dict.fromkeys(text for _, entry in keyed for text in entry.samples))
    with _parsing(texts) as results:
        for batch in _chunks(keyed, BATCH):
            for text in (text for _, entry in batch for text in entry.samples):
                while text not in parsed:  # results come in the order of `texts`
                    done, found = next(results)
                    parsed[done] = found
            created += _create_batch(document, batch, problems, publish, parsed)
    if created:
        KnowledgeRevision.bump_once()
        # Instances only for a listener that reads them (webhooks, when some listen).
        findings_created.send(sender=Finding, findings=_stored_findings(created))
    return created


def _create_batch(
    document: SourceDocument,
    batch: Sequence[tuple[str, ExtractedFinding]],
    problems: tuple[str, ...],
    publish: bool,
    parsed: dict[str, SampleSignatures],
) -> list[int]:
    status = Finding.Status.PUBLISHED if publish else Finding.Status.DRAFT
    prime_lookups([entry for _, entry in batch])
    values = [finding_values(entry, problems) for _, entry in batch]
    names = tuple(values[0])
    findings = _Table(Finding, ("origin_id", "origin_key", "status", *names))
    row = itemgetter(*names)
    findings.rows = [
        (document.pk, key, status, *row(value))
        for (key, _), value in zip(batch, values, strict=True)
    ]
    finding_ids = _create_with_history(findings)
    signature_ids = _signature_ids(
        found for _, entry in batch for text in entry.samples for found in _found(parsed[text])
    )
    tables = _tables()
    for finding_id, (_, entry) in zip(finding_ids, batch, strict=True):
        _add_links(tables, finding_id, entry, document, parsed, signature_ids)
    for name, table in tables.items():
        if name == "fixes":
            _create_with_history(table)
        else:
            _write(table)
    queue_refreshes(finding_ids)
    return finding_ids


@contextmanager
def _parsing(texts: list[str]) -> Iterator[Iterator[tuple[str, SampleSignatures]]]:
    """(text, its signatures) for each of `texts`, in their order, as the caller asks.

    With many texts and a second core, forked workers (one on two cores, two on more)
    parse them while this process writes rows: parsing is pure, the same function gives
    the same results. Where no child process can start (a daemonic worker process, no
    fork), they parse here, one by one."""
    workers = min(2, (os.cpu_count() or 1) - 1)
    inline = ((text, signatures_of_sample(text)) for text in texts)
    if len(texts) < PARALLEL_AT_LEAST or workers < 1:
        yield inline
        return
    try:
        pool = multiprocessing.get_context("fork").Pool(workers)
    except (OSError, ValueError, AssertionError):  # AssertionError: a daemonic process
        yield inline
        return
    with pool:  # leaving it (done, or an error) stops the worker
        yield zip(texts, pool.imap(signatures_of_sample, texts, chunksize=PARSE_CHUNK), strict=True)


def _add_links(
    tables: dict[str, _Table],
    finding_id: int,
    entry: ExtractedFinding,
    document: SourceDocument,
    parsed: dict[str, SampleSignatures],
    signature_ids: dict[str, int],
) -> None:
    tables["sources"].rows.append((finding_id, document.pk))
    gpus = {hardware_pk(gpu): max(gpu.count, 1) for gpu in entry.gpus}
    tables["gpus"].rows += [(finding_id, pk, count) for pk, count in gpus.items()]
    libraries = {release(name, version) for name, version in entry.versions.items()}
    tables["libraries"].rows += [(finding_id, pk) for pk in libraries]
    known = known_flags((entry.framework or "").lower())
    flags = {name[:80]: (value or "")[:500] for name, value in entry.flags}
    tables["flags"].rows += [
        (finding_id, name, value, known.get(name)) for name, value in flags.items()
    ]
    linked: list[int] = []
    for text in entry.samples:
        found = parsed[text]
        first = _found(found)[:1]
        signature_id = signature_ids[first[0].fingerprint] if first else None
        tables["samples"].rows.append(
            (finding_id, text, signature_id, stored_form(found), document.pk)
        )
        if signature_id is not None and signature_id not in linked:
            linked.append(signature_id)
    tables["signatures"].rows += [(finding_id, pk) for pk in linked]
    fix_row = itemgetter(*FIX_VALUES)
    tables["fixes"].rows += [
        (finding_id, position, document.pk, *fix_row(fix_values(fix)))
        for position, fix in enumerate(entry.fixes)
    ]


def _write(table: _Table, *, ids: bool = False) -> list[int]:
    """Insert the table's rows; with `ids`, return the new rows' ids in the rows' order.

    On PostgreSQL the rows go through COPY from the tuples (ids taken from the table's
    sequence first), which costs a fraction of `bulk_create`: no model instance a row,
    no array a column escaped in Python. Every other database gets `bulk_create`."""
    if not table.rows:
        return []
    model = table.model
    if connection.vendor != "postgresql":
        instances = [model(**dict(zip(table.fields, row, strict=True))) for row in table.rows]
        stored = model._default_manager.bulk_create(instances, batch_size=BATCH)
        return [instance.pk for instance in stored] if ids else []
    fields = table.fields
    rows: Iterable[tuple[Any, ...]] = table.rows
    new_ids: list[int] = []
    if ids:
        new_ids = _next_ids(model, len(table.rows))
        fields = (model._meta.pk.attname, *fields)
        rows = ((pk, *row) for pk, row in zip(new_ids, table.rows, strict=True))
    _copy(model, fields, rows)
    return new_ids


def _copy(model: type[Model], names: tuple[str, ...], rows: Iterable[tuple[Any, ...]]) -> None:
    """COPY `rows` (values of the fields `names`) into the model's table; every other
    column gets its field's default, as a new model instance would (a time stamp: now)."""
    meta = model._meta
    given: list[Field[Any, Any]] = [meta.get_field(name) for name in names]  # type: ignore[misc]
    rest = [f for f in meta.concrete_fields if f not in given and not f.primary_key]
    now = timezone.now()
    defaults = tuple(_copy_value(f, now if _stamped(f) else f.get_default()) for f in rest)
    as_json = [(i, f) for i, f in enumerate(given) if isinstance(f, JSONField)]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in [*given, *rest])
    # Only model metadata goes into the text (names quoted); the rows are data.
    copy_in = f"COPY {quote(meta.db_table)} ({columns}) FROM STDIN"
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.copy(copy_in) as copy,
    ):
        for row in rows:
            if as_json:
                values = list(row)
                for i, json_field in as_json:
                    values[i] = _copy_value(json_field, values[i])
                row = tuple(values)
            copy.write_row((*row, *defaults))


def _stamped(f: Field[Any, Any]) -> bool:
    return isinstance(f, DateTimeField) and bool(f.auto_now or f.auto_now_add)


def _copy_value(f: Field[Any, Any], value: Any) -> Any:
    """A field's value as COPY takes it: JSON as its text, as the field would store it."""
    if isinstance(f, JSONField) and value is not None:
        return json.dumps(value, cls=f.encoder)
    return value


def _next_ids(model: type[Model], count: int) -> list[int]:
    """`count` ids from the table's sequence: never handed to anyone else."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [model._meta.db_table, model._meta.pk.column, count],
        )
        return [row[0] for row in cursor.fetchall()]


def _create_with_history(table: _Table) -> list[int]:
    """Insert the table's rows, then their "created" history rows in one statement a
    batch; return the new rows' ids.

    simple_history's bulk helper builds one history instance per row in Python and
    sends every column back as an array; copying the just-inserted rows inside the
    database writes the same history (tracked columns, one date per batch, the
    request's user if any, no change reason) at a fraction of the cost."""
    ids = _write(table, ids=True)
    if not ids:
        return ids
    model = table.model
    history = model.history.model  # type: ignore[attr-defined]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in history.tracked_fields)
    user = history.get_default_history_user(model())
    date = connection.ops.adapt_datetimefield_value(timezone.now())
    pk = quote(model._meta.pk.column)
    # Only model metadata goes into the text (names quoted); every value is a parameter.
    insert = (
        f"INSERT INTO {quote(history._meta.db_table)} ({columns}, history_date,"  # noqa: S608
        " history_change_reason, history_type, history_user_id)"
        f" SELECT {columns}, %s, NULL, '+', %s FROM {quote(model._meta.db_table)}"
    )
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # One array of ids: 500 placeholders a statement cost more to parse and bind
            # in Python than the insert takes.
            cursor.execute(
                f"{insert} WHERE {pk} = ANY(%s) ORDER BY {pk}",
                [date, getattr(user, "pk", None), sorted(ids)],
            )
            return ids
        for batch in _chunks(sorted(ids), HISTORY_BATCH):
            in_list = ", ".join(["%s"] * len(batch))
            cursor.execute(
                f"{insert} WHERE {pk} IN ({in_list}) ORDER BY {pk}",
                [date, getattr(user, "pk", None), *batch],
            )
    return ids


def _stored_findings(ids: list[int]) -> Iterator[Finding]:
    """The findings of `ids`, read back in batches only when iterated."""
    for batch in _chunks(ids, HISTORY_BATCH):
        yield from Finding.objects.filter(pk__in=batch).order_by("pk")


def _found(found: SampleSignatures) -> tuple[Signature, ...]:
    return found if isinstance(found, tuple) else ()


def _signature_ids(signatures: Iterator[Signature]) -> dict[str, int]:
    """fingerprint -> id of the signature's row; rows not stored yet are created."""
    wanted = {signature.fingerprint: signature for signature in signatures}
    stored = dict(
        ErrorSignature.objects.filter(fingerprint__in=list(wanted)).values_list("fingerprint", "pk")
    )
    new = _Table(
        ErrorSignature,
        ("fingerprint", "template_key", "exception_type", "template", "key_frames"),
    )
    new.rows = [
        (
            fingerprint,
            signature.template_key,
            signature.exception_type[:200],
            signature.template,
            list(signature.key_frames),
        )
        for fingerprint, signature in sorted(wanted.items())
        if fingerprint not in stored
    ]
    stored.update(zip((row[0] for row in new.rows), _write(new, ids=True), strict=True))
    return stored


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
