"""A finding's own words (title, symptom, cause and fixes), read once and stored.

Reading them into retrieval's terms was a fifth of a cold graph build at 100k
findings (bench/README.md, diagnose_speed, session 47). The knowledge base keeps
them beside the finding (kb.models.GraphWords, written with its search document),
each text's words under a digest of that text, stamped with the samples' `scheme()`:
a text edited since, or words read by older code, are simply read again by the build.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from decisiontree.samples import scheme
from decisiontree.terms import words_of

# A text's digest -> its words, as the build looks them up.
KnownWords = Mapping[str, Sequence[str]]


def own_texts(
    title: str, summary: str, cause: str, fix_summaries: Iterable[str]
) -> tuple[tuple[str, str], ...]:
    """The finding's retrieval fields and their text: the cause field holds the fixes'
    own words too. The one place both the build and the stored form compose them."""
    return (
        ("title", title),
        ("summary", summary),
        ("cause", " ".join([cause, *fix_summaries])),
    )


def text_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def words_known(text: str, known: KnownWords | None) -> Sequence[str]:
    """The words of `text`, from `known` when it holds them."""
    found = known.get(text_key(text)) if known else None
    return words_of(text) if found is None else found


def stored_words(texts: Iterable[str]) -> dict[str, Any]:
    """JSON-ready words of the texts (blank ones left out), for the knowledge base to keep."""
    return {
        "scheme": scheme(),
        "words": {text_key(text): words_of(text) for text in texts if text.strip()},
    }


def words_from_stored(stored: Mapping[str, Any] | None) -> dict[str, Sequence[str]]:
    """The words kept by `stored_words`; none when stale or absent (read again)."""
    if not stored or stored.get("scheme") != scheme():
        return {}
    words = stored.get("words")
    return dict(words) if isinstance(words, Mapping) else {}


__all__ = [
    "KnownWords",
    "own_texts",
    "stored_words",
    "text_key",
    "words_from_stored",
    "words_known",
]
