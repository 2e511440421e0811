"""Find the error texts in a document: tracebacks and error-log runs, fenced or not, verbatim.

People paste logs straight into prose, often starting mid-traceback (the tail
of `tail -n 20`), so detection works line by line on what a line *looks like*
once its log prefix is set aside, and keeps the original lines untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from decisiontree import logline
from decisiontree.traceback import holds_error, is_python_warning

MAX_SAMPLES = 40
MAX_SAMPLE_LINES = 400
_MAX_LINE_SCAN = 4000  # classify only a line's head: a 1 MB line must not cost a regex pass each

_TB_HEADER = re.compile(r"Traceback \(most recent call last\):")
_FILE_LINE = re.compile(r"^\s*File \"[^\"\n]{1,500}\", line \d+")
_CARETS = re.compile(r"^\s*[\^~]+\s*$")
_CHAIN = re.compile(
    r"^\s*(?:During handling of the above exception|The above exception was the direct cause)"
)
_REPEATED = re.compile(r"^\s*\[Previous line repeated \d+ more times?\]")
_EXCEPTION = re.compile(
    r"^\s*(?:[A-Za-z_][\w]{0,60}\.){0,6}"
    r"(?:(?:[A-Z]\w{0,60})?(?:Error|Exception|Exit|Interrupt|Failure|Fault)|KeyboardInterrupt"
    r"|StopIteration|SystemExit|OutOfMemoryError)(?::(?:\s.{0,2000})?)?\s*$"
)
_CODE_LINE = re.compile(
    r"^\s*(?:return |raise |assert |await |yield |self\.|[\w.]{1,80}\(|[\w.\[\], ]{1,80} = )"
)
_ERRORISH = re.compile(
    r"\b(?:ERROR|CRITICAL|FATAL)\b|\w(?:Error|Exception)\b|\bAssertion\b.{0,400}\bfailed"
    r"|CUDA error|NCCL (?:error|WARN)|terminate called|what\(\):|Segmentation fault|core dumped"
    r"|out of memory|static_assert|\bKilled\b|Traceback \(most recent"
)
_STANDALONE_ERROR = re.compile(
    r"^\s*(?:terminate called after throwing|what\(\):|Segmentation fault|Aborted \(core dumped\)"
    r"|\S{1,300}:\d+(?::\d+)?:\s*(?:fatal )?error:"
    r"|.{0,300}block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion"
    r"|Exception raised from |frame #\d+: "
    r"|(?:[A-Za-z_]\w{0,40}\.){0,4}(?:[A-Z]\w{0,60})?(?:Error|Exception): )"
)
_WARNING = re.compile(r"\bWARN(?:ING)?\b")
_INLINE_ERROR = re.compile(
    r"`((?:[A-Za-z_]\w{0,40}\.){0,4}[A-Z]\w{0,60}(?:Error|Exception)(?::[^`\n]{1,400})?)`"
    r"|(Assertion [`'\"][^\n]{1,300}?[`'\"] failed\.?)"
)


@dataclass(frozen=True)
class Span:
    """Lines [start, end) of a document that form one sample."""

    start: int
    end: int


def strip_log_prefix(line: str) -> str:
    """The message of a line, without markdown quote, colour or a logger's prefix."""
    head = _unquoted(line[:_MAX_LINE_SCAN])
    body = head.lstrip()  # a log pasted indented under a list item keeps its prefix
    return logline.strip_prefix(body) if logline.has_prefix(body) else head


def _unquoted(head: str) -> str:
    return logline.unquoted(logline.strip_ansi(head))


def has_log_prefix(line: str) -> bool:
    return logline.has_prefix(_unquoted(line[:_MAX_LINE_SCAN]).lstrip())


def is_logish(line: str) -> bool:
    return has_log_prefix(line) or bool(_STANDALONE_ERROR.match(line[:_MAX_LINE_SCAN]))


_ERROR_WORDS = (
    "rror", "RROR", "xception", "ssert", "CUDA", "NCCL", "terminate", "what()", "egmentation",
    "core dumped", "out of memory", "Killed", "FATAL", "CRITICAL", "Traceback",
)  # fmt: skip


def is_error_line(line: str) -> bool:
    head = line[:_MAX_LINE_SCAN]
    if not any(
        word in head for word in _ERROR_WORDS
    ):  # substring tests are far cheaper than the regex
        return False
    return bool(_ERRORISH.search(head)) and is_logish(line)


def block_has_error(lines: list[str]) -> bool:
    """Does a fenced block hold an error (rather than a command or a config)? A block that
    opens with a Python warning counts: a writer fences one where it is the first sign of
    the cause (PyTorch warns that the GPU is not in its build before any kernel fails);
    a start-up log that prints a deprecation notice on its way does not."""
    joined = "\n".join(lines[: MAX_SAMPLE_LINES * 4])
    if not joined.strip():
        return False
    first = next(line for line in lines if line.strip())
    if is_python_warning(strip_log_prefix(first[:_MAX_LINE_SCAN])):
        return True
    if not any(word in joined for word in _ERROR_WORDS) and 'File "' not in joined:
        # No traceback words: still an error if the paste parser reads one (a daemon's
        # "Failed to ...", a C++ "Check failed", an HTTP error body).
        return holds_error(joined)
    for line in lines[: MAX_SAMPLE_LINES * 4]:
        body = strip_log_prefix(line)
        if _TB_HEADER.search(body) or _FILE_LINE.match(body) or _EXCEPTION.match(body):
            return True
        if is_error_line(line):
            return True
    return holds_error(joined)


def find_unfenced_samples(lines: list[str], prose: list[bool]) -> list[Span]:
    """Spans of traceback and error-log lines among the lines marked as prose (not fenced)."""
    spans: list[Span] = []
    i = floor = 0
    while i < len(lines):
        if not prose[i]:
            i += 1
            continue
        span = _traceback_at(lines, prose, i) or _log_run_at(lines, prose, i, floor)
        if span is None:
            i += 1
            continue
        spans.append(span)
        i = floor = max(span.end, i + 1)
    return spans


_TRACEBACK_WORDS = ('File "', "Traceback", "During handling", "The above exception")


def _traceback_at(lines: list[str], prose: list[bool], i: int) -> Span | None:
    head = lines[i][:_MAX_LINE_SCAN]
    if not any(word in head for word in _TRACEBACK_WORDS):  # cheap test first: most lines are prose
        return None
    body = strip_log_prefix(lines[i])
    if _TB_HEADER.search(body) or _CHAIN.match(body):
        return Span(i, _traceback_end(lines, prose, i + 1))
    if _FILE_LINE.match(body):
        return Span(_code_lines_before(lines, prose, i), _traceback_end(lines, prose, i + 1))
    return None


def _code_lines_before(lines: list[str], prose: list[bool], i: int) -> int:
    """A tail-of-log paste starts mid-frame: keep up to three code lines above the File line."""
    start = i
    while start > 0 and i - start < 3 and prose[start - 1]:
        above = strip_log_prefix(lines[start - 1])
        if not above.strip() or not (_CODE_LINE.match(above) or _CARETS.match(above)):
            break
        if above.rstrip().endswith((".", "!", "?")) and not above.startswith((" ", "\t")):
            break
        start -= 1
    return start


def _traceback_end(lines: list[str], prose: list[bool], j: int) -> int:
    while j < len(lines) and prose[j]:
        body = strip_log_prefix(lines[j])
        if _EXCEPTION.match(body):
            return _after_exception(lines, prose, j + 1)
        if not body.strip():
            nxt = _next_nonblank(lines, prose, j)
            if nxt is None or not _continues_traceback(strip_log_prefix(lines[nxt])):
                return j
            j = nxt
            continue
        if not _in_traceback(body):
            return j
        j += 1
    return j


def _in_traceback(body: str) -> bool:
    return bool(
        body.startswith((" ", "\t"))
        or _FILE_LINE.match(body)
        or _CARETS.match(body)
        or _CHAIN.match(body)
        or _TB_HEADER.search(body)
        or _REPEATED.match(body)
        or _CODE_LINE.match(body)
    )


def _continues_traceback(body: str) -> bool:
    return bool(_FILE_LINE.match(body) or _CHAIN.match(body) or _TB_HEADER.search(body))


def _after_exception(lines: list[str], prose: list[bool], j: int) -> int:
    """Take the exception message's continuation lines, and a chained exception that follows."""
    taken = 0
    while j < len(lines) and prose[j] and lines[j].strip() and taken < 10:
        body = strip_log_prefix(lines[j])
        if _continues_traceback(body):
            return _traceback_end(lines, prose, j)
        if not (
            _ERRORISH.search(body[:400]) or body.startswith((" ", "\t")) or _message_tail(body)
        ):
            break
        j += 1
        taken += 1
    nxt = _next_nonblank(lines, prose, j)
    if nxt is not None and nxt - j <= 2 and _continues_traceback(strip_log_prefix(lines[nxt])):
        return _traceback_end(lines, prose, nxt)
    return j


_MESSAGE_TAIL = re.compile(
    r"^(?:CUDA kernel errors might|For debugging consider|Compile with|Search for|"
    r"If reserved but unallocated|See documentation|Tried to allocate|Including non-PyTorch)"
)


def _message_tail(body: str) -> bool:
    return bool(_MESSAGE_TAIL.match(body.strip()))


def _next_nonblank(lines: list[str], prose: list[bool], j: int) -> int | None:
    for k in range(j, min(j + 3, len(lines))):
        if not prose[k]:
            return None
        if lines[k].strip():
            return k
    return None


def _log_run_at(lines: list[str], prose: list[bool], i: int, floor: int) -> Span | None:
    if not is_error_line(lines[i]):
        return None
    start = i
    while start > floor and i - start < 20 and prose[start - 1] and is_logish(lines[start - 1]):
        start -= 1
    end = i + 1
    while end < len(lines) and prose[end] and end - start < MAX_SAMPLE_LINES:
        line = lines[end]
        if not line.strip() or not (is_logish(line) or line.startswith((" ", "\t"))):
            break
        if _TB_HEADER.search(strip_log_prefix(line)):
            end = _traceback_end(lines, prose, end + 1)
            continue
        end += 1
    return Span(start, end)


def warning_lines(lines: list[str], prose: list[bool]) -> list[Span]:
    """Log lines at WARNING level: samples of last resort, when a document shows no error."""
    return [
        Span(i, i + 1)
        for i, line in enumerate(lines)
        if prose[i] and has_log_prefix(line) and _WARNING.search(line[:400])
    ]


def inline_errors(text: str) -> list[str]:
    """Errors quoted in sentences: `RuntimeError: ...` in backticks, "Assertion '...' failed"."""
    found: list[str] = []
    for match in _INLINE_ERROR.finditer(text):
        found.append((match.group(1) or match.group(2)).strip())
    return found
