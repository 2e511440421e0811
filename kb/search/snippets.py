"""The line shown under a search result: a short stretch around the first hit, with
the query's words marked."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from kb.models import Finding
from kb.models.search import FindingSearchDocument
from kb.search.reading import Reading
from kb.search.text import Term, parse_query

SNIPPET_CHARS = 180


def snippet_for(finding: Finding, query: str, reading: Reading | None = None) -> str:
    """A short stretch of the finding around the first hit, HTML-escaped, hits in <mark>.
    With the search's `reading`, words it corrected are marked as searched."""
    corrected = [searched for _, searched in reading.corrected] if reading else []
    pattern = highlight_pattern(parse_query(query), corrected)
    texts = snippet_sources(finding)
    if pattern is None:
        return html.escape(texts[0][:SNIPPET_CHARS]) if texts else ""
    for text in texts:
        match = pattern.search(text)
        if match:
            return marked(text, pattern, match.start())
    return html.escape(texts[0][:SNIPPET_CHARS]) if texts else ""


def snippet_sources(finding: Finding) -> list[str]:
    # search() select_related()s the document: no query per row.
    try:
        raw = finding.search_document.text
    except FindingSearchDocument.DoesNotExist:
        raw = finding.title
    return [line for line in raw.splitlines() if line.strip()]


SEPARATOR = r"[\s_\-.:/]?"


def highlight_pattern(
    terms: tuple[Term, ...], joined_words: Iterable[str] = ()
) -> re.Pattern[str] | None:
    """Parts may be written with any separator (or none) between them; so may any two
    letters of `joined_words`, indexed words whose parts are not known (`flashmlakv`)."""
    alternatives = [SEPARATOR.join(map(part_pattern, term.parts)) for term in terms]
    alternatives += [SEPARATOR.join(map(re.escape, word)) for word in joined_words]
    if not alternatives:
        return None
    return re.compile("|".join(sorted(alternatives, key=len, reverse=True)), re.IGNORECASE)


def part_pattern(part: str) -> str:
    arch = re.fullmatch(r"sm(\d{2,3}[a-z]?)", part)
    return rf"sm[\s_-]?{arch.group(1)}" if arch else re.escape(part)


def marked(text: str, pattern: re.Pattern[str], first_hit: int) -> str:
    start = max(0, first_hit - SNIPPET_CHARS // 3)
    window = text[start : start + SNIPPET_CHARS]
    pieces: list[str] = ["…" if start else ""]
    position = 0
    for match in pattern.finditer(window):
        pieces.append(html.escape(window[position : match.start()]))
        pieces.append(f"<mark>{html.escape(match.group())}</mark>")
        position = match.end()
    pieces.append(html.escape(window[position:]))
    if start + SNIPPET_CHARS < len(text):
        pieces.append("…")
    return "".join(pieces)
