"""Small charts drawn server-side as inline SVG: no chart library, no JavaScript.

Every piece of text is escaped before it goes into the drawing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

SPARK_BAR = 7
SPARK_GAP = 2
SPARK_HEIGHT = 28


@register.simple_tag
def sparkline(weekly: Sequence[int], week_starts: Sequence[datetime]) -> SafeString:
    """One bar per week, oldest on the left, this week on the right; a week without an
    occurrence is a flat tick, so an empty quarter still reads as a line."""
    top = max(weekly, default=0) or 1
    bars = []
    for i, (count, start) in enumerate(zip(weekly, week_starts, strict=True)):
        height = max(1, round((SPARK_HEIGHT - 2) * count / top)) if count else 1
        x = i * (SPARK_BAR + SPARK_GAP)
        label = f"week of {start:%Y-%m-%d}: {count}"
        css = "bar" if count else "bar empty"
        bars.append(
            f'<rect class="{css}" x="{x}" y="{SPARK_HEIGHT - height}" width="{SPARK_BAR}" '
            f'height="{height}"><title>{escape(label)}</title></rect>'
        )
    width = len(weekly) * (SPARK_BAR + SPARK_GAP) - SPARK_GAP
    summary = ", ".join(str(count) for count in weekly)
    return mark_safe(  # noqa: S308 - the only text is escaped above
        f'<svg class="sparkline" role="img" width="{width}" height="{SPARK_HEIGHT}" '
        f'viewBox="0 0 {width} {SPARK_HEIGHT}" '
        f'aria-label="Occurrences per week, the last {len(weekly)} weeks: {summary}">'
        f"{''.join(bars)}</svg>"
    )
