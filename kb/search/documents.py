"""A finding's search document: its text by weight, its facets, and writing them.

One row per finding (kb.models.search.FindingSearchDocument), so a search never
joins six tables. PostgreSQL: a weighted tsvector ('simple' config: no stemming,
no stop words). SQLite: an FTS5 table mirrors the four indexed fields.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import astuple, dataclass, field
from typing import Any, NamedTuple

from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from decisiontree.finding_words import own_texts, stored_words
from kb.models import ErrorSample, Finding, FindingGpu, Fix, FlagSetting, FrameworkRelease
from kb.models.search import (
    SEARCH_WORD_MAX_CHARS,
    FindingSearchDocument,
    GraphWords,
    SearchWord,
)
from kb.search.backend import FTS_TABLE, postgres
from kb.search.facets import Facet, facet_text, finding_facets
from kb.search.ranking.postgresql import AnyOf
from kb.search.text import searchable

MAX_SAMPLE_CHARS = 20_000
BATCH = 500  # findings read at a time
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


class ModelRow(NamedTuple):
    """The fields of a finding's LanguageModel a document and its facets read."""

    name: str
    family: str
    arch: str
    quantization: str


class ReleaseRow(NamedTuple):
    """The fields of a finding's FrameworkRelease a document and its facets read."""

    name: str
    version: str

    def __str__(self) -> str:
        return FrameworkRelease.__str__(self)  # type: ignore[arg-type]  # reads name, version


class FindingRow(NamedTuple):
    """The fields of a finding a document and its facets read (`DOCUMENT_READS`), as a
    plain row: a model instance a finding cost more than building its document."""

    pk: int
    title: str
    summary: str
    cause: str
    body: str
    works_command: str
    conditions: list[object] | None
    status: str
    model: ModelRow | None
    framework: ReleaseRow | None


@dataclass
class Linked:
    """What hangs off one finding, in each relation's own order, as plain rows."""

    signatures: list[SignatureRow] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)
    flags: list[FlagRow] = field(default_factory=list)
    gpus: list[GpuRow] = field(default_factory=list)
    fixes: list[FixRow] = field(default_factory=list)


def among(name: str, ids: list[int]) -> Q | AnyOf:
    """`name IN ids`; on PostgreSQL as one array (`= ANY`): 500 placeholders cost more to
    compile, bind and parse than the query takes to run."""
    return AnyOf(F(name), ids) if postgres() else Q(**{f"{name}__in": ids})


def linked_rows(finding_ids: list[int]) -> dict[int, Linked]:
    """One query per relation, read as values: no model instance per related row."""
    linked: dict[int, Linked] = defaultdict(Linked)
    through = Finding.signatures.through.objects.filter(among("finding_id", finding_ids))
    for finding_id, *signature in through.order_by(
        "errorsignature__exception_type", "errorsignature__template", "errorsignature_id"
    ).values_list(
        "finding_id",
        "errorsignature__exception_type",
        "errorsignature__template",
        "errorsignature__key_frames",
    ):
        linked[finding_id].signatures.append(SignatureRow(*signature))
    samples = ErrorSample.objects.filter(among("finding_id", finding_ids)).order_by("pk")
    for finding_id, text in samples.values_list("finding_id", "text"):
        linked[finding_id].samples.append(text)
    flags = FlagSetting.objects.filter(among("finding_id", finding_ids)).order_by("name", "pk")
    for finding_id, *flag in flags.values_list("finding_id", "name", "value"):
        linked[finding_id].flags.append(FlagRow(*flag))
    gpus = FindingGpu.objects.filter(among("finding_id", finding_ids)).order_by(
        "hardware__name", "pk"
    )
    for finding_id, *gpu in gpus.values_list(
        "finding_id",
        "hardware__name",
        "hardware__arch",
        "hardware__family",
        "hardware__aliases",
        "hardware__compute_capability",
    ):
        linked[finding_id].gpus.append(GpuRow(*gpu))
    fixes = Fix.objects.filter(among("finding_id", finding_ids)).order_by("position", "id")
    for finding_id, *fix in fixes.values_list("finding_id", "summary", "changes"):
        linked[finding_id].fixes.append(FixRow(*fix))
    return linked


def document_fields(finding: FindingRow, linked: Linked) -> DocumentFields:
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


def context_lines(finding: FindingRow, linked: Linked) -> Iterable[str | None]:
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


def body_lines(finding: FindingRow, linked: Linked) -> Iterable[str | None]:
    yield finding.body
    yield finding.works_command
    for fix in linked.fixes:
        yield fix.summary
        for change in fix.changes or ():
            if isinstance(change, dict):
                yield f"{change.get('name', '')} {change.get('value') or ''}"


@dataclass(frozen=True)
class BuiltDocument:
    """A finding's document as built: the searchable text by weight, which only the
    writing reads (PostgreSQL makes the vector of it, SQLite's FTS5 table keeps it), and
    the facets, which the row keeps."""

    finding_id: int
    fields: DocumentFields
    facets: str
    graph_words: dict[str, Any]  # the finding's own words, which the graph build reads (kept
    # in a table of their own: kb.models.search.GraphWords)


def built_document(
    finding: FindingRow | Finding,
    fields: DocumentFields,
    facets: Iterable[Facet] = (),
    fix_summaries: Iterable[str] = (),
) -> BuiltDocument:
    texts = own_texts(finding.title, finding.summary, finding.cause, fix_summaries)
    return BuiltDocument(
        finding_id=finding.pk,
        graph_words=stored_words(text for _, text in texts),
        fields=DocumentFields(
            title=searchable(fields.title),
            errors=searchable(fields.errors),
            context=searchable(fields.context),
            body=searchable(fields.body),
        ),
        facets=facet_text(facets),
    )


# What a document and its facets read of a finding (the rest is never loaded).
DOCUMENT_READS = (
    "pk",
    "title",
    "summary",
    "cause",
    "body",
    "works_command",
    "conditions",
    "status",
    "model_id",
    *(f"model__{name}" for name in ModelRow._fields),
    "framework_id",
    *(f"framework__{name}" for name in ReleaseRow._fields),
)


def finding_rows(finding_ids: list[int]) -> list[FindingRow]:
    """The findings of `finding_ids` (those that still exist) as `FindingRow`s."""
    rows = []
    own = len(FindingRow._fields) - 2  # pk … status, then the model's and the release's
    framework_at = own + 1 + len(ModelRow._fields)
    for values in Finding.objects.filter(among("pk", finding_ids)).values_list(*DOCUMENT_READS):
        fields, model_id, model = values[:own], values[own], values[own + 1 : framework_at]
        framework_id, release = values[framework_at], values[framework_at + 1 :]
        rows.append(
            FindingRow(
                *fields,
                model=ModelRow(*model) if model_id is not None else None,
                framework=ReleaseRow(*release) if framework_id is not None else None,
            )
        )
    return rows


def built_documents(finding_ids: list[int]) -> tuple[list[BuiltDocument], set[int]]:
    """The documents of these findings, and the ids of those that are gone (deleted)."""
    findings = finding_rows(finding_ids)
    linked = linked_rows([finding.pk for finding in findings])
    documents = []
    for finding in findings:
        rows = linked.get(finding.pk, Linked())
        facets = finding_facets(finding, rows.gpus, rows.flags)
        fields = document_fields(finding, rows)
        fix_summaries = (fix.summary for fix in rows.fixes)
        documents.append(built_document(finding, fields, facets, fix_summaries))
    return documents, set(finding_ids) - {finding.pk for finding in findings}


def write_documents(finding_ids: list[int], *, batch: int = BATCH) -> None:
    """Rebuild the documents of these findings (and drop those of deleted ones), in one
    transaction, `batch` findings read at a time."""
    with transaction.atomic():
        for start in range(0, len(finding_ids), batch):
            documents, gone = built_documents(finding_ids[start : start + batch])
            store_documents(documents)
            FindingSearchDocument.objects.filter(finding_id__in=gone).delete()
            for finding_id in gone:
                write_fts_row(finding_id, None)


def store_documents(documents: list[BuiltDocument]) -> None:
    """Write these documents over their findings' old ones, and remember their words."""
    with transaction.atomic():
        if postgres():
            store_by_copy(documents)
        else:
            FindingSearchDocument.objects.bulk_create(
                (
                    FindingSearchDocument(finding_id=document.finding_id, facets=document.facets)
                    for document in documents
                ),
                update_conflicts=True,
                unique_fields=["finding"],
                update_fields=["facets", "built_at"],
            )
            for document in documents:
                write_fts_row(document.finding_id, document.fields)
        insert_words(document_words(documents))
        GraphWords.objects.bulk_create(
            (GraphWords(finding_id=d.finding_id, stored=d.graph_words) for d in documents),
            update_conflicts=True,
            unique_fields=["finding"],
            update_fields=["stored"],
            batch_size=BATCH,
        )


def insert_words(words: set[str]) -> None:
    if postgres():
        quote = connection.ops.quote_name
        # Atomic: the temporary table lives until commit, which in autocommit is at once.
        with transaction.atomic(), connection.cursor() as cursor:
            temporary_table(cursor, "new_search_words", "word text")
            copy_rows(cursor, "new_search_words", ((word,) for word in sorted(words)))
            cursor.execute(
                f"INSERT INTO {quote(SearchWord._meta.db_table)} (word)"  # noqa: S608
                " SELECT word FROM new_search_words ORDER BY word ON CONFLICT DO NOTHING"
            )
            cursor.execute("DROP TABLE new_search_words")
        return
    SearchWord.objects.bulk_create(
        (SearchWord(word=word) for word in sorted(words)), batch_size=2000, ignore_conflicts=True
    )


def document_words(documents: Iterable[BuiltDocument]) -> set[str]:
    """The documents' words that go on the list query words are corrected against."""
    words: set[str] = set()
    for document in documents:
        for text in astuple(document.fields):
            words.update(text.split())
    # Each distinct word measured once, not each time it occurs.
    return {word for word in words if len(word) <= SEARCH_WORD_MAX_CHARS}


def store_by_copy(documents: list[BuiltDocument]) -> None:
    """PostgreSQL: the documents go through COPY into a temporary table, then one INSERT …
    ON CONFLICT from it that computes the weighted vector. Only the vector and the facets
    are kept: the text is read once, here (the row is narrower, and ranking reads every
    matching row: 30 % faster at 100k findings, bench/README.md, "Session 31")."""
    quote = connection.ops.quote_name
    table = quote(FindingSearchDocument._meta.db_table)
    vector = " || ".join(
        f"setweight(to_tsvector('simple'::regconfig, COALESCE({quote(name)}, '')), '{weight}')"
        for name, weight in WEIGHTS.items()
    )
    updates = ", ".join(
        f"{quote(name)} = EXCLUDED.{quote(name)}" for name in ("facets", "built_at", "vector")
    )
    rows = (
        (document.finding_id, *astuple(document.fields), document.facets) for document in documents
    )
    # Only field names and constants go into the text; the rows are data, the time a parameter.
    with connection.cursor() as cursor:
        temporary_table(
            cursor,
            "new_search_documents",
            "finding_id bigint, title text, errors text, context text, body text, facets text",
        )
        copy_rows(cursor, "new_search_documents", rows)
        cursor.execute(
            f"INSERT INTO {table} (finding_id, facets, built_at, vector)"  # noqa: S608
            f" SELECT finding_id, facets, %s, {vector} FROM new_search_documents"
            f" ORDER BY finding_id ON CONFLICT (finding_id) DO UPDATE SET {updates}",
            [timezone.now()],
        )
        cursor.execute("DROP TABLE new_search_documents")


def temporary_table(cursor: Any, table: str, columns: str) -> None:
    """A temporary `table`, dropped at commit at the latest."""
    cursor.execute(f"CREATE TEMPORARY TABLE {table} ({columns}) ON COMMIT DROP")


def copy_rows(cursor: Any, table: str, rows: Iterable[tuple[Any, ...]]) -> None:
    with connection.wrap_database_errors, cursor.copy(f"COPY {table} FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


WEIGHTS = dict(zip(INDEXED_FIELDS, "ABCD", strict=True))  # title A ... body D


def write_fts_row(finding_id: int, fields: DocumentFields | None) -> None:
    """SQLite: the finding's row of the FTS5 table (none when `fields` is None)."""
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {FTS_TABLE} WHERE rowid = %s", [finding_id])  # noqa: S608
        if fields is not None:
            cursor.execute(
                f"INSERT INTO {FTS_TABLE} (rowid, title, errors, context, body) "  # noqa: S608
                "VALUES (%s, %s, %s, %s, %s)",
                [finding_id, *astuple(fields)],
            )
