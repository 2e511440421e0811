"""SQLite (`make run`): the FTS5 mirror of the documents, ranked by bm25 with the same
field weights' order as PostgreSQL's: title, errors, context, body."""

from __future__ import annotations

from django.db import connection
from django.db.models import Case, FloatField, QuerySet, Value, When

from kb.models import Finding
from kb.search.backend import FTS_TABLE, RANKED_LIMIT
from kb.search.text import Term


def sqlite_ranking(
    base: QuerySet[Finding], terms: tuple[Term, ...], every: bool
) -> tuple[dict[int, float], Case]:
    ranks = fts_ranks(terms, every)
    ids = base.filter(pk__in=list(ranks)).values_list("pk", flat=True)
    scores = {pk: ranks[pk] for pk in ids}
    rank = Case(
        *(When(pk=pk, then=Value(score)) for pk, score in scores.items()),
        default=Value(0.0),
        output_field=FloatField(),
    )
    return scores, rank


def fts_ranks(terms: tuple[Term, ...], every: bool) -> dict[int, float]:
    sql = (
        f"SELECT rowid, -bm25({FTS_TABLE}, 10.0, 4.0, 2.0, 1.0) FROM {FTS_TABLE} "  # noqa: S608
        f"WHERE {FTS_TABLE} MATCH %s ORDER BY 2 DESC LIMIT {RANKED_LIMIT + 1}"
    )
    match = (" AND " if every else " OR ").join(
        "(" + " OR ".join(f'"{word}"' for word in term.words) + ")" for term in terms
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [match])
        return {int(pk): float(score) for pk, score in cursor.fetchall()}
