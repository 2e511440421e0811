"""PostgreSQL: a weighted tsvector ('simple' config) over a GIN index, ranked by ts_rank.

No RUM index (the rum extension), though it yields matches in rank order: rum 1.3.13
crashed its server with a segfault on an OR query in this suite, and the index it left
sent an INSERT into an endless loop (bench/README.md, "Session 31")."""

from __future__ import annotations

import time
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection
from django.db.models import F, Lookup, QuerySet

from kb.models import Finding
from kb.search.backend import RANKED_LIMIT
from kb.search.reading import ALL_TERMS_UP_TO
from kb.search.text import Term


def postgres_ranking(
    base: QuerySet[Finding], terms: tuple[Term, ...], every: bool
) -> tuple[dict[int, float], SearchRank]:
    """Rank (higher is better) of each of the best matches, and the rank as SQL."""
    source = (" & " if every else " | ").join(postgres_term(term) for term in terms)
    tsquery = SearchQuery(source, search_type="raw", config="simple")
    matches = base.filter(search_document__vector=tsquery)
    candidates = pasted_log_candidates(terms, source)
    if candidates is not None:
        matches = matches.filter(AnyOf(F("pk"), candidates))
    vector = F("search_document__vector")
    rank = SearchRank(vector, tsquery)
    matches = matches.prefetch_related(None)
    rows = matches.annotate(score=rank).order_by("-score").values_list("pk", "score")
    return dict(rows[: RANKED_LIMIT + 1]), rank


def postgres_term(term: Term) -> str:
    # Words are [a-z0-9]+ only (see text.ALNUM), so nothing here can break tsquery syntax.
    # An identifier is one word in the index (see text.identifier_wholes), never a phrase.
    return term.words[0] if len(term.words) == 1 else f"({' | '.join(term.words)})"


class AnyOf(Lookup):
    """`= ANY(%s)` with the ids as one array: a thousand placeholders cost milliseconds
    to compile and send, on every page."""

    lookup_name = "any_of"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} = ANY(%s)", [*lhs_params, list(self.rhs)]


# A pasted log has words that are in nearly every document (`in`, `error`, `cuda`):
# ranking every document that has any of them would read the whole table. Those with
# the log's rare words come first, then the first others the index yields.
LOG_CANDIDATES = 1000
RARE_SHARE = 0.05
STATS_TTL_S = 300.0
_common_words: tuple[float, dict[str, float]] = (0.0, {})


def pasted_log_candidates(terms: tuple[Term, ...], tsquery_source: str) -> list[int] | None:
    """The documents worth ranking for a pasted log; None when all of them are."""
    if len(terms) <= ALL_TERMS_UP_TO:
        return None
    first = first_matches(tsquery_source, LOG_CANDIDATES)
    if len(first) < LOG_CANDIDATES:
        return None
    rare = [term for term in terms if share_of_documents_with(term.joined) < RARE_SHARE]
    if not rare:
        return first
    with_rare = first_matches(" | ".join(postgres_term(term) for term in rare), LOG_CANDIDATES)
    return list(dict.fromkeys(with_rare + first))


def first_matches(tsquery_source: str, limit: int) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(FIRST_MATCHES_SQL, [tsquery_source, limit])
        return [finding_id for (finding_id,) in cursor.fetchall()]


def share_of_documents_with(word: str) -> float:
    """From PostgreSQL's statistics of the vectors: words it does not list are rare."""
    global _common_words
    fetched_at, shares = _common_words
    if time.monotonic() - fetched_at > STATS_TTL_S:
        shares = common_words()
        _common_words = (time.monotonic(), shares)
    return shares.get(word, 0.0)


def common_words() -> dict[str, float]:
    with connection.cursor() as cursor:
        cursor.execute(COMMON_WORDS_SQL)
        return {str(word): float(share) for word, share in cursor.fetchall()}


# A CTE the planner cannot push `LIMIT` into: with it, PostgreSQL expects early hits
# and reads every document in turn; without, it asks the full-text index.
FIRST_MATCHES_SQL = (
    "WITH hits AS MATERIALIZED (SELECT finding_id FROM kb_findingsearchdocument "
    "WHERE vector @@ to_tsquery('simple', %s)) SELECT finding_id FROM hits LIMIT %s"
)
COMMON_WORDS_SQL = (
    "SELECT word, share FROM pg_stats, "
    "unnest(most_common_elems::text::text[], most_common_elem_freqs) AS common(word, share) "
    "WHERE tablename = 'kb_findingsearchdocument' AND attname = 'vector' AND word IS NOT NULL"
)
