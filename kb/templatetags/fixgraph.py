"""Template filters and tags: sanitised Markdown, and small inline SVG drawings.

The drawings are generated here, server-side, so the pages need no chart library
and work without JavaScript. Every piece of text is escaped before it goes in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import markdown as markdown_lib
import nh3
from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

MARKDOWN_EXTENSIONS = ["fenced_code", "tables", "sane_lists"]
NODE_WIDTH = 230
NODE_HEIGHT = 46
ROW_GAP = 14
COLUMN_X = (8, 272, 536)
LABEL_CHARS = 29
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


@register.filter(name="markdown")
def render_markdown(text: str | None) -> SafeString:
    """Markdown to HTML with only harmless tags left: a write-up can hold anything."""
    html = markdown_lib.markdown(
        lists_need_no_blank_line(text or ""), extensions=MARKDOWN_EXTENSIONS
    )
    return mark_safe(nh3.clean(html))  # noqa: S308 - nh3 removed scripts, handlers, styles


@register.filter
def outcome_class(outcome: str) -> str:
    return OUTCOME_CLASS.get(outcome, "")


@register.filter
def get_item(mapping: dict[str, Any], key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


# --- the decision path: signature -> cause -> fix ------------------------------------


@dataclass(frozen=True)
class Node:
    column: int
    row: int
    label: str
    title: str
    css: str

    @property
    def x(self) -> int:
        return COLUMN_X[self.column]

    @property
    def y(self) -> int:
        return 8 + self.row * (NODE_HEIGHT + ROW_GAP)

    @property
    def middle_y(self) -> int:
        return self.y + NODE_HEIGHT // 2


def short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@register.simple_tag
def decision_path_svg(diagnosis: dict[str, Any], limit: int = 4) -> SafeString:
    """The paths that led to the first fixes (and to the ones known not to help)."""
    fixes = list(diagnosis.get("fixes", []))[:limit]
    useless = list(diagnosis.get("not_helpful", []))[:2]
    if not fixes and not useless:
        return mark_safe("")
    causes = cause_nodes([*fixes, *useless])
    fix_nodes = [fix_node(entry, row, helps=True) for row, entry in enumerate(fixes)]
    fix_nodes += [
        fix_node(entry, len(fixes) + row, helps=False) for row, entry in enumerate(useless)
    ]
    signature = signature_node(diagnosis, rows=max(len(causes), len(fix_nodes)))
    edges = [edge(signature, cause, "") for cause in causes.values()]
    edges += [
        edge(causes[entry["finding"]["id"]], node, node.css)
        for entry, node in zip([*fixes, *useless], fix_nodes, strict=True)
    ]
    nodes = [signature, *causes.values(), *fix_nodes]
    return svg_document(nodes, edges, rows=max(len(causes), len(fix_nodes)))


def signature_node(diagnosis: dict[str, Any], rows: int) -> Node:
    signature = diagnosis.get("signature") or {}
    label = signature.get("exception_type") or "the pasted text"
    title = f"{label}: {signature.get('template', '')}"
    return Node(0, max(0, (rows - 1) // 2), short(label), title, "signature")


def cause_nodes(entries: Sequence[dict[str, Any]]) -> dict[int, Node]:
    nodes: dict[int, Node] = {}
    for entry in entries:
        finding = entry["finding"]
        if finding["id"] not in nodes:
            nodes[finding["id"]] = Node(
                1, len(nodes), short(finding["title"]), finding["title"], "cause"
            )
    return nodes


def fix_node(entry: dict[str, Any], row: int, *, helps: bool) -> Node:
    fix = entry["fix"]
    changes = " ".join(fix.get("command_changes") or []) or fix["summary"]
    prefix = f"{entry['rank']}. " if helps and "rank" in entry else "✗ "
    css = "fix " + (OUTCOME_CLASS.get(fix["outcome"], "") if helps else "bad")
    return Node(2, row, short(prefix + changes), fix["summary"], css)


def edge(source: Node, target: Node, css: str) -> str:
    x1, y1 = source.x + NODE_WIDTH, source.middle_y
    x2, y2 = target.x, target.middle_y
    bend = (x2 - x1) // 2
    dashed = " dashed" if "bad" in css else ""
    return (
        f'<path class="edge{dashed}" d="M{x1},{y1} C{x1 + bend},{y1} {x2 - bend},{y2} {x2},{y2}"/>'
    )


def svg_node(node: Node) -> str:
    return (
        f'<g class="node {escape(node.css)}"><title>{escape(node.title)}</title>'
        f'<rect x="{node.x}" y="{node.y}" width="{NODE_WIDTH}" height="{NODE_HEIGHT}" rx="6"/>'
        f'<text x="{node.x + 10}" y="{node.middle_y + 5}">{escape(node.label)}</text></g>'
    )


def svg_document(nodes: Sequence[Node], edges: Sequence[str], rows: int) -> SafeString:
    width = COLUMN_X[-1] + NODE_WIDTH + 8
    height = 16 + max(rows, 1) * (NODE_HEIGHT + ROW_GAP)
    headings = "".join(
        f'<text class="heading" x="{x}" y="{height + 14}">{name}</text>'
        for x, name in zip(COLUMN_X, ("signature", "cause", "fix"), strict=True)
    )
    body = "".join(edges) + "".join(svg_node(node) for node in nodes) + headings
    return mark_safe(  # noqa: S308 - every text above went through escape()
        f'<svg class="decision-path" role="img" viewBox="0 0 {width} {height + 22}" '
        f'aria-label="Decision path from the error signature to the fixes">{body}</svg>'
    )


# --- throughput bars ----------------------------------------------------------------


BAR_HEIGHT = 22
LABEL_WIDTH = 250
BAR_WIDTH = 330


@register.simple_tag
def throughput_bars_svg(bars: Sequence[tuple[str, float]], unit: str = "tok/s") -> SafeString:
    """Horizontal bars, one per measured configuration."""
    if not bars:
        return mark_safe("")
    top = max(value for _, value in bars) or 1.0
    rows = "".join(bar_row(i, label, value, top, unit) for i, (label, value) in enumerate(bars))
    height = len(bars) * (BAR_HEIGHT + 8) + 4
    width = LABEL_WIDTH + BAR_WIDTH + 110
    return mark_safe(  # noqa: S308 - labels escaped in bar_row
        f'<svg class="bars" role="img" viewBox="0 0 {width} {height}" '
        f'aria-label="Measured throughput">{rows}</svg>'
    )


def bar_row(index: int, label: str, value: float, top: float, unit: str) -> str:
    y = 4 + index * (BAR_HEIGHT + 8)
    length = max(2, round(BAR_WIDTH * value / top))
    return (
        f"<g><title>{escape(label)}: {value:,.1f} {escape(unit)}</title>"
        f'<text x="0" y="{y + 16}">{escape(short(label, 36))}</text>'
        f'<rect x="{LABEL_WIDTH}" y="{y}" width="{length}" height="{BAR_HEIGHT}" rx="3"/>'
        f'<text class="value" x="{LABEL_WIDTH + length + 6}" y="{y + 16}">'
        f"{value:,.1f} {escape(unit)}</text></g>"
    )
