"""Many new findings of one document, written in a few statements per batch.

A FINDINGS.md of 20,000 entries is one transaction; saved row by row it took about
ten statements an entry and minutes in all. Here a batch of BATCH entries costs a
fixed number of statements: the findings and their first history rows, then each
kind of linked row (sources, GPUs, libraries, flags, signatures, samples, fixes and
their history, the search queue) in one insert. What per-row saves would have sent
as signals happens once a batch: the knowledge revision moves, the search documents
are queued, and `findings_created` tells its listeners (webhooks) which rows are new.

Must run inside the document's transaction, holding the ingest's store turn (see
kb.services.ingest): the shared rows it creates (models, releases, GPUs, signatures)
are then never created by two writers at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model
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
T = TypeVar("T")


@dataclass
class _Rows:
    """The rows one batch adds beside its findings."""

    sources: list[Any] = field(default_factory=list)
    gpus: list[FindingGpu] = field(default_factory=list)
    libraries: list[Any] = field(default_factory=list)
    flags: list[FlagSetting] = field(default_factory=list)
    samples: list[ErrorSample] = field(default_factory=list)
    signatures: list[Any] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)


def create_findings(
    document: SourceDocument,
    keyed: Sequence[tuple[str, ExtractedFinding]],
    *,
    problems: tuple[str, ...],
    publish: bool,
) -> list[Finding]:
    """Store `keyed` entries of a new `document` as new findings; return them."""
    created: list[Finding] = []
    parsed: dict[str, SampleSignatures] = {}  # a text repeated in a document parses once
    for batch in _chunks(keyed, BATCH):
        created += _create_batch(document, batch, problems, publish, parsed)
    if created:
        KnowledgeRevision.bump_once()
        findings_created.send(sender=Finding, findings=created)
    return created


def _create_batch(
    document: SourceDocument,
    batch: Sequence[tuple[str, ExtractedFinding]],
    problems: tuple[str, ...],
    publish: bool,
    parsed: dict[str, SampleSignatures],
) -> list[Finding]:
    status = Finding.Status.PUBLISHED if publish else Finding.Status.DRAFT
    prime_lookups([entry for _, entry in batch])
    findings = [
        Finding(origin=document, origin_key=key, status=status, **finding_values(entry, problems))
        for key, entry in batch
    ]
    _create_with_history(findings, Finding)
    for entry in (entry for _, entry in batch):
        for text in entry.samples:
            if text not in parsed:
                parsed[text] = signatures_of_sample(text)
    signature_ids = _signature_ids(
        found for _, entry in batch for text in entry.samples for found in _found(parsed[text])
    )
    rows = _Rows()
    for finding, (_, entry) in zip(findings, batch, strict=True):
        _add_links(rows, finding, entry, document, parsed, signature_ids)
    _insert(rows)
    queue_refreshes([finding.pk for finding in findings])
    return findings


def _add_links(
    rows: _Rows,
    finding: Finding,
    entry: ExtractedFinding,
    document: SourceDocument,
    parsed: dict[str, SampleSignatures],
    signature_ids: dict[str, int],
) -> None:
    sources = Finding.sources.through
    rows.sources.append(sources(finding_id=finding.pk, sourcedocument_id=document.pk))
    gpus = {hardware_pk(gpu): max(gpu.count, 1) for gpu in entry.gpus}
    rows.gpus += [FindingGpu(finding=finding, hardware_id=pk, count=n) for pk, n in gpus.items()]
    libraries = {release(name, version) for name, version in entry.versions.items()}
    through = Finding.libraries.through
    rows.libraries += [through(finding_id=finding.pk, frameworkrelease_id=pk) for pk in libraries]
    known = known_flags((entry.framework or "").lower())
    flags = {name[:80]: (value or "")[:500] for name, value in entry.flags}
    rows.flags += [
        FlagSetting(finding=finding, name=name, value=value, flag_id=known.get(name))
        for name, value in flags.items()
    ]
    linked: list[int] = []
    for text in entry.samples:
        found = parsed[text]
        first = _found(found)[:1]
        signature_id = signature_ids[first[0].fingerprint] if first else None
        rows.samples.append(
            ErrorSample(
                finding=finding,
                text=text,
                signature_id=signature_id,
                parsed=stored_form(found),
                source=document,
            )
        )
        if signature_id is not None and signature_id not in linked:
            linked.append(signature_id)
    through = Finding.signatures.through
    rows.signatures += [through(finding_id=finding.pk, errorsignature_id=pk) for pk in linked]
    rows.fixes += [
        Fix(finding=finding, position=position, source=document, **fix_values(fix))
        for position, fix in enumerate(entry.fixes)
    ]


def _insert(rows: _Rows) -> None:
    Finding.sources.through.objects.bulk_create(rows.sources, batch_size=BATCH)
    FindingGpu.objects.bulk_create(rows.gpus, batch_size=BATCH)
    Finding.libraries.through.objects.bulk_create(rows.libraries, batch_size=BATCH)
    FlagSetting.objects.bulk_create(rows.flags, batch_size=BATCH)
    ErrorSample.objects.bulk_create(rows.samples, batch_size=BATCH)
    Finding.signatures.through.objects.bulk_create(rows.signatures, batch_size=BATCH)
    _create_with_history(rows.fixes, Fix)


def _create_with_history(rows: Sequence[Model], model: type[Model]) -> None:
    """Insert `rows`, then their "created" history rows in one statement.

    simple_history's bulk helper builds one history instance per row in Python and
    sends every column back as an array; copying the just-inserted rows inside the
    database writes the same history (tracked columns, one date per batch, the
    request's user if any, no change reason) at a fraction of the cost."""
    model._default_manager.bulk_create(rows, batch_size=BATCH)
    if not rows:
        return
    history = model.history.model  # type: ignore[attr-defined]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in history.tracked_fields)
    user = history.get_default_history_user(rows[0])
    date = connection.ops.adapt_datetimefield_value(timezone.now())
    pk = quote(model._meta.pk.column)
    # Only model metadata goes into the text (names quoted); every value is a parameter.
    insert = (
        f"INSERT INTO {quote(history._meta.db_table)} ({columns}, history_date,"  # noqa: S608
        " history_change_reason, history_type, history_user_id)"
        f" SELECT {columns}, %s, NULL, '+', %s FROM {quote(model._meta.db_table)}"
    )
    with connection.cursor() as cursor:
        for batch in _chunks([row.pk for row in rows], HISTORY_BATCH):
            ids = ", ".join(["%s"] * len(batch))
            cursor.execute(
                f"{insert} WHERE {pk} IN ({ids}) ORDER BY {pk}",
                [date, getattr(user, "pk", None), *batch],
            )


def _found(found: SampleSignatures) -> tuple[Signature, ...]:
    return found if isinstance(found, tuple) else ()


def _signature_ids(signatures: Iterator[Signature]) -> dict[str, int]:
    """fingerprint -> id of the signature's row; rows not stored yet are created."""
    wanted = {signature.fingerprint: signature for signature in signatures}
    stored = dict(
        ErrorSignature.objects.filter(fingerprint__in=list(wanted)).values_list("fingerprint", "pk")
    )
    new = [
        ErrorSignature(
            fingerprint=fingerprint,
            template_key=signature.template_key,
            exception_type=signature.exception_type[:200],
            template=signature.template,
            key_frames=list(signature.key_frames),
        )
        for fingerprint, signature in sorted(wanted.items())
        if fingerprint not in stored
    ]
    for row in ErrorSignature.objects.bulk_create(new, batch_size=BATCH):
        stored[row.fingerprint] = row.pk
    return stored


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
