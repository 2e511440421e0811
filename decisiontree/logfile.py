"""A whole server log, read as a paste: its start and its end.

A crashed server's log runs to tens of megabytes (hours of request lines, eight ranks
interleaved); a paste holds two. What a diagnosis needs sits at the two ends: the launch
arguments and versions at the start, the crash at the end, which is how the parser reads
a long paste too (`traceback.HEAD_LINES`). `excerpt` streams the log once in bounded
memory and keeps a head and a tail, cut at line breaks, with one marker line where it
left the middle out, so nobody has to find the right lines by hand mid-incident.
"""

from __future__ import annotations

import codecs
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

# Of the budget, what the start of the log gets: an eighth (256 KB of the default 2 MB)
# holds a launch banner with its whole config dump; the crash gets the rest.
HEAD_SHARE = 0.125
MARKER_ROOM = 100  # bytes kept free in the budget for the marker line
# A log is often attached gzip'd. It unpacks to ten or twenty times its size, streamed
# through the same head-and-tail budget; past this much, unpacking would cost a request
# more than seconds (zlib unpacks a few hundred MB a second).
MAX_UNPACKED_BYTES = 2_000_000_000
GZIP_MAGIC = b"\x1f\x8b"
_UNPACK_STEP = 4 << 20  # unpacked bytes per zlib call: memory stays bounded


class LogUnreadable(ValueError):
    """A log that cannot be read as text; the message says what to attach instead."""


@dataclass(frozen=True)
class Excerpt:
    text: str
    total_bytes: int  # of the log as text: unpacked, when it came gzip'd
    head_bytes: int
    tail_bytes: int
    stored: str = ""  # how the file held the text, when not plain UTF-8: "gzip", "UTF-16"

    @property
    def omitted_bytes(self) -> int:
        return self.total_bytes - self.head_bytes - self.tail_bytes

    def describe(self, name: str) -> str:
        """What was read of a log too large to read whole; "" when it was read whole."""
        if not self.omitted_bytes:
            return ""
        unpacked = " unpacked" if self.stored == "gzip" else ""
        return (
            f"{name} is {size(self.total_bytes)}{unpacked}: read its first "
            f"{size(self.head_bytes)} "
            f"(the launch) and its last {size(self.tail_bytes)} (the end), "
            f"{size(self.omitted_bytes)} between them left out"
        )


def excerpt(chunks: Iterable[bytes], budget: int) -> Excerpt:
    """The log whole when it fits in `budget` bytes, else its head and tail within it.

    A gzip'd log is unpacked and a UTF-16 one (Windows PowerShell's `>`) read as text,
    streamed; `LogUnreadable` when the archive is damaged or unpacks to too much."""
    text_chunks, stored = as_text_bytes(chunks)
    found = _excerpt(text_chunks, budget)
    return Excerpt(found.text, found.total_bytes, found.head_bytes, found.tail_bytes, stored)


def as_text_bytes(chunks: Iterable[bytes]) -> tuple[Iterator[bytes], str]:
    """The log's bytes as UTF-8, and how the file held them: "gzip", "UTF-16" or ""."""
    stream = iter(chunks)
    first = next(stream, b"")
    rest = _chained(first, stream)
    stored = ""
    if first.startswith(GZIP_MAGIC):
        rest, stored = _gunzipped(rest), "gzip"
        first = next(rest, b"")
        rest = _chained(first, rest)
    for bom, encoding in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if first.startswith(bom):
            return _transcoded(rest, encoding, len(bom)), stored or "UTF-16"
    return rest, stored


def _chained(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest


def _gunzipped(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The unpacked bytes of a gzip stream (several members, as `cat a.gz b.gz` makes)."""
    unpacker = zlib.decompressobj(16 + zlib.MAX_WBITS)
    total = 0
    try:
        for chunk in chunks:
            data = chunk
            while data:
                if unpacker.eof:  # another member follows (`cat a.gz b.gz`)
                    unpacker = zlib.decompressobj(16 + zlib.MAX_WBITS)
                piece = unpacker.decompress(data, _UNPACK_STEP)
                total += len(piece)
                if total > MAX_UNPACKED_BYTES:
                    raise LogUnreadable(
                        f"The gzip'd log unpacks to more than {size(MAX_UNPACKED_BYTES)}: "
                        "attach its end instead, e.g. `zcat server.log.gz | tail -c 20000000 "
                        "> end.log`."
                    )
                if piece:
                    yield piece
                data = unpacker.unused_data if unpacker.eof else unpacker.unconsumed_tail
    except zlib.error as exc:
        raise LogUnreadable(
            f"The log looks gzip'd but cannot be unpacked ({exc}): attach the plain log."
        ) from None
    if not unpacker.eof:
        raise LogUnreadable(
            f"The gzip'd log is cut short after {size(total)} unpacked: its end, where a "
            "crash is, is missing. Attach the whole file, or the plain log."
        )


def _transcoded(chunks: Iterator[bytes], encoding: str, skip: int) -> Iterator[bytes]:
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    for number, chunk in enumerate(chunks):
        text = decoder.decode(chunk[skip:] if number == 0 else chunk)
        if text:
            yield text.encode("utf-8")
    if tail := decoder.decode(b"", final=True):
        yield tail.encode("utf-8")


def _excerpt(chunks: Iterable[bytes], budget: int) -> Excerpt:
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
