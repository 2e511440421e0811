"""Ingestion: documents on disk become findings in the knowledge base.

Idempotent by content: a document already stored byte-for-byte is skipped, unless
the code that reads documents changed since (its samples are then read again); a
document at a known path whose content changed updates the findings it yielded
(same rows, so their history shows the edit). Each document is stored in one
transaction: a document that cannot be read or stored leaves nothing behind and
is reported by name; the run goes on with the next one.

Several ingests may run at once (two operators, a cron job): reading and extracting
run side by side, storing takes turns, one document at a time (a PostgreSQL advisory
lock), so shared rows (GPUs, models, signatures) are never created twice and two
writers never wait on each other's rows.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.db import DatabaseError, connection, transaction

from decisiontree.collector import collector_paused
from decisiontree.documents import (
    MAX_DOCUMENT_BYTES,
    DocumentRejected,
    ExtractedDocument,
    ExtractedFinding,
    decode_document,
    extract_document,
    reader_scheme,
)
from decisiontree.scrub import scrub
from kb.models import ErrorSample, Finding, SourceDocument
from kb.search import refresh_afterwards
from kb.services.bulk import create_findings
from kb.services.records import (
    link_samples,
    lookups_in_transaction,
    own_samples,
    read_joined_samples_again,
    remembered_lookups,
    store_extracted_finding,
    withdraw_contributions,
)

INGESTIBLE_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".log", ""}
MAX_PATH_CHARS = SourceDocument._meta.get_field("path").max_length or 500
# Any constant both ingests agree on; other advisory-lock users pick another number.
STORE_LOCK = 0x46474E47  # "FGNG"


@dataclass
class DocumentOutcome:
    path: str
    action: str  # created | updated | skipped | failed
    findings_created: int = 0
    findings_updated: int = 0
    findings_removed: int = 0
    findings_joined: int = 0  # episodes that joined the finding of the same symptom
    reason: str = ""
    scrubbed: tuple[str, ...] = ()  # secrets replaced by [redacted] before storing


@dataclass
class IngestReport:
    documents: list[DocumentOutcome] = field(default_factory=list)

    def count(self, action: str) -> int:
        return sum(1 for doc in self.documents if doc.action == action)

    @property
    def failed(self) -> list[DocumentOutcome]:
        return [doc for doc in self.documents if doc.action == "failed"]


def ingest_paths(paths: Iterable[str | Path], *, publish: bool = False) -> IngestReport:
    """Ingest files and folders (recursively: .md, .txt, .log). Never stops at a bad file."""
    report = IngestReport()
    with remembered_lookups(), refresh_afterwards():
        for path in iter_documents(paths):
            with collector_paused():  # one document at a time: its objects, then freed
                report.documents.append(ingest_file(path, publish=publish))
    return report


def iter_documents(paths: Iterable[str | Path]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and p.suffix.lower() in INGESTIBLE_SUFFIXES
                and not p.name.startswith(".")
            )
        else:
            yield path


def ingest_file(path: Path, *, publish: bool = False) -> DocumentOutcome:
    name = str(path)
    if len(name) > MAX_PATH_CHARS:
        reason = f"the path has {len(name)} characters; the limit is {MAX_PATH_CHARS}"
        return DocumentOutcome(name, "failed", reason=reason)
    try:
        data = read_within_limit(path)
    except OSError as exc:
        return DocumentOutcome(name, "failed", reason=f"cannot read: {exc.strerror or exc}")
    except DocumentRejected as exc:
        return DocumentOutcome(name, "failed", reason=str(exc))
    return ingest_bytes(data, name, publish=publish)


def read_within_limit(path: Path) -> bytes:
    """The file's bytes; DocumentRejected, before reading, when it is over the limit."""
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        # A file that grows while we read is cut at the limit plus one byte, and refused.
        data = b"" if size > MAX_DOCUMENT_BYTES else file.read(MAX_DOCUMENT_BYTES + 1)
    size = max(size, len(data))
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentRejected(
            f"document is {size / 1024 / 1024:.1f} MB; "
            f"the limit is {MAX_DOCUMENT_BYTES // 1024 // 1024} MB"
        )
    return data


def ingest_bytes(data: bytes, path: str, *, publish: bool = False) -> DocumentOutcome:
    """Store one document and its findings; `path` identifies it for later edits."""
    content_hash = hashlib.sha256(data).hexdigest()
    stored_reader = reader_of(content_hash)
    if stored_reader == reader_scheme():
        return DocumentOutcome(path, "skipped", reason="unchanged")
    try:
        # A write-up quotes what the server printed, tokens and keys included: they are
        # replaced before anything is read or stored (the hash is of the file as written,
        # so an unchanged file is still skipped).
        scrubbed = scrub(decode_document(data, path))
        text = scrubbed.text
        extracted = extract_document(text, path)
    except DocumentRejected as exc:
        return DocumentOutcome(path, "failed", reason=str(exc))
    if not extracted.findings:
        return DocumentOutcome(path, "failed", reason="no finding could be extracted")
    if not holds_an_incident(extracted):
        reason = "holds no incident: no error, no flag, no GPU, no model"
        return DocumentOutcome(path, "skipped", reason=reason)
    try:
        if stored_reader is None:
            outcome = store_document(extracted, text, path, content_hash, publish=publish)
        else:
            outcome = read_again(extracted, text, path, content_hash, publish=publish)
    except DatabaseError as exc:  # the document's transaction rolled back; the run goes on
        return DocumentOutcome(path, "failed", reason=f"could not be stored: {exc}".strip())
    outcome.scrubbed = scrubbed.kinds
    return outcome


def already_stored(content_hash: str) -> bool:
    return SourceDocument.objects.filter(content_hash=content_hash).exists()


def reader_of(content_hash: str) -> str | None:
    """The reader a document with these bytes was last read with; None when none is stored."""
    return (
        SourceDocument.objects.filter(content_hash=content_hash)
        .values_list("reader", flat=True)
        .first()
    )


@transaction.atomic
def store_document(
    extracted: ExtractedDocument, text: str, path: str, content_hash: str, *, publish: bool
) -> DocumentOutcome:
    take_store_turn()
    if already_stored(content_hash):  # another ingest stored it while this one extracted
        return DocumentOutcome(path, "skipped", reason="unchanged")
    with lookups_in_transaction():
        return store_findings(extracted, text, path, content_hash, publish=publish)


def store_findings(
    extracted: ExtractedDocument, text: str, path: str, content_hash: str, *, publish: bool
) -> DocumentOutcome:
    """The document's row and its findings."""
    document = (
        SourceDocument.objects.select_for_update().filter(path=path).first() if path else None
    )
    action = "updated" if document else "created"
    previous = document.content if document else ""
    read_by_older_code = document is not None and document.reader != reader_scheme()
    if document is None:
        document = SourceDocument(path=path)
    document.title = extracted.title[:300] or Path(path).name
    document.format = extracted.format
    document.content = text
    document.content_hash = content_hash
    document.reader = reader_scheme()
    document.save()
    if action == "updated":
        withdraw_contributions(document)
    outcome = DocumentOutcome(path, action)
    if extracted.format == SourceDocument.Format.FINDINGS_MD:
        # FINDINGS.md entries are reviewed as written; extracted write-ups wait for a reviewer.
        kept = store_entries(
            document, extracted, previous, outcome, publish=publish, reread=read_by_older_code
        )
    else:
        kept = store_episodes(document, extracted, outcome, new=action == "created")
    if action == "updated":
        outcome.findings_removed = retire_removed_entries(document, kept)
    return outcome


@transaction.atomic
def read_again(
    extracted: ExtractedDocument, text: str, path: str, content_hash: str, *, publish: bool
) -> DocumentOutcome:
    """A stored document, the same bytes, read by changed code: its findings' samples
    (what matching reads) become what the reader now finds. Everything else stays as
    stored, reviewers' edits included: the document did not change, the reading did."""
    take_store_turn()
    document = SourceDocument.objects.select_for_update().filter(content_hash=content_hash).first()
    with lookups_in_transaction():
        if document is None:  # deleted while this one extracted: stored anew
            return store_findings(extracted, text, path, content_hash, publish=publish)
        if document.reader == reader_scheme():  # another ingest read it again meanwhile
            return DocumentOutcome(path, "skipped", reason="unchanged")
        document.content = text  # the scrub is part of reading: what it now replaces goes
        document.reader = reader_scheme()
        document.save(update_fields=["content", "reader", "updated_at"])
        outcome = DocumentOutcome(
            document.path or path, "updated", reason="read again: FixGraph's reader changed"
        )
        entries = list(keyed_findings(extracted.findings))
        outcome.findings_updated = read_samples_again(document, entries)
        if extracted.format == SourceDocument.Format.WRITEUP:
            outcome.findings_updated += read_joined_samples_again(document, entries)
    return outcome


def read_samples_again(
    document: SourceDocument, entries: Iterable[tuple[str, ExtractedFinding]]
) -> int:
    """Give the document's findings of these entries the samples read now, where they
    differ from the stored ones; returns how many findings changed."""
    findings = {f.origin_key: f for f in Finding.objects.filter(origin=document)}
    held: dict[int, list[str]] = {}
    samples = ErrorSample.objects.filter(finding__origin=document)
    for finding_id, sample in own_samples(samples, document).values_list("finding_id", "text"):
        held.setdefault(finding_id, []).append(sample)
    changed = 0
    for key, entry in entries:
        finding = findings.get(key)
        if finding is None or held.get(finding.pk, []) == list(entry.samples):
            continue
        link_samples(finding, entry.samples, new=False, source=document)
        changed += 1
    return changed


def store_entries(
    document: SourceDocument,
    extracted: ExtractedDocument,
    previous: str,
    outcome: DocumentOutcome,
    *,
    publish: bool,
    reread: bool = False,
) -> set[int]:
    """A FINDINGS.md's entries: new ones in bulk, changed ones one by one, and the ones
    that read as before in the stored version untouched (edits reviewers made stay), but
    for their samples where the stored version was read by older code (`reread`).
    Returns the ids of the document's findings that are still in it."""
    stored = {
        key: (pk, status)
        for key, pk, status in Finding.objects.filter(origin=document).values_list(
            "origin_key", "pk", "status"
        )
    }
    unchanged = unchanged_entries(previous, extracted)
    as_before: list[tuple[str, ExtractedFinding]] = []
    kept: set[int] = set()
    new: list[tuple[str, ExtractedFinding]] = []
    for key, finding in keyed_findings(extracted.findings):
        if key not in stored:
            new.append((key, finding))
            continue
        pk, status = stored[key]
        if key in unchanged and not (publish and status == Finding.Status.DRAFT):
            kept.add(pk)
            as_before.append((key, finding))
            continue
        _, change = store_extracted_finding(
            finding, document, key, problems=extracted.problems, publish=publish
        )
        kept.add(pk)
        outcome.findings_updated += change == "updated"
    if reread:
        outcome.findings_updated += read_samples_again(document, as_before)
    created = create_findings(document, new, problems=extracted.problems, publish=publish)
    outcome.findings_created = len(created)
    return kept | set(created)


def unchanged_entries(previous: str, extracted: ExtractedDocument) -> set[str]:
    """Keys of the entries that read the same in the stored version of the document."""
    if not previous:
        return set()
    try:
        before = extract_document(previous)
    except DocumentRejected:
        return set()
    if before.format != extracted.format or before.problems != extracted.problems:
        return set()  # the problems are written on every finding of the document
    old = dict(keyed_findings(before.findings))
    return {key for key, finding in keyed_findings(extracted.findings) if old.get(key) == finding}


def store_episodes(
    document: SourceDocument, extracted: ExtractedDocument, outcome: DocumentOutcome, *, new: bool
) -> set[int]:
    """A write-up's findings, one by one: each may join the finding of its symptom."""
    kept: set[int] = set()
    for key, finding in keyed_findings(extracted.findings):
        stored, change = store_extracted_finding(
            finding, document, key, problems=extracted.problems, new_document=new
        )
        if change == "joined":
            outcome.findings_joined += 1
            continue
        kept.add(stored.pk)
        if change == "created":
            outcome.findings_created += 1
        elif change == "updated":
            outcome.findings_updated += 1
    return kept


def take_store_turn() -> None:
    """Wait for any other ingest's document to commit (held until this transaction ends)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [STORE_LOCK])


def holds_an_incident(extracted: ExtractedDocument) -> bool:
    """A write-up worth a draft names at least an error, a flag, a GPU or a model."""
    if extracted.format != SourceDocument.Format.WRITEUP:
        return True
    return any(f.samples or f.flags or f.gpus or f.model for f in extracted.findings)


def drafts_waiting() -> int:
    return Finding.objects.filter(status=Finding.Status.DRAFT).count()


def retire_removed_entries(document: SourceDocument, kept: set[int]) -> int:
    """An entry removed from its document is retired, not deleted: its history stays."""
    stale = Finding.objects.filter(origin=document).exclude(pk__in=kept)
    stale = stale.exclude(status=Finding.Status.RETIRED)
    count = 0
    for finding in stale:
        finding.status = Finding.Status.RETIRED
        finding.save(update_fields=["status", "updated_at"])
        count += 1
    return count


def keyed_findings(
    findings: Iterable[ExtractedFinding],
) -> Iterator[tuple[str, ExtractedFinding]]:
    """Give each entry a key stable across edits: its title, made unique in the document."""
    seen: dict[str, int] = {}
    for finding in findings:
        key = slugify_title(finding.title) or "finding"
        seen[key] = seen.get(key, 0) + 1
        yield (key if seen[key] == 1 else f"{key}-{seen[key]}"), finding


def slugify_title(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:280]
