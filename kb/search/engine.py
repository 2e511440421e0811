"""`search()`: read the query, filter, rank; a result that pages without re-ranking.

Speed (bench/search_speed.py, 100k findings): the best 1,000 matches are ranked once
and everything after reads that list; filters are exact facets on the document, read
from an index, never a join.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, QuerySet

from kb.models import Finding
from kb.search.backend import RANKED_LIMIT, postgres
from kb.search.ranking import ranked_matches
from kb.search.ranking.postgresql import AnyOf
from kb.search.reading import ALL_TERMS_UP_TO, Reading, read_query
from kb.search.refresh import ask_if_behind
from kb.search.text import parse_query


@dataclass(frozen=True)
class SearchResult:
    findings: QuerySet[Finding]  # best first, each with `rank`; newest first without a query
    count: int  # matches, at most RANKED_LIMIT + 1 (meaning "more")
    reading: Reading = Reading(())
    every_word: bool = True  # False: no finding had them all; these have some
    best_ids: tuple[int, ...] | None = None  # the ranked matches in order; None: no query
    ranked: QuerySet[Finding] | None = None  # every filtered finding, ranked: for pages
    by_rank: bool = True  # False: `findings` are in the order asked for

    def page(self, start: int, size: int) -> QuerySet[Finding]:
        """A page of `findings`; a ranked one is read by its ids, so only its rows are ranked."""
        if self.best_ids is None or self.ranked is None or not self.by_rank:
            return self.findings[start : start + size]
        return self.ranked.filter(pk__in=self.best_ids[start : start + size])


NEWEST_FIRST = ("-updated_at", "-id")


def search(
    query: str = "",
    *,
    queryset: QuerySet[Finding] | None = None,
    order_by: tuple[str, ...] = (),
) -> SearchResult:
    """Findings of `queryset` (filtered: kb.filtersets) matching `query`: those with
    every word of the query (any word, for a pasted log; or when none has them all),
    best first, each annotated with `rank` (higher is better). Without a query, newest
    first. `order_by` orders the best matches otherwise (their rank is kept).
    `page_snippets(findings, query, reading)` gives their highlighted lines.
    """
    terms = parse_query(query)
    ask_if_behind()  # filters and ranking read the documents; a worker builds them
    base = queryset if queryset is not None else Finding.objects.all()
    if not terms:
        count = base.order_by().values("pk")[: RANKED_LIMIT + 1].count()
        return SearchResult(base.order_by(*(order_by or NEWEST_FIRST)), count)
    reading = read_query(terms)
    if not reading.terms:
        nothing = base.none()
        return SearchResult(nothing, 0, reading, best_ids=(), ranked=nothing)
    every = len(reading.terms) <= ALL_TERMS_UP_TO
    ranked, ids = ranked_matches(base, reading.terms, every)
    if not ids and every and len(reading.terms) > 1:
        ranked, ids = ranked_matches(base, reading.terms, every=False)
        every = False
    best = ranked.filter(AnyOf(F("pk"), ids)) if postgres() else ranked.filter(pk__in=ids)
    if order_by:
        best = best.order_by(*order_by)
    return SearchResult(best, len(ids), reading, every, tuple(ids), ranked, by_rank=not order_by)
