"""A finding's search document: its text by weight, its facets, and writing them.

One row per finding (kb.models.search.FindingSearchDocument), so a search never
joins six tables. PostgreSQL: a weighted tsvector ('simple' config: no stemming,
no stop words). SQLite: an FTS5 table mirrors the four indexed fields.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.postgres.search import SearchVector
from django.db import connection, transaction
from django.utils import timezone

from kb.models import Finding
from kb.models.search import SEARCH_WORD_MAX_CHARS, FindingSearchDocument, SearchWord
from kb.search.backend import FTS_TABLE, postgres
from kb.search.facets import Facet, facet_text, finding_facets
from kb.search.text import searchable

MAX_SAMPLE_CHARS = 20_000
INDEXED_FIELDS = ("title", "errors", "context", "body")


@dataclass(frozen=True)
class DocumentFields:
    title: str
    errors: str
    context: str
    body: str


def document_fields(finding: Finding) -> DocumentFields:
    return DocumentFields(
        title=finding.title,
        errors=join_lines(error_lines(finding)),
        context=join_lines(context_lines(finding)),
        body=join_lines(body_lines(finding)),
    )


def join_lines(lines: Iterable[str | None]) -> str:
    return "\n".join(line for line in lines if line)


def error_lines(finding: Finding) -> Iterable[str]:
    for signature in finding.signatures.all():
        yield f"{signature.exception_type}: {signature.template}"
        yield " ".join(str(frame) for frame in signature.key_frames or ())
    for sample in finding.samples.all():
        yield sample.text[:MAX_SAMPLE_CHARS]


def context_lines(finding: Finding) -> Iterable[str | None]:
    yield finding.summary
    yield finding.cause
    for setting in finding.flag_settings.all():
        yield f"--{setting.name} {setting.value}"
    for gpu in finding.gpus.all():
        yield f"{gpu.name} {gpu.arch} {gpu.family} {' '.join(map(str, gpu.aliases or ()))}"
    for condition in finding.conditions or ():
        if isinstance(condition, dict):
            yield f"{condition.get('key', '')} = {condition.get('value', '')}"
    if finding.model is not None:
        model = finding.model
        yield f"{model.name} {model.family} {model.arch} {model.quantization}"
    if finding.framework is not None:
        yield str(finding.framework)


def body_lines(finding: Finding) -> Iterable[str | None]:
    yield finding.body
    yield finding.works_command
    for fix in finding.fixes.all():
        yield fix.summary
        for change in fix.changes or ():
            if isinstance(change, dict):
                yield f"{change.get('name', '')} {change.get('value') or ''}"


def document_row(
    finding: Finding, fields: DocumentFields, facets: Iterable[Facet] = ()
) -> FindingSearchDocument:
    return FindingSearchDocument(
        finding=finding,
        title=searchable(fields.title),
        errors=searchable(fields.errors),
        context=searchable(fields.context),
        body=searchable(fields.body),
        facets=facet_text(facets),
        built_at=timezone.now(),
    )


def write_documents(finding_ids: list[int]) -> None:
    """Rebuild the documents of these findings (and drop those of deleted ones), in bulk."""
    findings = list(
        Finding.objects.filter(pk__in=finding_ids)
        .select_related("model", "framework")
        .prefetch_related("signatures", "samples", "flag_settings", "gpus", "fixes")
    )
    documents = [
        document_row(finding, document_fields(finding), finding_facets(finding))
        for finding in findings
    ]
    gone = set(finding_ids) - {finding.pk for finding in findings}
    with transaction.atomic():
        FindingSearchDocument.objects.bulk_create(
            documents,
            update_conflicts=True,
            unique_fields=["finding"],
            update_fields=[*INDEXED_FIELDS, "facets", "built_at"],
        )
        FindingSearchDocument.objects.filter(finding_id__in=gone).delete()
        if postgres():
            FindingSearchDocument.objects.filter(
                finding_id__in=[d.finding_id for d in documents]
            ).update(vector=weighted_vector())
        for document in documents:
            write_fts_row(document.finding_id, {f: getattr(document, f) for f in INDEXED_FIELDS})
        for finding_id in gone:
            write_fts_row(finding_id, None)
        remember_words(documents)


def remember_words(documents: Iterable[FindingSearchDocument]) -> None:
    """Add the documents' words to the list query words are corrected against."""
    words = {
        word
        for document in documents
        for field in INDEXED_FIELDS
        for word in getattr(document, field).split()
        if len(word) <= SEARCH_WORD_MAX_CHARS
    }
    SearchWord.objects.bulk_create(
        (SearchWord(word=word) for word in sorted(words)), batch_size=2000, ignore_conflicts=True
    )


def weighted_vector() -> SearchVector:
    return (
        SearchVector("title", weight="A", config="simple")
        + SearchVector("errors", weight="B", config="simple")
        + SearchVector("context", weight="C", config="simple")
        + SearchVector("body", weight="D", config="simple")
    )


def write_fts_row(finding_id: int, indexed: dict[str, str] | None) -> None:
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {FTS_TABLE} WHERE rowid = %s", [finding_id])  # noqa: S608
        if indexed is not None:
            cursor.execute(
                f"INSERT INTO {FTS_TABLE} (rowid, title, errors, context, body) "  # noqa: S608
                "VALUES (%s, %s, %s, %s, %s)",
                [
                    finding_id,
                    indexed["title"],
                    indexed["errors"],
                    indexed["context"],
                    indexed["body"],
                ],
            )
