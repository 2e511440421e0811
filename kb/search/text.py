"""How text becomes words, the same for a finding's document and for a query.

Error text is the hard case: `nsa_kv_cache_store_fp8`, `--mem-fraction-static`,
`memory_pool.py:set_kv_buffer`. Both databases' tokenizers cut identifiers apart
(and PostgreSQL's parser reads `self.nsa_kv` as a host name), so the text is
normalised here first: every identifier is indexed as its parts and, right after
them, as every suffix of its parts joined (`nsakvcachestorefp8`, `kvcachestorefp8`,
...), so a query identifier is one word. GPU architectures are spelled one way
(`sm_120`, `SM120`, `sm 120` all become `sm120`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

MAX_QUERY_CHARS = 500

ARCH_SPELLING = re.compile(r"\bsm[\s_-]?(\d{2,3}[a-z]?)\b", re.IGNORECASE)
IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[_\-.:/][A-Za-z0-9]+)*")
ALNUM = re.compile(r"[a-z0-9]+")
# Past this many parts (a long path), only the last ones start a whole of their own.
MAX_WHOLE_STARTS = 24


@dataclass(frozen=True)
class Term:
    """One word of a query; an identifier keeps its parts in order."""

    parts: tuple[str, ...]
    written: str = field(default="", compare=False)  # as the user typed it
    # The indexed words it matches (see kb.search.reading): itself, or those it starts.
    completions: tuple[str, ...] = field(default=(), compare=False)
    # Written as an option (`--tp`, `-tp`): every spelling of that flag is searched.
    option: bool = field(default=False, compare=False)

    @property
    def joined(self) -> str:
        return "".join(self.parts)

    @property
    def words(self) -> tuple[str, ...]:
        return self.completions or (self.joined,)


def normalise_arch(text: str) -> str:
    return ARCH_SPELLING.sub(lambda m: "sm" + m.group(1).lower(), text)


def canonical_arch(value: str) -> str:
    """`sm120`, `SM_120`, `sm 120` -> `sm_120`, as facets and filters spell it."""
    match = ARCH_SPELLING.search(value.strip())
    return f"sm_{match.group(1).lower()}" if match else value.strip().lower()


def parse_query(query: str) -> tuple[Term, ...]:
    text = normalise_arch(query[:MAX_QUERY_CHARS].lower())
    terms = (query_term(text, match) for match in IDENTIFIER.finditer(text))
    unique = dict.fromkeys(term for term in terms if term.parts)
    return tuple(unique)


def query_term(text: str, match: re.Match[str]) -> Term:
    """A word of the query; one written after dashes (`--tp`, `-tp`) keeps them."""
    before = text[max(0, match.start() - 2) : match.start()]
    dashes = len(before) - len(before.rstrip("-"))
    return Term(
        tuple(ALNUM.findall(match.group())),
        written="-" * dashes + match.group(),
        option=dashes > 0,
    )


def searchable(text: str) -> str:
    """Text as both databases should tokenize it: each word's parts, then right after
    them the wholes of an identifier, so rankers that weigh how close words are see
    `flashmla_kv` next to the `decode` beside it."""
    words: list[str] = []
    for token in IDENTIFIER.findall(normalise_arch(text)):
        if token.isalnum():  # most words are one part (ASCII: IDENTIFIER reads no other)
            words.append(token.lower())
        else:
            words += token_words(token)
    return " ".join(words)


@lru_cache(maxsize=1 << 16)
def token_words(token: str) -> tuple[str, ...]:
    """An identifier's parts, then its wholes; identifiers repeat from one finding to
    the next (frames, flags, kernels), hence the cache."""
    parts = ALNUM.findall(token.lower())
    wholes = (w for piece in identifier_pieces(token) for w in identifier_wholes(piece))
    return (*parts, *(whole for whole in dict.fromkeys(wholes) if whole not in parts))


def identifier_wholes(piece: str) -> list[str]:
    """`nsa_kv_cache` -> `nsakvcache`, `kvcache`: every run of its parts starts one of
    these, so a query identifier is one word (or the words it starts), never a phrase:
    phrases cost a recheck of every hit."""
    parts = ALNUM.findall(piece.lower())
    later = range(max(1, len(parts) - MAX_WHOLE_STARTS), len(parts) - 1)
    return ["".join(parts[start:]) for start in (0, *later) if parts]


def identifier_pieces(token: str) -> Iterable[str]:
    """`pkg.mod:func_name` is found as a whole and as `func_name` or `mod`."""
    if not re.search(r"[_\-.:/]", token):
        return ()
    pieces = [p for p in re.split(r"[.:/]", token) if re.search(r"[_-]", p)]
    return [token, *pieces]
