"""Full-text search over findings, shared by the web pages and the REST API.

One job a module:

- `text`: how text becomes words, for documents and queries alike (identifiers
  whole and in parts, one spelling of GPU architectures);
- `documents`: a finding's search document (its text by weight, its facets) and
  writing it; `refresh`: the queue that keeps documents up to date;
- `facets`: the exact `key=value` facets a filter matches, written and read;
- `reading`: a query read against the index's words (prefixes, misspellings);
- `ranking`: the matches ranked, one module per backend (PostgreSQL, SQLite);
- `snippets`: the highlighted line under a result;
- `engine`: `search()`, which puts them together.

Callers import from here. See docs/search.md for what a user can expect.
"""

from kb.search.backend import RANKED_LIMIT
from kb.search.engine import SearchResult, search
from kb.search.reading import Reading
from kb.search.refresh import (
    build_missing_documents,
    queue_refresh,
    queue_refreshes,
    rebuild_all,
    refresh_afterwards,
)
from kb.search.snippets import page_snippets, snippet_for

__all__ = [
    "RANKED_LIMIT",
    "Reading",
    "SearchResult",
    "build_missing_documents",
    "page_snippets",
    "queue_refresh",
    "queue_refreshes",
    "rebuild_all",
    "refresh_afterwards",
    "search",
    "snippet_for",
]
