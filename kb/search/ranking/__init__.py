"""Ranking the matches of a read query, one module per backend: PostgreSQL
(weighted tsvector, from a RUM index where the server has the extension) and
SQLite (FTS5 with bm25)."""

from __future__ import annotations

from django.db.models import QuerySet

from kb.models import Finding
from kb.search.backend import postgres
from kb.search.ranking.postgresql import postgres_ranking
from kb.search.ranking.sqlite import sqlite_ranking
from kb.search.text import Term


def ranked_matches(
    base: QuerySet[Finding], terms: tuple[Term, ...], every: bool
) -> tuple[QuerySet[Finding], list[int]]:
    """The best matches' ids, best first (ties: newest id first, as the queryset orders
    them), and the findings ranked by the same measure in SQL."""
    if postgres():
        scores, rank = postgres_ranking(base, terms, every)
    else:
        scores, rank = sqlite_ranking(base, terms, every)
    ids = sorted(scores, key=lambda pk: (-scores[pk], -pk))
    return base.annotate(rank=rank).order_by("-rank", "-id"), ids
