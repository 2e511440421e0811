"""A finding's search document: its text by weight, its facets, and writing them.

One row per finding (kb.models.search.FindingSearchDocument), so a search never
joins six tables. PostgreSQL: a weighted tsvector ('simple' config: no stemming,
no stop words). SQLite: an FTS5 table mirrors the four indexed fields.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.contrib.postgres.search import SearchVector
from django.db import connection, transaction
from django.utils import timezone

from kb.models import ErrorSample, Finding, FindingGpu, Fix, FlagSetting
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


class SignatureRow(NamedTuple):
    exception_type: str
    template: str
    key_frames: list[object] | None


class GpuRow(NamedTuple):
    """The fields of a finding's Hardware a document and its facets read."""

    name: str
    arch: str
    family: str
    aliases: list[object] | None
    compute_capability: str


class FlagRow(NamedTuple):
    name: str
    value: str


class FixRow(NamedTuple):
    summary: str
    changes: list[object] | None


@dataclass
class Linked:
    """What hangs off one finding, in each relation's own order, as plain rows."""

    signatures: list[SignatureRow] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)
    flags: list[FlagRow] = field(default_factory=list)
    gpus: list[GpuRow] = field(default_factory=list)
    fixes: list[FixRow] = field(default_factory=list)


def linked_rows(finding_ids: list[int]) -> dict[int, Linked]:
    """One query per relation, read as values: no model instance per related row."""
    linked: dict[int, Linked] = defaultdict(Linked)
    through = Finding.signatures.through.objects.filter(finding_id__in=finding_ids)
    for finding_id, *signature in through.order_by(
        "errorsignature__exception_type", "errorsignature__template", "errorsignature_id"
    ).values_list(
        "finding_id",
        "errorsignature__exception_type",
        "errorsignature__template",
        "errorsignature__key_frames",
    ):
        linked[finding_id].signatures.append(SignatureRow(*signature))
    samples = ErrorSample.objects.filter(finding_id__in=finding_ids).order_by("pk")
    for finding_id, text in samples.values_list("finding_id", "text"):
        linked[finding_id].samples.append(text)
    flags = FlagSetting.objects.filter(finding_id__in=finding_ids).order_by("name", "pk")
    for finding_id, *flag in flags.values_list("finding_id", "name", "value"):
        linked[finding_id].flags.append(FlagRow(*flag))
    gpus = FindingGpu.objects.filter(finding_id__in=finding_ids).order_by("hardware__name", "pk")
    for finding_id, *gpu in gpus.values_list(
        "finding_id",
        "hardware__name",
        "hardware__arch",
        "hardware__family",
        "hardware__aliases",
        "hardware__compute_capability",
    ):
        linked[finding_id].gpus.append(GpuRow(*gpu))
    fixes = Fix.objects.filter(finding_id__in=finding_ids).order_by("position", "id")
    for finding_id, *fix in fixes.values_list("finding_id", "summary", "changes"):
        linked[finding_id].fixes.append(FixRow(*fix))
    return linked


def document_fields(finding: Finding, linked: Linked) -> DocumentFields:
    return DocumentFields(
        title=finding.title,
        errors=join_lines(error_lines(linked)),
        context=join_lines(context_lines(finding, linked)),
        body=join_lines(body_lines(finding, linked)),
    )


def join_lines(lines: Iterable[str | None]) -> str:
    return "\n".join(line for line in lines if line)


def error_lines(linked: Linked) -> Iterable[str]:
    for signature in linked.signatures:
        yield f"{signature.exception_type}: {signature.template}"
        yield " ".join(str(frame) for frame in signature.key_frames or ())
    for text in linked.samples:
        yield text[:MAX_SAMPLE_CHARS]


def context_lines(finding: Finding, linked: Linked) -> Iterable[str | None]:
    yield finding.summary
    yield finding.cause
    for setting in linked.flags:
        yield f"--{setting.name} {setting.value}"
    for gpu in linked.gpus:
        yield f"{gpu.name} {gpu.arch} {gpu.family} {' '.join(map(str, gpu.aliases or ()))}"
    for condition in finding.conditions or ():
        if isinstance(condition, dict):
            yield f"{condition.get('key', '')} = {condition.get('value', '')}"
    if finding.model is not None:
        model = finding.model
        yield f"{model.name} {model.family} {model.arch} {model.quantization}"
    if finding.framework is not None:
        yield str(finding.framework)


def body_lines(finding: Finding, linked: Linked) -> Iterable[str | None]:
    yield finding.body
    yield finding.works_command
    for fix in linked.fixes:
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
    findings = list(Finding.objects.filter(pk__in=finding_ids).select_related("model", "framework"))
    linked = linked_rows([finding.pk for finding in findings])
    documents = []
    for finding in findings:
        rows = linked.get(finding.pk, Linked())
        facets = finding_facets(finding, rows.gpus, rows.flags)
        documents.append(document_row(finding, document_fields(finding, rows), facets))
    gone = set(finding_ids) - {finding.pk for finding in findings}
    with transaction.atomic():
        if postgres():
            upsert_by_copy(documents)
        else:
            FindingSearchDocument.objects.bulk_create(
                documents,
                update_conflicts=True,
                unique_fields=["finding"],
                update_fields=[*INDEXED_FIELDS, "facets", "built_at"],
            )
        FindingSearchDocument.objects.filter(finding_id__in=gone).delete()
        for document in documents:
            write_fts_row(document.finding_id, {f: getattr(document, f) for f in INDEXED_FIELDS})
        for finding_id in gone:
            write_fts_row(finding_id, None)
        remember_words(documents)


def remember_words(documents: Iterable[FindingSearchDocument]) -> None:
    """Add the documents' words to the list query words are corrected against."""
    words = sorted(
        {
            word
            for document in documents
            for name in INDEXED_FIELDS
            for word in getattr(document, name).split()
            if len(word) <= SEARCH_WORD_MAX_CHARS
        }
    )
    if postgres():
        quote = connection.ops.quote_name
        with connection.cursor() as cursor:
            through_copy(cursor, "new_search_words", "word text", [(word,) for word in words])
            cursor.execute(
                f"INSERT INTO {quote(SearchWord._meta.db_table)} (word)"  # noqa: S608
                " SELECT word FROM new_search_words ORDER BY word ON CONFLICT DO NOTHING"
            )
            cursor.execute("DROP TABLE new_search_words")
        return
    SearchWord.objects.bulk_create(
        (SearchWord(word=word) for word in words), batch_size=2000, ignore_conflicts=True
    )


COPIED = ("finding_id", *INDEXED_FIELDS, "facets")


def upsert_by_copy(documents: list[FindingSearchDocument]) -> None:
    """PostgreSQL: the documents go through COPY into a temporary table, then one
    INSERT … ON CONFLICT from it that computes the weighted vector too. bulk_create sent
    each column as an array that psycopg escapes in Python, and the vector took an UPDATE
    of every row after it."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(name) for name in COPIED)
    vector = " || ".join(
        f"setweight(to_tsvector('simple'::regconfig, COALESCE({quote(name)}, '')), '{weight}')"
        for name, weight in WEIGHTS.items()
    )
    updated = (*INDEXED_FIELDS, "facets", "built_at", "vector")
    updates = ", ".join(f"{quote(name)} = EXCLUDED.{quote(name)}" for name in updated)
    rows = [tuple(getattr(document, name) for name in COPIED) for document in documents]
    # Only field names and constants go into the text; the rows are data, the time a parameter.
    with connection.cursor() as cursor:
        through_copy(
            cursor,
            "new_search_documents",
            "finding_id bigint, title text, errors text, context text, body text, facets text",
            rows,
        )
        cursor.execute(
            f"INSERT INTO {quote(FindingSearchDocument._meta.db_table)}"  # noqa: S608
            f" ({columns}, built_at, vector) SELECT {columns}, %s, {vector}"
            " FROM new_search_documents ORDER BY finding_id"
            f" ON CONFLICT (finding_id) DO UPDATE SET {updates}",
            [timezone.now()],
        )
        cursor.execute("DROP TABLE new_search_documents")


def through_copy(cursor: Any, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    """A temporary `table` (dropped at commit at the latest) holding `rows`, written by COPY."""
    cursor.execute(f"CREATE TEMPORARY TABLE {table} ({columns}) ON COMMIT DROP")
    with connection.wrap_database_errors, cursor.copy(f"COPY {table} FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


WEIGHTS = dict(zip(INDEXED_FIELDS, "ABCD", strict=True))  # title A ... body D


def weighted_vector() -> SearchVector:
    """The vector `upsert_by_copy` writes, as a Django expression (bench/search_speed.py)."""
    vectors = [SearchVector(name, weight=w, config="simple") for name, w in WEIGHTS.items()]
    combined = vectors[0]
    for vector in vectors[1:]:
        combined = combined + vector
    return combined


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
