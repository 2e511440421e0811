"""The line under a search result: a stretch of the finding's own words around the
query's words, which are marked.

Own words: its summary, cause, write-up and fixes (Markdown, shown rendered and
sanitised: `code` as code, never raw backticks), its error samples and working
command (shown as code). Never the generated parts of its search document (signature
templates with `<num>`, `key = value` condition lines, GPU and model names) and never
its title again. Stop words (`of`, `the`) are not marked. On one page no two results
show the same line: a finding whose best stretch is already shown shows another.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import nh3
from django.db.models.functions import Left
from stopwords import get_stopwords

from decisiontree.logline import strip_prefix
from kb.models import ErrorSample, Finding, Fix
from kb.search.reading import Reading
from kb.search.text import Term, parse_query
from kb.templatetags.fixgraph import INLINE_TAGS, inline_markdown

SNIPPET_CHARS = 180
# A code span cut by the window's edge is taken whole when it ends this close by.
CODE_SPAN_REACH = 80
MAX_SAMPLE_CHARS = 20_000
# Snowball's English list (PostgreSQL's `english` dictionary uses the same).
STOP_WORDS = frozenset(word for word in get_stopwords("english") if word)
# Stand-ins for <mark> while the text goes through Markdown (private-use characters).
OPEN, CLOSE = "\ue000", "\ue001"


@dataclass(frozen=True)
class Source:
    """One piece of a finding's own text; `code`: a log or command, never Markdown."""

    text: str
    code: bool


@dataclass(frozen=True)
class Window:
    source: Source
    start: int
    end: int
    words: int  # distinct query words inside

    @property
    def plain(self) -> str:
        return " ".join(self.source.text[self.start : self.end].split())


def page_snippets(
    findings: Sequence[Finding], query: str, reading: Reading | None = None
) -> dict[int, str]:
    """The snippet of each finding of a page, by id: HTML, query words in <mark>."""
    pattern = highlight_pattern(marked_terms(query), corrected_words(reading))
    sources = own_texts(findings)
    shown: set[str] = set()
    snippets: dict[int, str] = {}
    for finding in findings:
        snippets[finding.pk] = ""
        for window in windows(sources[finding.pk], pattern):
            if window.plain not in shown:
                shown.add(window.plain)
                snippets[finding.pk] = rendered(window, pattern)
                break
    return snippets


def snippet_for(finding: Finding, query: str, reading: Reading | None = None) -> str:
    return page_snippets([finding], query, reading)[finding.pk]


# --- what may be shown ------------------------------------------------------------------


def own_texts(findings: Sequence[Finding]) -> dict[int, list[Source]]:
    """Each finding's own text, prose first; two queries for the whole page."""
    ids = [finding.pk for finding in findings]
    samples: dict[int, list[str]] = {pk: [] for pk in ids}
    fixes: dict[int, list[str]] = {pk: [] for pk in ids}
    rows = ErrorSample.objects.filter(finding_id__in=ids).order_by("pk")
    for finding_id, text in rows.values_list("finding_id", Left("text", MAX_SAMPLE_CHARS)):
        samples[finding_id].append(text)
    for finding_id, summary in (
        Fix.objects.filter(finding_id__in=ids)
        .order_by("position", "pk")
        .values_list("finding_id", "summary")
    ):
        fixes[finding_id].append(summary)
    return {
        finding.pk: [
            *prose_sources(finding, fixes[finding.pk]),
            *(Source(log_lines(text), code=True) for text in samples[finding.pk]),
            *([Source(finding.works_command, code=True)] if finding.works_command else []),
        ]
        for finding in findings
    }


# A traceback's column markers (`^^^^`, `~~~`) point at the line above; alone they say nothing.
MARKER_LINE = re.compile(r"^[\s^~]+$")


def log_lines(text: str) -> str:
    """A log as a reader scans it: each line's logger prefix (time, rank) dropped
    (decisiontree.logline), lines of column markers left out."""
    return "\n".join(
        strip_prefix(line) for line in text.splitlines() if not MARKER_LINE.match(line)
    )


FENCED = re.compile(r"^[ ]{0,3}(```|~~~)[^\n]*\n(.*?)^[ ]{0,3}\1[ \t]*$", re.MULTILINE | re.DOTALL)


def prose_sources(finding: Finding, fixes: Iterable[str]) -> Iterator[Source]:
    """Summary, cause, write-up and fixes; a fenced block in them is code of its own."""
    title = words_of(finding.title)
    seen = {title}
    for text in (finding.summary, finding.cause, finding.body, *fixes):
        # A line that only repeats the title (a write-up's heading) is not shown again.
        lines = [line for line in (text or "").splitlines() if words_of(line) != title]
        kept = "\n".join(lines)
        position = 0
        pieces: list[Source] = []
        for fence in FENCED.finditer(kept):
            pieces += [Source(kept[position : fence.start()], code=False)]
            pieces += [Source(fence.group(2), code=True)]
            position = fence.end()
        pieces += [Source(kept[position:], code=False)]
        for piece in pieces:
            piece = Source(piece.text.strip("\n"), piece.code)
            if piece.text.strip() and words_of(piece.text) not in seen:
                seen.add(words_of(piece.text))
                yield piece


def words_of(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


# --- which stretch --------------------------------------------------------------------


def marked_terms(query: str) -> tuple[Term, ...]:
    """The query's words worth marking: not stop words (an identifier always is)."""
    return tuple(
        term for term in parse_query(query) if len(term.parts) > 1 or term.joined not in STOP_WORDS
    )


def corrected_words(reading: Reading | None) -> list[str]:
    """Words the search read in place of, or beside, the written ones: corrections, flag
    spellings, a GPU's architecture."""
    if reading is None:
        return []
    return [
        *(searched for _, searched in reading.corrected),
        *reading.spellings,
        *reading.architecture_words,
    ]


def windows(sources: list[Source], pattern: re.Pattern[str] | None) -> list[Window]:
    """Stretches around hits, the most query words first (then the order of `sources`),
    then, for a finding whose hits are all in generated text, the start of each prose."""
    hits = [window for source in sources for window in hit_windows(source, pattern)]
    hits.sort(key=lambda window: -window.words)  # stable: sources keep their order
    openings = [window_at(source, 0, 0) for source in sources if not source.code]
    return hits + openings


def hit_windows(source: Source, pattern: re.Pattern[str] | None) -> Iterator[Window]:
    if pattern is None:
        return
    covered = -1
    for match in pattern.finditer(source.text):
        if match.start() < covered:
            continue  # already inside the previous window
        window = window_at(source, match.start(), 0)
        words = {
            m.group().lower() for m in pattern.finditer(source.text[window.start : window.end])
        }
        window = Window(source, window.start, window.end, len(words))
        covered = window.end
        yield window


def window_at(source: Source, hit: int, words: int) -> Window:
    text = source.text
    if source.code:
        # A log: from the start of the hit's line, unless the line is long.
        line_start = text.rfind("\n", 0, hit) + 1
        start = line_start if hit - line_start < SNIPPET_CHARS // 2 else hit - SNIPPET_CHARS // 3
    else:
        start = max(0, hit - SNIPPET_CHARS // 3)
    start = word_start(text, start)
    end = word_end(text, start + SNIPPET_CHARS)
    if not source.code:
        start, end = whole_code_spans(text, start, end)
    return Window(source, start, end, words)


def word_start(text: str, position: int) -> int:
    """Back to the start of the word `position` is in (or the line's start)."""
    if position <= 0:
        return 0
    space = max(text.rfind(" ", 0, position), text.rfind("\n", 0, position))
    return space + 1 if space >= 0 and position - space < 30 else position


def word_end(text: str, position: int) -> int:
    if position >= len(text):
        return len(text)
    space = min(
        (i for i in (text.find(" ", position), text.find("\n", position)) if i >= 0),
        default=len(text),
    )
    return space if space - position < 30 else position


CODE_SPAN = re.compile(r"(`+)([^\n]+?)\1")


def whole_code_spans(text: str, start: int, end: int) -> tuple[int, int]:
    """A window never cuts a `code span` (its backticks would show raw): it takes the
    span whole when that is near, else stops before it."""
    for span in CODE_SPAN.finditer(text):
        if span.start() < start < span.end():
            start = span.start()
        if span.start() < end < span.end():
            end = span.end() if span.end() - end <= CODE_SPAN_REACH else span.start()
    return start, end


# --- how it is shown ------------------------------------------------------------------

SEPARATOR = r"[\s_\-.:/]?"


def highlight_pattern(
    terms: tuple[Term, ...], joined_words: Iterable[str] = ()
) -> re.Pattern[str] | None:
    """Parts may be written with any separator (or none) between them; so may any two
    letters of `joined_words`, indexed words whose parts are not known (`flashmlakv`).
    A word is marked whole: `of` is not marked inside `offset`."""
    alternatives = [SEPARATOR.join(map(part_pattern, term.parts)) for term in terms]
    alternatives += [SEPARATOR.join(map(re.escape, word)) for word in joined_words]
    if not alternatives:
        return None
    either = "|".join(sorted(alternatives, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9])(?:{either})(?![A-Za-z0-9])", re.IGNORECASE)


def part_pattern(part: str) -> str:
    arch = re.fullmatch(r"sm(\d{2,3}[a-z]?)", part)
    return rf"sm[\s_-]?{arch.group(1)}" if arch else re.escape(part)


def rendered(window: Window, pattern: re.Pattern[str] | None) -> str:
    text = window.source.text
    stretch = text[window.start : window.end]
    if pattern is not None:
        stretch = pattern.sub(lambda m: f"{OPEN}{m.group()}{CLOSE}", stretch)
    body = code_html(stretch) if window.source.code else prose_html(stretch)
    before = "…" if window.start > 0 else ""
    after = "…" if window.end < len(text) else ""
    return f"{before}{body}{after}"


def code_html(stretch: str) -> str:
    escaped = html.escape(" ".join(stretch.split()), quote=False)
    return f"<code>{with_marks(escaped)}</code>"


BLOCK_MARKER = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s?|(?:```|~~~)\S*\s*$)")


def prose_html(stretch: str) -> str:
    """Inline Markdown of one stretch, as titles are shown: block syntax (headings, list
    markers, fences, quotes) dropped, as the stretch reads on one line."""
    lines = (BLOCK_MARKER.sub("", line) for line in stretch.splitlines())
    inline = str(inline_markdown(" ".join(lines)))
    # The marks go in after sanitising; nh3 then mends any that cross an inline tag.
    return nh3.clean(with_marks(inline), tags=INLINE_TAGS | {"mark"}, attributes={})


def with_marks(text: str) -> str:
    return text.replace(OPEN, "<mark>").replace(CLOSE, "</mark>")
