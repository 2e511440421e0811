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


CHART_WIDTH = 560
CHART_HEIGHT = 170
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 64, 16, 12, 28


@register.simple_tag
def throughput_chart(points: Sequence[tuple[datetime, float, str]]) -> SafeString:
    """Output tok/s over time, one dot per measurement (joined in date order), so a
    release or driver that slowed the launch down shows as a step."""
    if not points:
        return mark_safe("")
    ordered = sorted(points, key=lambda point: point[0])
    first, last = ordered[0][0].timestamp(), ordered[-1][0].timestamp()
    top = max(value for _, value, _ in ordered) * 1.1 or 1.0
    plot_w = CHART_WIDTH - PAD_LEFT - PAD_RIGHT
    plot_h = CHART_HEIGHT - PAD_TOP - PAD_BOTTOM

    def x(moment: datetime) -> float:
        span = last - first
        share = (moment.timestamp() - first) / span if span else 0.5
        return PAD_LEFT + share * plot_w

    def y(value: float) -> float:
        return PAD_TOP + plot_h * (1 - value / top)

    line = " ".join(f"{x(m):.1f},{y(v):.1f}" for m, v, _ in ordered)
    dots = "".join(
        f'<circle cx="{x(m):.1f}" cy="{y(v):.1f}" r="4"><title>'
        f"{escape(f'{m:%Y-%m-%d} · {where} · {v:,.1f} tok/s')}</title></circle>"
        for m, v, where in ordered
    )
    base, right = CHART_HEIGHT - PAD_BOTTOM, CHART_WIDTH - PAD_RIGHT
    axes = (
        f'<line class="axis" x1="{PAD_LEFT}" y1="{base}" x2="{right}" y2="{base}"/>'
        f'<line class="axis" x1="{PAD_LEFT}" y1="{PAD_TOP}" x2="{PAD_LEFT}" y2="{base}"/>'
        f'<text x="{PAD_LEFT - 6}" y="{PAD_TOP + 10}" text-anchor="end">{top / 1.1:,.0f}</text>'
        f'<text x="{PAD_LEFT - 6}" y="{base}" text-anchor="end">0</text>'
        f'<text x="{PAD_LEFT}" y="{CHART_HEIGHT - 8}">{ordered[0][0]:%Y-%m-%d}</text>'
        f'<text x="{CHART_WIDTH - PAD_RIGHT}" y="{CHART_HEIGHT - 8}" text-anchor="end">'
        f"{ordered[-1][0]:%Y-%m-%d}</text>"
    )
    described = "; ".join(f"{m:%Y-%m-%d} {where}: {v:,.1f}" for m, v, where in ordered)
    return mark_safe(  # noqa: S308 - host names and labels are escaped above
        f'<svg class="chart" role="img" viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" '
        f'aria-label="{escape(f"Output tokens per second over time: {described}")}">'
        f'{axes}<polyline points="{line}"/>{dots}</svg>'
    )
