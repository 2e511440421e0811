"""Template filters and tags: sanitised Markdown, and small inline SVG drawings.

The drawings are generated here, server-side, so the pages need no chart library
and work without JavaScript. Every piece of text is escaped before it goes in.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from html import escape, unescape
from typing import Any

import markdown as markdown_lib
import nh3
from django import template
from django.contrib.humanize.templatetags.humanize import naturaltime
from django.utils.safestring import SafeString, mark_safe

from decisiontree.answer import OTHER_SETUP, PROPOSED, RUNNER_UP, summary_is_changes
from decisiontree.fingerprint import error_name, shown_error
from kb.models import Fix, ValidationRun
from kb.services import occurrences
from kb.services.diagnosis import PastedError

register = template.Library()

MARKDOWN_EXTENSIONS = ["fenced_code", "tables", "sane_lists"]
OUTCOME_CLASS = {"resolves": "ok", "partial": "warn", "no_effect": "bad", "worse": "bad"}


# People write a list right under its lead-in line, as GitHub renders it; Python-Markdown
# wants a blank line first, or the items run into the paragraph.
LIST_ITEM = re.compile(r"^[ ]{0,3}(?:[-*+]|\d+[.)])[ ]+\S")
FENCE = re.compile(r"^[ ]{0,3}(?:```|~~~)")


def lists_need_no_blank_line(text: str) -> str:
    lines: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and LIST_ITEM.match(line) and lines:
            previous = lines[-1]
            # Only after a plain paragraph line: not an item, its indented continuation, a fence.
            if previous[:1].strip() and not LIST_ITEM.match(previous) and not FENCE.match(previous):
                lines.append("")
        lines.append(line)
    return "\n".join(lines)


# One converter of each kind per thread, reset between uses (see inline_converter).
_converters = threading.local()


def text_markdown(extensions: list[str]) -> markdown_lib.Markdown:
    """Markdown that reads angle brackets as text, never as HTML: `in <module>`,
    `TensorInfo<T, IndexType>` and `block size <num>` are what errors say, and as tags
    they vanished. Autolinks (`<https://...>`) still link."""
    converter = markdown_lib.Markdown(extensions=extensions)
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    return converter


@register.filter(name="markdown")
def render_markdown(text: str | None) -> SafeString:
    """Markdown to HTML with only harmless tags left: a write-up can hold anything."""
    if not hasattr(_converters, "block"):
        _converters.block = text_markdown(MARKDOWN_EXTENSIONS)
    converter: markdown_lib.Markdown = _converters.block
    html = converter.reset().convert(lists_need_no_blank_line(text or ""))
    return mark_safe(nh3.clean(html))  # noqa: S308 - nh3 removed scripts, handlers, styles


INLINE_TAGS = {"code", "em", "strong", "del"}  # no links: a title is often inside one


# What can make a line of Markdown more than its text: inline markup, HTML and entities,
# escapes, an underscore at a word's edge (inside a word it is a letter), block syntax.
INLINE_SYNTAX = re.compile(
    r"[`*\[\]!<>&\\]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|^(?:#|[-+] |\d+[.)] )"
)


def inline_converter() -> markdown_lib.Markdown:
    """One converter per thread, reset between uses: building one costs more than the
    conversion, and a page of results converts fifty lines."""
    if not hasattr(_converters, "inline"):
        _converters.inline = text_markdown([])
    converter: markdown_lib.Markdown = _converters.inline
    return converter


@register.filter
def inline_markdown(text: str | None) -> SafeString:
    """One line of Markdown (a title, a cause, a step) as inline HTML: `code` becomes code,
    never raw backticks; block syntax and links are left as plain text."""
    line = " ".join((text or "").split())
    if not INLINE_SYNTAX.search(line):
        return mark_safe(escape(line))  # noqa: S308 - escaped: Markdown would leave it so
    html = inline_converter().reset().convert(line)
    html = re.sub(r"^<p>|</p>$", "", html.strip())
    return mark_safe(nh3.clean(html, tags=INLINE_TAGS, attributes={}))  # noqa: S308 - nh3 kept inline tags only


@register.filter
def error_shown(signature: dict[str, Any]) -> str:
    """A diagnosis' error signature quoted as the answer shows it (fingerprint.shown_error)."""
    return shown_error(signature.get("exception_type", ""), signature.get("template", ""))


@register.filter(name="error_name")
def error_name_filter(exception_type: str) -> str:
    return error_name(exception_type)


@register.filter
def plain_markdown(text: str | None) -> str:
    """The text a line of Markdown reads as, for <title> and attributes: no backticks."""
    return unescape(nh3.clean(str(inline_markdown(text)), tags=set()))


# A word longer than this may break anywhere (a long model path on a phone); shorter
# ones, flags included, never break inside.
UNBREAKABLE_CHARS = 32


@register.filter
def command(text: str | None) -> SafeString:
    """A shell command that wraps only at spaces: each word (a flag with its value when
    they fit) is one unbreakable span. The text, and so what Copy copies, is unchanged."""
    return unbroken_words(text, flags_only=False)


@register.filter
def flags_unbroken(text: str | None) -> SafeString:
    """Prose that names flags (a fix's summary): a flag, with its value when they fit,
    never splits after one of its hyphens; the other words are left as they are."""
    return unbroken_words(text, flags_only=True)


# A code span of a fix in words: `nvidia-smi -L`, `pip install ...`.
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


@register.filter
def fix_in_words(text: str | None) -> SafeString:
    """A fix's summary in words: its `code` set as code, never raw backticks, and a flag
    elsewhere unbroken (as `flags_unbroken`)."""
    parts = _CODE_SPAN.split(text or "")
    html = [
        f"<code>{escape(part)}</code>" if i % 2 else unbroken_words(part, flags_only=True)
        for i, part in enumerate(parts)
    ]
    return mark_safe("".join(html))  # noqa: S308 - code spans escaped, the rest by unbroken_words


@register.simple_tag
def answer_words(name: str) -> str:
    """A fixed wording every channel of an answer shares (decisiontree.answer), as a
    sentence starts: {% answer_words "proposed" %} -> "Proposed, not confirmed — ..."."""
    words = {
        "proposed": PROPOSED,
        "other_setup": OTHER_SETUP,
        "runner_up": RUNNER_UP,
    }[name]
    return words[:1].upper() + words[1:]


@register.filter
def changes_to_show(fix: Mapping[str, Any]) -> list[str]:
    """The changes shown as chips under a fix's heading: none for a fix in words whose one
    change is that text ("move to a GPU of ..."); compared before escaping, so a summary
    with an apostrophe is not shown twice. A summary that is itself flags keeps its chips."""
    changes = list(fix.get("command_changes") or ())
    summary = fix.get("summary") or ""
    if summary_is_changes(summary, changes) and not summary.startswith("-"):
        return []
    return changes


@register.filter
def reads_as_command(text: str | None) -> bool:
    """A fix's summary that is flags and their values only ("--kv-cache-dtype bf16"), set
    as code; one that goes on in words ("--disable-cuda-graph, only to confirm ...") is
    prose that starts with a flag."""
    words = (text or "").split()
    if not words or not words[0].startswith("-"):
        return False
    value_allowed = False
    for word in words:
        if word.startswith("-") and word[-1] not in ",.;:":
            value_allowed = True
        elif value_allowed and re.fullmatch(r"[\w.:/=+@'\"{}\[\]-]+", word):
            value_allowed = False
        else:
            return False
    return True


OPENING = "(\"'“‘["  # what may open a word before a flag


def unbroken_words(text: str | None, *, flags_only: bool) -> SafeString:
    pieces = re.split(r"(\s+)", text or "")
    html: list[str] = []
    i = 0
    while i < len(pieces):
        word = pieces[i]
        if i % 2:  # whitespace, as written
            html.append(escape(word))
            i += 1
            continue
        joined = word
        flag = word.lstrip(OPENING).startswith("-")  # "(--tp-size" is a flag in brackets
        if flag and i + 2 < len(pieces) and not pieces[i + 2].startswith("-"):
            pair = word + pieces[i + 1] + pieces[i + 2]
            if len(pair) <= UNBREAKABLE_CHARS and "\n" not in pieces[i + 1]:
                joined, i = pair, i + 2
        if joined and flags_only and not flag:
            html.append(escape(joined))
        elif joined:
            css = "w long" if len(joined) > UNBREAKABLE_CHARS else "w"
            html.append(f'<span class="{css}">{escape(joined)}</span>')
        i += 1
    return mark_safe("".join(html))  # noqa: S308 - every piece went through escape()


@register.simple_tag
def finding_figures(items: Iterable[Any]) -> dict[int, occurrences.ListFigures]:
    """Times seen, last seen and fix feedback of the listed findings (or of search results
    holding one in `.finding`), in two queries: `{% finding_figures results as figures %}`."""
    return occurrences.list_figures(getattr(item, "finding", item).pk for item in items)


@register.inclusion_tag("kb/_figures_line.html")
def figures_line(figures: dict[int, occurrences.ListFigures], finding: Any) -> dict[str, Any]:
    """“Seen 3 times, last 2 days ago · 4 fixed it · 1 did not help” for one finding."""
    return {"figures": figures.get(finding.pk) or occurrences.ListFigures()}


@register.filter
def outcome_class(outcome: str) -> str:
    return OUTCOME_CLASS.get(outcome, "")


@register.filter
def outcome_label(outcome: str) -> str:
    """A fix outcome as the finding page's badge names it ("No effect")."""
    return str(Fix.Outcome(outcome).label) if outcome in Fix.Outcome.values else outcome


@register.filter
def run_status_label(status: str) -> str:
    """A validation run's status as its page names it ("Timed out")."""
    statuses = ValidationRun.Status
    return str(statuses(status).label) if status in statuses.values else status


@register.filter
def mib_as_gib(mib: int | None) -> str:
    """GPU memory as nvidia-smi reports it (MiB) in GiB: an H200's 143771 MiB is "140 GiB"."""
    return f"{round(mib / 1024)} GiB" if mib else ""


@register.filter
def ago(moment: datetime | None) -> str:
    """“just now”, “3 minutes ago”, “2 days, 4 hours ago”: how long since, as people say it."""
    if moment is None:
        return ""
    said = str(naturaltime(moment))
    return "just now" if said == "now" else said


@register.filter
def duration(seconds: float | None) -> str:
    """“38 s”, “4 min 12 s”, “1 h 3 min”: how long a run took, to the second that matters."""
    if seconds is None:
        return ""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


@register.filter
def md_cell(value: Any) -> str:
    """A value for a Markdown table cell: one line, no column breaks."""
    return " ".join(str(value if value is not None else "—").split()).replace("|", "\\|")


@register.filter
def md_link_text(value: Any) -> str:
    """Text for the inside of a Markdown link: brackets escaped, one line."""
    text = " ".join(str(value).split())
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


@register.filter
def path_breaks(text: str | None) -> SafeString:
    """A source path that may wrap after each slash on a phone, not inside a name."""
    return mark_safe(escape(text or "").replace("/", "/<wbr>"))  # noqa: S308 - escaped first


@register.filter
def get_item(mapping: dict[str, Any], key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


# --- the decision path: signature -> cause -> fix ------------------------------------


@dataclass(frozen=True)
class PathFix:
    label: str  # the flag changes, or the summary when there are none
    rank: int | None  # None: known not to help
    css: str
    anchor: str  # the fix's card on the page, when it has one
    via: str = ""  # the other symptom of the same cause the walk went through, if any


@dataclass
class PathCause:
    finding_id: int
    title: str
    fixes: list[PathFix]


@register.inclusion_tag("kb/_decision_path.html")
def decision_path(diagnosis: dict[str, Any], pasted: PastedError | None = None) -> dict[str, Any]:
    """The walk from the error to each fix, as a small tree of text: every label whole and
    wrapping, so it reads on a phone with no hover (an SVG would need both)."""
    causes: dict[int, PathCause] = {}
    entries = [(entry, True) for entry in diagnosis.get("fixes", [])]
    entries += [(entry, False) for entry in diagnosis.get("not_helpful", [])]
    for entry, helps in entries:
        # The path the walk took: the matched finding first, then any other symptom of its cause.
        findings = [s for s in entry.get("path", []) if s["kind"] == "finding"] or [
            entry["finding"]
        ]
        matched = {
            "id": findings[0]["id"],
            "title": findings[0].get("title", findings[0].get("label")),
        }
        cause = causes.setdefault(matched["id"], PathCause(matched["id"], matched["title"], []))
        via = findings[-1]["label"] if len(findings) > 1 else ""
        cause.fixes.append(dataclasses.replace(path_fix(entry, helps=helps), via=via))
    signature = diagnosis.get("signature") or {}
    return {
        "signature": error_name(signature.get("exception_type", "")) or "the pasted text",
        # "AcceleratorError" alone reads as someone else's error beside a RuntimeError.
        "pasted_as": pasted.renamed_from if pasted else "",
        "template": signature.get("template", ""),
        "causes": list(causes.values()),
    }


def path_fix(entry: dict[str, Any], *, helps: bool) -> PathFix:
    fix = entry["fix"]
    label = " ".join(fix.get("command_changes") or []) or fix["summary"]
    if not helps:
        return PathFix(label, None, "bad", "")
    return PathFix(
        label, entry.get("rank"), OUTCOME_CLASS.get(fix["outcome"], ""), f"#fix-{fix['id']}"
    )
