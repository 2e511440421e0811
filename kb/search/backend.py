"""Which of the two search backends this connection is: PostgreSQL or SQLite."""

from __future__ import annotations

from django.db import connection

# SQLite's FTS5 mirror of the four indexed fields (migration 0003).
FTS_TABLE = "kb_finding_fts"


def postgres() -> bool:
    """PostgreSQL (production) or SQLite (`make run`): the two search backends."""
    return connection.vendor == "postgresql"


# A search ranks at most this many matches. Past them, order helps no one, and a page
# says "1,000+": every later step (count, page, snippets) works on this list only.
RANKED_LIMIT = 1000
