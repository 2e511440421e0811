"""What a finding is found by, kept beside it so search never joins six tables.

One row per finding, rebuilt after every committed change to the finding or
what hangs off it (kb.search). On PostgreSQL `vector` holds the weighted tsvector
(GIN-indexed) and `facets` a GIN index over its lines; on SQLite an FTS5 table holds
the text by weight (migration 0003).
"""

from __future__ import annotations

from django.contrib.postgres.search import SearchVectorField
from django.db import models

from kb.models.findings import Finding

# Longer words (whole paths) are still found; they are just not corrected.
SEARCH_WORD_MAX_CHARS = 100


class FindingSearchDocument(models.Model):
    """What a search reads of a finding: its facets and, on PostgreSQL, the vector of its
    text by weight: title (A), errors (B), context (C), body (D). The text itself is not
    kept (kb.search.documents.store_documents); SQLite's FTS5 table holds its own copy."""

    finding = models.OneToOneField(
        Finding, primary_key=True, on_delete=models.CASCADE, related_name="search_document"
    )
    facets = models.TextField(
        blank=True,
        help_text="Filter values, one `key=value` a line: filtering needs no join",
    )
    vector = SearchVectorField(null=True, blank=True)
    built_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "finding search document"

    def __str__(self) -> str:
        return f"search document of finding {self.finding_id}"


class GraphWords(models.Model):
    """A finding's own words (title, symptom, cause and fixes) as the diagnosis graph's
    build reads them (decisiontree.finding_words): read once, when its search document is
    built, not at every rebuild. A table of its own, so that the search document's rows,
    which ranking reads in full, stay narrow."""

    finding = models.OneToOneField(
        Finding, primary_key=True, on_delete=models.CASCADE, related_name="graph_words"
    )
    stored = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name = "finding's graph words"
        verbose_name_plural = "findings' graph words"

    def __str__(self) -> str:
        return f"graph words of finding {self.finding_id}"


class SearchRefresh(models.Model):
    """A finding whose search document must be rebuilt.

    Queued in the same transaction as the change, so the queue is exact even when
    the refresh itself runs later (after commit, or by the next search).
    """

    finding_id = models.BigIntegerField(primary_key=True)
    queued_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"refresh search document of finding {self.finding_id}"


class SearchWord(models.Model):
    """A word some search document has (or had): what a misspelt query word is read as.

    Only ever added to, as documents are built: a word no longer in any document costs
    a correction that finds nothing, never a wrong hit. `reindex_search --all` prunes.
    """

    word = models.CharField(primary_key=True, max_length=SEARCH_WORD_MAX_CHARS)

    def __str__(self) -> str:
        return self.word
