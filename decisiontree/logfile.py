"""A whole server log, read as a paste: its start and its end.

A crashed server's log runs to tens of megabytes (hours of request lines, eight ranks
interleaved); a paste holds two. What a diagnosis needs sits at the two ends: the launch
arguments and versions at the start, the crash at the end, which is how the parser reads
a long paste too (`traceback.HEAD_LINES`). `excerpt` streams the log once in bounded
memory and keeps a head and a tail, cut at line breaks, with one marker line where it
left the middle out, so nobody has to find the right lines by hand mid-incident.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# Of the budget, what the start of the log gets: an eighth (256 KB of the default 2 MB)
# holds a launch banner with its whole config dump; the crash gets the rest.
HEAD_SHARE = 0.125
MARKER_ROOM = 100  # bytes kept free in the budget for the marker line


@dataclass(frozen=True)
class Excerpt:
    text: str
    total_bytes: int
    head_bytes: int
    tail_bytes: int

    @property
    def omitted_bytes(self) -> int:
        return self.total_bytes - self.head_bytes - self.tail_bytes

    def describe(self, name: str) -> str:
        """What was read of a log too large to read whole; "" when it was read whole."""
        if not self.omitted_bytes:
            return ""
        return (
            f"{name} is {size(self.total_bytes)}: read its first {size(self.head_bytes)} "
            f"(the launch) and its last {size(self.tail_bytes)} (the end), "
            f"{size(self.omitted_bytes)} between them left out"
        )


def excerpt(chunks: Iterable[bytes], budget: int) -> Excerpt:
    """The log whole when it fits in `budget` bytes, else its head and tail within it."""
    head_budget = int(budget * HEAD_SHARE)
    tail_budget = budget - head_budget - MARKER_ROOM
    head, tail = bytearray(), bytearray()
    total = 0
    for chunk in chunks:
        total += len(chunk)
        room = head_budget - len(head)
        if room > 0:
            head += chunk[:room]
            chunk = chunk[room:]
        tail += chunk
        if len(tail) > 2 * tail_budget:  # trimmed now and then, not on every chunk
            del tail[: len(tail) - tail_budget]
    if total <= budget:
        return Excerpt(_decoded(head + tail), total, total, 0)
    del tail[: max(0, len(tail) - tail_budget)]
    # Whole lines only: the head ends at its last line break, the tail starts after its first.
    head = head[: head.rfind(b"\n") + 1] or head
    tail = tail[tail.find(b"\n") + 1 :] if b"\n" in tail else tail
    found = Excerpt("", total, len(head), len(tail))
    marker = f"[... {found.omitted_bytes:,} bytes of the log left out ...]\n"
    return Excerpt(_decoded(head) + marker + _decoded(tail), total, len(head), len(tail))


def size(count: int) -> str:
    """Bytes as people say them: 940 bytes, 256 KB, 48.2 MB (decimal, as the limits are)."""
    if count < 1_000:
        return f"{count} bytes"
    if count < 1_000_000:
        return f"{count / 1_000:.0f} KB"
    return f"{count / 1_000_000:.1f} MB"


def _decoded(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")
