"""Lines and fenced blocks of a markdown-ish document; forgiving about broken markdown."""

from __future__ import annotations

import re
from typing import NamedTuple


class Fence(NamedTuple):  # a tuple: a pathological paste can hold 300,000 of them
    """A fenced block: delimiter on line `open`, content lines [open + 1, close)."""

    open: int
    close: int  # index of the closing delimiter, or len(lines) when it never closes
    info: str

    @property
    def content(self) -> range:
        return range(self.open + 1, self.close)


def lines_of(text: str) -> list[str]:
    """CRLF and lone CR become LF; a trailing newline adds no empty line."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def fences_in(lines: list[str]) -> list[Fence]:
    """``` and ~~~ blocks; a fence left open at the end runs to the end of the document."""
    # Only lines that start with three fence characters can open or close a block.
    marks = [i for i, line in enumerate(lines) if line[:300].lstrip()[:3] in ("```", "~~~")]
    fences: list[Fence] = []
    k = 0
    while k < len(marks):
        head = lines[marks[k]][:300].strip()
        marker = head[: len(head) - len(head.lstrip(head[0]))]
        info = head[len(marker) :].strip()
        if marker[0] == "`" and "`" in info:  # ```x``` on one line is inline code, not a fence
            k += 1
            continue
        close_at = _closing(lines, marks, k + 1, marker)
        close = marks[close_at] if close_at < len(marks) else len(lines)
        fences.append(Fence(marks[k], close, info))
        k = close_at + 1
    return fences


def _closing(lines: list[str], marks: list[int], start: int, marker: str) -> int:
    """Index into `marks` of the line closing a fence opened with `marker`, or len(marks)."""
    for k in range(start, len(marks)):
        stripped = lines[marks[k]][:300].strip()
        if stripped.startswith(marker) and not stripped.strip(marker[0]):
            return k
    return len(marks)


def prose_mask(lines: list[str], fences: list[Fence]) -> list[bool]:
    """True for lines outside any fence (delimiters count as fenced)."""
    mask = [True] * len(lines)
    for fence in fences:
        for k in range(fence.open, min(fence.close + 1, len(lines))):
            mask[k] = False
    return mask


def fence_text(lines: list[str], fence: Fence) -> str:
    return "\n".join(lines[k] for k in fence.content).strip("\n")


_HEADING = re.compile(r"^(#{1,6})[ \t]+(.{1,500}?)[ \t]*(?:[ \t]#+)?[ \t]*$")


def heading(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading; trailing #s dropped."""
    match = _HEADING.match(line[:600])
    if not match:
        return None
    return len(match.group(1)), match.group(2).strip()
