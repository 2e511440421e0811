"""Parse what people paste when an inference server crashes.

`parse(text)` turns a pasted log into a `ParsedTraceback`: the Python exception
chain, CUDA device-side assertions, C++/NCCL error lines and the few warnings
that explain a crash (a backend or dtype the framework chose on its own).

Real pastes are messy, so the parser:
1. strips ANSI colour, carriage-return progress bars and log prefixes
   (SGLang, vLLM, torchrun, glog/c10, ISO timestamps, docker compose ...);
2. splits the lines into one stream per rank or process, so that eight ranks
   printing the same traceback at once do not tangle;
3. runs a small state machine over each stream (idle → frames → message);
4. merges the streams in printed order and de-duplicates what every rank repeated.

Every regular expression is anchored or bounded and every line is cut to
MAX_LINE_CHARS, so a 2 MB paste parses in linear time.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from decisiontree.logline import (
    Prefix,
    escaped_lines,
    exception_repr_lines,
    has_prefix,
    html_unescaped,
    last_overwrite,
    logfmt_lines,
    record_lines,
    split_prefix,
    strip_ansi,
    strip_prefix,
)

MAX_INPUT_CHARS = 2_000_000
MAX_LINE_CHARS = 4_000  # longer lines are config dumps; cutting them keeps regexes linear
MAX_RAW_LINE_CHARS = 64_000  # a progress bar's redraws, before "\r" picks the last one
# The work budget: lines read of one paste. A 2 MB paste of short lines would otherwise
# cost seconds of CPU in per-line work that finds nothing new after the first thousands.
MAX_LINES = 20_000
HEAD_LINES = 2_000
TAIL_LINES = MAX_LINES - HEAD_LINES
MAX_MESSAGE_LINES = 40
MAX_NOISE_IN_FRAMES = 20  # foreign lines tolerated inside a traceback before giving up on it
MAX_FRAMES = (
    200  # innermost frames kept per exception; the outer ones of a deep recursion add nothing
)
ERROR_SCAN_CHARS = 600  # error markers sit near the start of a line; don't scan whole dumps
MAX_COLLECTED = 100  # cap on kept error lines / warnings / kernel assertions
MAX_CONTEXT_LINES = 400  # distinct lines kept for retrieval: the end of a log tells most
MAX_PLAIN_ERROR_CHARS = 600  # an unprefixed line longer than this is data, not an error line


class InputRejected(ValueError):
    """Text we refuse to parse; str(e) is a message a user can act on."""


@dataclass(frozen=True)
class Frame:
    """One Python stack frame, as printed and in a machine-independent form."""

    path: str
    module: str
    lineno: int | None
    function: str
    code: str = ""


@dataclass(frozen=True)
class RaisedException:
    """One exception of a chain. `type` is "" when the paste was cut before it, or when
    the frames are a thread dump's (`dumped`) with no crash printed before it."""

    type: str
    message: str
    frames: tuple[Frame, ...]
    dumped: bool = False  # a thread dump's calls: a hang's, or a dump asked for
    # The exception class another process raised, where this one carries it across
    # ("RayTaskError(ValueError): ..."): that process's own traceback says what went wrong.
    wraps: str = ""


@dataclass(frozen=True)
class ParsedTraceback:
    exceptions: tuple[RaisedException, ...]
    kernel_assertions: tuple[str, ...]
    error_lines: tuple[str, ...]
    warnings: tuple[str, ...]
    ranks: tuple[str, ...]
    truncated: bool
    # The paste's distinct lines, prefixes stripped, the last MAX_CONTEXT_LINES of them:
    # what surrounds the errors (start-up logs, config, frames) for retrieval.
    context: tuple[str, ...] = ()
    # True when nothing error-shaped was found and the error lines are a short paste's
    # plain lines, read as the error because there was nothing else.
    plain_fallback: bool = False

    @property
    def primary(self) -> RaisedException | None:
        """The most informative exception: the last one, unless it only wraps a root cause."""
        typed = [exc for exc in self.exceptions if exc.type]
        specific = [exc for exc in typed if not is_generic(exc) and not _said_more(exc, typed)]
        if specific:
            return specific[-1]
        if typed:
            return typed[-1]
        return self.exceptions[-1] if self.exceptions else None

    @property
    def only_wrappers(self) -> str:
        """The line that says another process failed, when that is all the paste's errors
        say ("Engine core initialization failed. See root cause above.", "Killed"): the
        error that caused it was printed elsewhere in the log, or there was none (a signal
        killed it). "" when the paste has an error of its own, or none at all."""
        if self.kernel_assertions or self.plain_fallback:
            return ""
        typed = [exc for exc in self.exceptions if exc.type]
        if not all(is_generic(exc) or killed_by(exc.message) for exc in typed):
            return ""
        if not all(is_generic_line(line) or killed_by(line) for line in self.error_lines):
            return ""
        if typed:
            last = typed[-1]
            said = next((ln.strip() for ln in last.message.splitlines() if _WORDS.search(ln)), "")
            return f"{last.type}: {said}".rstrip(": ")
        return self.error_lines[-1].strip() if self.error_lines else ""

    @property
    def killed_by(self) -> str:
        """The signal that killed a process, when the paste's errors only say that
        ("Signal 9 (SIGKILL) received by PID 1234", "exitcode : -9", "OOMKilled")."""
        if not self.only_wrappers:
            return ""
        return next((signal for text in self.said if (signal := killed_by(text))), "")

    @property
    def said(self) -> tuple[str, ...]:
        """What the paste's errors say: each raised exception's message, each kernel
        assertion, each error line, once each."""
        return tuple(
            dict.fromkeys(
                [exc.message for exc in self.exceptions]
                + list(self.kernel_assertions)
                + list(self.error_lines)
            )
        )


_WORDS = re.compile(r"[A-Za-z]{2}")  # a line of a message that says something (not "=====")
# How a process killed by a signal is reported: torch elastic's failure table, Python's
# multiprocessing, a shell, docker and Kubernetes (137 = 128 + SIGKILL's 9).
_SIGNAL_DEATH = re.compile(
    r"Signal \d+ \((?P<named>SIG[A-Z]+)\) received"
    r"|<Signals\.(?P<member>SIG[A-Z]+): \d+>"
    r"|(?:killed|terminated) (?:by|with) signal:? "
    r"(?P<by>SIG[A-Z]+|\d+|Killed|Segmentation fault|Aborted)"
    r"|exit\s*(?:code|status)\s*[:=]?\s*(?P<code>-\d+|137|139|134|143)\b"
    r"|exited with (?:exit )?code (?P<exited>-\d+|137|139|134|143)\b"
    r"|(?P<oom>\bOOMKilled\b)"
    r"|^\s*(?P<shell>Killed)\s*$",
    re.I,
)
_SIGNALS = {"9": "SIGKILL", "137": "SIGKILL", "11": "SIGSEGV", "139": "SIGSEGV", "6": "SIGABRT",
            "134": "SIGABRT", "15": "SIGTERM", "143": "SIGTERM"}  # fmt: skip


def killed_by(text: str) -> str:
    """The signal a line says killed a process ("SIGKILL"), or ""."""
    found = _SIGNAL_DEATH.search(text[:2000])
    if found is None:
        return ""
    if found["oom"] or found["shell"]:
        return "SIGKILL"
    words = {"killed": "SIGKILL", "segmentation fault": "SIGSEGV", "aborted": "SIGABRT"}
    if (found["by"] or "").lower() in words:  # as strsignal() words it
        return words[found["by"].lower()]
    named = found["named"] or found["member"] or found["by"] or ""
    if named.upper().startswith("SIG"):
        return named.upper()
    number = (named or found["code"] or found["exited"] or "").lstrip("-")
    return _SIGNALS.get(number, f"signal {number}")


# --- public helpers -------------------------------------------------------------------

# Exceptions that report that *something else* failed: a dead child, a closed pipe.
_GENERIC_TYPES = frozenset(
    {
        "EOFError",
        "BrokenPipeError",
        "ConnectionResetError",
        "EngineDeadError",
        "KeyboardInterrupt",
        "SystemExit",
        "CancelledError",
        "ChildFailedError",
        "ProcessRaisedException",
        "ProcessExitedException",
        "ExceptionGroup",
        "BaseExceptionGroup",
    }
)
# Plain lower-case phrases: this runs on every exception, and substring tests are
# far cheaper than one big case-insensitive alternation.
_GENERIC_PHRASES = (
    "received sigquit", "scheduler is dead", "engine core initialization failed",
    "root cause", "child process died", "child process failed",
    "child process exited", "child processes died", "worker died", "worker failed",
    "worker process died", "worker process failed", "died unexpectedly", "exited with code",
    "exited with exit code", "engine core failed to start", "enginecore failed to start",
    "engine process failed to start", "enginecore encountered", "engine core encountered",
    "hit an exception", "error building extension", "subcommand failed", "ninja build failed",
    "returned non-zero exit status", "crashloopbackoff", "back-off restarting failed container",
    "ld returned",  # collect2: the linker failed; its errors are above
    # a pointer to the log, as tools word it ("... failed to be inspected. Please check the
    # logs for more details.", pip's "See above for output.")
    "check the logs for more details", "see the logs for more details", "see the log above",
    "see above for output", "see above for details", "stack trace above", "traceback above",
)  # fmt: skip
_GENERIC_STARTS = (
    "initialization failed",
    "failed ",
    "failed:",
    "fatal python error: abort",
    "aborted",
)


# "Failed to X: <why>" gives its reason after the colon ("Failed to initialize NVML:
# Driver/library version mismatch"): an error of its own, not a pointer to another.
_FAILED_BECAUSE = re.compile(r"failed [^:\n]{1,200}: +[a-z][a-z/-]*[a-z]")


def _says_something_else_failed(text: str) -> bool:
    low = text[:300].lower()
    if any(phrase in low for phrase in _GENERIC_PHRASES):
        return True
    if _SERVER_STATUS.search(low) and not _STATUS_ENVELOPE.sub("", low):
        return True
    return low.startswith(_GENERIC_STARTS) and not _FAILED_BECAUSE.match(low)


# A client's view of a server that failed on its request: an HTTP status of 500-504 and
# nothing else but its name, the URL and the API's error envelope (the OpenAI client's
# "Error code: 500 - {'object': 'error', 'message': 'Internal Server Error', ...}",
# requests' "500 Server Error: Internal Server Error for url: ..."). Why the server failed
# is in its own log. A body that says more ("CUDA error: ...") is an error of its own.
_SERVER_STATUS = re.compile(
    r"(?<![\w.])50[0-4](?![\w.])"
    r"|internal server error|bad gateway|service unavailable|gateway timeout"
)
_STATUS_ENVELOPE = re.compile(
    r"https?://\S+"
    r"|\b(?:error|errors|code|object|message|type|param|detail|none|null|status|internal"
    r"|server|internalservererror|bad|gateway|service|unavailable|timeout|gateway_timeout"
    r"|for|url|http|\d+)\b"
    r"|[\W_]+"
)


MIN_RESTATED_CHARS = 10  # a shorter message starts others by chance ("Error", "x")


def _said_more(exc: RaisedException, others: Sequence[RaisedException]) -> bool:
    """Whether another exception of the paste starts with this one's whole message and
    goes on: "Error raised in subprocess" re-raised in the parent, over the child's
    "Error raised in subprocess: ...: undefined symbol ..."."""
    said = exc.message.strip()
    if len(said) < MIN_RESTATED_CHARS:
        return False
    for other in others:
        more = other.message.strip()
        if len(more) > len(said) and more.startswith(said) and not more[len(said)].isalnum():
            return True
    return False


def is_generic(exc: RaisedException) -> bool:
    """True for wrappers like "Rank 3 scheduler is dead" that only point at a root cause."""
    short = exc.type.rsplit(".", 1)[-1]
    return bool(exc.wraps) or short in _GENERIC_TYPES or _says_something_else_failed(exc.message)


def is_generic_line(line: str) -> bool:
    """True for log lines that only say that something else failed."""
    return _says_something_else_failed(line.strip())


_SITE_PACKAGES = ("/site-packages/", "/dist-packages/")
# The standard library's directory: `lib/python3.11/` on POSIX, `Lib/` under a Windows
# installation or environment (where `Lib/site-packages/` holds the libraries, read first).
_STDLIB_DIR = re.compile(r".*/(?:lib/python\d[\d.]*|Lib)/")
# Top-level packages that anchor a source checkout (`~/src/sglang/python/sglang/...`).
_KNOWN_PACKAGES = frozenset(
    {
        "sglang", "vllm", "torch", "flashinfer", "transformers", "triton", "sgl_kernel",
        "deep_gemm", "deep_ep", "tensorrt_llm", "flash_attn", "flash_mla", "xformers",
        "ray", "accelerate", "huggingface_hub", "safetensors", "lmdeploy", "modelopt",
        "compressed_tensors", "xgrammar", "outlines", "aiter", "mooncake", "nixl",
        "fastapi", "uvicorn", "starlette", "numpy", "cutlass",
    }
)  # fmt: skip


def module_of(path: str) -> str:
    """Machine-independent module path: "sglang/srt/mem_cache/memory_pool.py"."""
    p = path.strip().replace("\\", "/")
    if p.startswith("<"):
        return _pseudo_module(p)
    cut = max(p.rfind(marker) for marker in _SITE_PACKAGES)
    if cut >= 0:
        return _drop_egg(p[cut + len("/site-packages/") :])
    stdlib = _STDLIB_DIR.match(p)
    if stdlib:
        return p[stdlib.end() :]
    return _module_from_checkout(p.split("/"))


def _pseudo_module(path: str) -> str:
    # "<frozen runpy>" -> "runpy"; "<eval_with_key>.5" -> "<eval_with_key>"
    if path.startswith("<frozen "):
        return path[len("<frozen ") :].rstrip(">")
    return path.split(">", 1)[0] + ">"


def _drop_egg(tail: str) -> str:
    head, _, rest = tail.partition("/")
    return rest if head.endswith(".egg") and rest else tail


def _module_from_checkout(parts: list[str]) -> str:
    dirs = parts[:-1]
    for i in range(len(dirs) - 1, -1, -1):
        if dirs[i] in _KNOWN_PACKAGES:
            return "/".join(parts[i:])
    for marker in ("python", "src", "lib"):
        if marker in dirs:
            last = len(dirs) - 1 - dirs[::-1].index(marker)
            return "/".join(parts[last + 1 :])
    return parts[-1]


# --- input checks and line preparation ------------------------------------------------

_UNPRINTABLE = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\ufffd]")


def _check_input(text: str) -> None:
    # Length first: a 50 MB paste must be refused before any O(n) work.
    if len(text) > MAX_INPUT_CHARS:
        raise InputRejected(
            f"The paste has {len(text):,} characters; the limit is {MAX_INPUT_CHARS:,}. "
            "Paste the last few hundred lines around the error instead."
        )
    if "\x00" in text:
        raise InputRejected("The paste contains NUL bytes: it looks like a binary file, not a log.")
    if not text.strip():
        raise InputRejected("The paste is empty: paste the traceback or the error line.")
    sample = text[:65_536]
    if len(_UNPRINTABLE.findall(sample)) > len(sample) // 10:
        raise InputRejected(
            "The paste is mostly unprintable characters: it looks like binary data. "
            "Paste the text of the log (e.g. `tail -200 server.log`)."
        )


def _physical_lines(text: str) -> tuple[list[str], bool]:
    """The lines a terminal showed, within the work budget.

    Runs of blank lines count as one, and of a paste longer than MAX_LINES the
    first HEAD_LINES and the last MAX_LINES - HEAD_LINES lines are read (errors
    sit at the end of a log, the command and versions at its start).
    """
    text = html_unescaped(strip_ansi(text)).replace("\r\n", "\n")
    raws = _rejoined_wraps(_BLANK_RUNS.sub("\n\n", text).split("\n"))
    # JSON and logfmt log records, escaped tracebacks: as printed
    if "{" in text or "\\n" in text or "msg=" in text or "Error(" in text or "Exception(" in text:
        raws = [line for raw in raws for line in _printed(raw)]
    cut = len(raws) > MAX_LINES
    if cut:
        omitted = len(raws) - MAX_LINES
        raws = [*raws[:HEAD_LINES], f"[... {omitted} lines omitted ...]", *raws[-TAIL_LINES:]]
    lines = [last_overwrite(raw[:MAX_RAW_LINE_CHARS])[:MAX_LINE_CHARS].rstrip() for raw in raws]
    lines = _without_line_numbers(_without_file_labels(_dedented(lines)))
    lines = _without_env_report(_oldest_first(_without_shell_error_records(lines)))
    lines = _kubernetes_events(lines)
    if '", line ' in text or "\u201d, line " in text:
        lines = [line for folded in lines for line in _unfolded(folded)]
    return _joined_table_rows(lines), cut


# A copy from a terminal or pager that cuts long lines at its width: the paste's longest
# lines all have that length, and the cut falls inside a word or on the single space
# between two (`_cut_inside`). Two such cuts tell the width; one line of the largest
# length may be a line that long. Narrower than 60 columns it is a table or a banner,
# not a terminal.
MIN_WRAP_WIDTH = 60
MIN_WRAP_CUTS = 2


def _cut_inside(line: str, rest: str) -> bool:
    """Does the cut between `line` and `rest` fall inside what was one line: within a word,
    or at a single space between words (a line printed with a trailing space, or one
    whose next line is indented by one space, is rare; the width cuts wherever it falls)."""
    before, after = line[-2:], rest[:2]
    if before[-1:].isalnum() and after[:1].isalnum():
        return True
    at_space_before = before[-1:] == " " and bool(before[:1].strip() and after[:1].strip())
    at_space_after = after[:1] == " " and bool(after[1:].strip() and before[-1:].strip())
    return at_space_before or at_space_after


def _rejoined_wraps(raws: list[str]) -> list[str]:
    """The lines as printed, where a terminal's copy cut them at its width."""
    width = max(map(len, raws), default=0)
    if width < MIN_WRAP_WIDTH:
        return raws
    cut = [
        i
        for i in range(len(raws) - 1)
        if len(raws[i]) == width
        and raws[i + 1].strip()
        and not _starts_a_line(raws[i + 1], raws[i])
    ]
    inside = [i for i in cut if _cut_inside(raws[i], raws[i + 1])]
    if len(inside) < MIN_WRAP_CUTS:
        # One cut tells no width; a frame's line cut in two is still one once joined.
        cut = [i for i in cut if _FRAME.match(raws[i] + raws[i + 1]) and not _FRAME.match(raws[i])]
        if not cut:
            return raws
    joined: list[str] = []
    carried = False  # the last line read was cut: this one goes on with it
    cut_at = set(cut)
    for i, raw in enumerate(raws):
        if carried:
            joined[-1] += raw
        else:
            joined.append(raw)
        carried = i in cut_at
    return joined


# PyTorch's and vLLM's `collect_env` (the environment every bug form asks for) start with
# this line; what follows reports the setup ("cuDNN version: Could not collect", package
# lists), which the context reads (`decisiontree.context`), not errors or their words.
_ENV_REPORT_START = "Collecting environment information..."
_ENV_REPORT_END = re.compile(r"\s*(?:```|~~~|</details>)")


def _without_env_report(lines: list[str]) -> list[str]:
    """The lines with an environment report blanked out: from its first line to the end
    of the block it was pasted in, or to the first line a program's log or traceback
    starts with, after it."""
    if not any(_ENV_REPORT_START in line for line in lines):
        return lines
    kept, inside = [], False
    for line in lines:
        if line.strip() == _ENV_REPORT_START:
            inside = True
        elif inside and (
            _ENV_REPORT_END.match(line)
            or _HEADER in line
            or has_prefix(line)
            or _exception_line(line.strip(), strict=True)
        ):
            inside = False
        kept.append("" if inside else line)
    return kept


# Windows PowerShell 5.1 shows a native program's first line on stderr as an error record:
# "python : <the line>", where the command was typed ("At line:1 char:1", the command
# under "+ ", a "+ ~~~" underline), then the record's fields ("    + CategoryInfo : ...",
# "    + FullyQualifiedErrorId : NativeCommandError"). The line is the program's; the
# rest is the shell's, the same whatever the program said.
_SHELL_RECORD_END = re.compile(r"\s*\+ FullyQualifiedErrorId\s*:")
_SHELL_RECORD_LINE = re.compile(r"\s*\+(?: |$)|At (?:line|.{1,300}):\d+ char:\d+$")
_SHELL_RECORD_COMMAND = re.compile(r"(?:[A-Za-z]:)?[^:]{1,200}? : ")


def _without_shell_error_records(lines: list[str]) -> list[str]:
    """The lines without each PowerShell error record around a program's line (and the
    blank line after it), and without the program's name before that line: the
    program's next line follows its first, as the program printed them."""
    if not any("FullyQualifiedErrorId" in line for line in lines):
        return lines
    kept = list(lines)
    end = len(kept) - 1
    while end >= 0:  # from the last record up, so that deleting one moves no other
        if not _SHELL_RECORD_END.match(kept[end]):
            end -= 1
            continue
        start = end
        while start > 0 and _SHELL_RECORD_LINE.match(kept[start - 1]):
            start -= 1
        stop = end + 2 if end + 1 < len(kept) and not kept[end + 1].strip() else end + 1
        del kept[start:stop]
        if start > 0 and (named := _SHELL_RECORD_COMMAND.match(kept[start - 1])):
            kept[start - 1] = kept[start - 1][named.end() :]
        end = start - 1
    return kept


# Kubernetes' events as `kubectl describe` ("Type  Reason  Age  From  Message") and
# `kubectl get events` ("LAST SEEN  TYPE  REASON  OBJECT  MESSAGE") print them: columns
# padded with two or more spaces. A Warning event is what went wrong ("FailedScheduling",
# "BackOff", "Evicted"); its age, count and reporter differ from one run to the next.
_COLUMNS = re.compile(r"\s{2,}|\t+")
_EVENT_COLUMNS = frozenset({"type", "reason", "message"})


def _kubernetes_events(lines: list[str]) -> list[str]:
    """The lines with each row of an events table written as a log line, "Reason: message":
    a Warning row at the level ERROR (Kubernetes has no other level for what went wrong:
    "Evicted" says no error word), a Normal one at INFO."""
    if not any("Reason" in line or "REASON" in line for line in lines):
        return lines
    kept: list[str] = []
    names: list[str] = []
    for line in lines:
        if not names and "Reason" not in line and "REASON" not in line:
            kept.append(line)  # outside a table: only a header starts one
            continue
        lowered = [cell.lower() for cell in _COLUMNS.split(line.strip())]
        if _EVENT_COLUMNS.issubset(lowered) and lowered[-1] == "message":
            names = lowered
            kept.append("")
            continue
        if names and set(line.strip()) <= {"-", " ", "\t"} and line.strip():
            kept.append("")  # the divider under the header
            continue
        row = dict(zip(names, _COLUMNS.split(line.strip(), maxsplit=len(names) - 1), strict=False))
        if names and len(row) == len(names) and row["type"] in ("Normal", "Warning"):
            said = f"{row['reason']}: {row['message']}"
            kept.append(f"ERROR {said}" if row["type"] == "Warning" else f"INFO {said}")
            continue
        names = []
        kept.append(line)
    return kept


def _oldest_first(lines: list[str]) -> list[str]:
    """The lines in the order printed, where a log viewer showed them newest first
    (Grafana's and many consoles' default): there, each "Traceback (most recent call
    last):" comes after its frames, and a frame line before it."""
    said = [line for line in lines if line.strip()]
    headers = [i for i, line in enumerate(said) if _HEADER in line]
    if not headers:
        return lines
    after = [i for i in headers if i and _FRAME.search(said[i - 1])]
    before = [i for i in headers if i + 1 < len(said) and _FRAME.search(said[i + 1])]
    return lines[::-1] if len(after) > len(before) else lines


_SHAPE = str.maketrans(
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0" * 10 + "a" * 52
)
_SHAPE_CHARS = 12


def _starts_a_line(line: str, above: str) -> bool:
    """Does `line` start a line of its own rather than go on with `above`: a log prefix,
    or the shape `above` starts with (a task's label, a rank's tag, the same words)?"""
    if has_prefix(line):
        return True
    head = line[:_SHAPE_CHARS].translate(_SHAPE)
    return len(head) == _SHAPE_CHARS and head == above[:_SHAPE_CHARS].translate(_SHAPE)


def _dedented(lines: list[str]) -> list[str]:
    """The lines without the margin they all share: a paste quoted whole as an indented
    block (a Markdown code block, a mail, a YAML value) reads as it was printed, its log
    prefixes and exception lines where a log puts them."""
    margins = {line[: len(line) - len(line.lstrip(" \t"))] for line in lines if line}
    margin = os.path.commonprefix(list(margins)) if margins else ""
    return [line[len(margin) :] for line in lines] if margin else lines


def _printed(raw: str) -> list[str]:
    lines = record_lines(raw) if raw.lstrip().startswith("{") else logfmt_lines(raw)
    lines = [unescaped for line in lines or [raw] for unescaped in escaped_lines(line) or [line]]
    return [said for line in lines for said in exception_repr_lines(line) or [line]]


# A traceback whose line breaks were lost (a chat message, an issue title, a log shipper
# that joins a record's lines with spaces): 'File "x.py", line 3, in f  code()  ValueError: ...'.
_FOLDED_FRAME = re.compile(
    r'File ["\u201c][^"\u201d\n]{1,1000}["\u201d], line \d+, in [\w<>.]+(?=\s|$)'
)
_FOLDED_EXCEPTION = re.compile(
    r"(?:^|(?<=\s))(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:: |$)"
)


def _unfolded(raw: str) -> list[str]:
    """The lines of a traceback folded into one: each frame, its source line and the
    exception that ends it on lines of their own. A line that is one frame stays as it is."""
    frames = list(_FOLDED_FRAME.finditer(raw))
    if not frames or (len(frames) == 1 and not raw[frames[0].end() :].strip()):
        return [raw]
    before = raw[: frames[0].start()]
    # A log prefix stays on the first frame's line; words before it are a line of their own.
    lines = [before.rstrip()] if split_prefix(before)[0].strip() else []
    for frame, following in zip(frames, [*frames[1:], None], strict=True):
        lead = before if frame is frames[0] and not lines else "  "
        lines.append(lead + frame.group())
        rest = raw[frame.end() : following.start() if following else len(raw)].strip()
        raised = _FOLDED_EXCEPTION.search(rest) if following is None else None
        code, exception = (rest[: raised.start()], rest[raised.start() :]) if raised else (rest, "")
        lines += ["    " + code.strip()] if code.strip() else []
        lines += [exception] if exception else []
    return lines


_BLANK_RUNS = re.compile(r"\n(?:[ \t\r]*\n)+")
# A row of a table drawn with "|" borders (a server's model status table); the closing
# border may be cut off by the paste.
_TABLE_ROW = re.compile(r"\s*\|(?P<cells>.*?)\|?\s*$")


def _joined_table_rows(lines: list[str]) -> list[str]:
    """Lines with each wrapped table cell joined back into its row.

    A table wraps a long cell (an error in a status column) onto rows whose first
    cell is empty; read alone, the error's second half belongs to no line. Each such
    row is added, cell by cell, to the row it continues, which keeps its place; the
    continuation rows are left out.
    """
    joined: list[str] = []
    above: list[str] | None = None  # the cells of the last row that started a table row
    lead = ""  # the log prefix of that row
    for line in lines:
        rows = _table_rows(line)
        continuing = [
            cells
            for _, cells in rows
            if above is not None and not cells[0] and len(cells) == len(above) and any(cells)
        ]
        if continuing and above is not None:
            for number, cell in enumerate(continuing[0]):
                # Capped as it grows: a backtrace wrapped over thousands of rows stays
                # linear to read.
                if cell and len(above[number]) < MAX_LINE_CHARS:
                    above[number] = f"{above[number]} {cell}".strip()[:MAX_LINE_CHARS]
            joined[-1] = (lead + "| " + " | ".join(above) + " |")[:MAX_LINE_CHARS]
            continue
        joined.append(line)
        lead, cells = rows[0] if rows else ("", [""])
        above = cells if cells[0] else None
    return joined


def _table_rows(line: str) -> list[tuple[str, list[str]]]:
    """What a line may be as a table row of two or more cells: (the log prefix before it,
    its cells, stripped), the likelier reading first; none for a line that is no row.

    A log prefix may stand before the row (`docker compose logs`' "triton-1  | "), and
    one that ends in "|" ("<clock> | message") leaves it open whether a "|" after it
    is the prefix's or the row's border; the row a wrapped cell continues tells."""
    if "|" not in line:
        return []
    bodies = [line]
    if not line.lstrip().startswith("|") and line.count("|") > 2:
        body = strip_prefix(line)
        head = line[: len(line) - len(body)].rstrip()
        bodies = [body, line[len(head) - 1 :]] if head.endswith("|") else [body]
    found = []
    for body in bodies:
        match = _TABLE_ROW.fullmatch(body)
        cells = [cell.strip() for cell in match["cells"].split("|")] if match else []
        if len(cells) >= 2:
            found.append((line[: len(line) - len(body)], cells))
    return found


# --- log prefixes (decisiontree.logline) -----------------------------------------------


@dataclass(frozen=True)
class _Line:
    index: int
    text: str  # prefix stripped
    stream: str  # rank or process that printed it
    style: tuple[bool, str | None, str | None]  # (stamped, level, source) of its prefix
    rank: str | None

    @property
    def level(self) -> str | None:
        return self.style[1]


def _strip_prefixes(line: str) -> tuple[str, Prefix]:
    line, found = split_prefix(line)
    # Python 3.11 exception groups draw "|" borders around sub-tracebacks.
    for _ in range(4):
        if not line.lstrip().startswith("| "):
            break
        line = line.lstrip()[2:]
    return _unwrap_markdown(line), found


# An issue's error line set in bold, italics or code: "**ValueError: ...**", "_`...`_".
_MARKDOWN_WRAP = re.compile(
    r"(?P<open>[*_`]{1,3})(?P<body>[^*_`\s].*?[^*_`\s])(?P<close>[*_`]{1,3})"
)


def _unwrap_markdown(line: str) -> str:
    """The line without the emphasis or code markers an issue wrapped it in.

    Only a sentence is unwrapped (its text has a space), and only when the closing
    markers mirror the opening ones, so `__init__` and `**kwargs` stay as written.
    """
    if not line or line[0] not in "*_`":
        return line
    match = _MARKDOWN_WRAP.fullmatch(line.rstrip())
    if match is None or match["close"] != match["open"][::-1] or " " not in match["body"]:
        return line
    return match["body"]


# Slurm's `srun --label` puts the task's number before each line it prints: "3: Traceback".
# A line alone could be anything numbered; most of a paste's lines so is a label: of a
# task where the numbers repeat (a few tasks print many lines), else of the line (an
# editor's, `grep -n`'s or `cat -n`'s numbers, counting up), which is set aside too.
# `cat -n` and `nl` right-align the number in six columns and put a tab after it.
# A blank line numbered is the number alone (the tab went with the line's trailing space).
_LINE_LABEL = re.compile(r" {0,6}(?P<label>\d{1,6})(?::(?!\d) ?|\t|$)")  # not a clock's "10:00:01"
# `cat -n`'s and `nl`'s shape: the number right-aligned in six columns (their shared
# margin may be gone, `_dedented`), then a tab.
_NUMBERED_LINE = re.compile(r" {0,5}\d{1,6}(?:\t|$)")
MIN_LABELLED_LINES = 3
MIN_LABELLED_SHARE = 0.8
_TASKS, _LINE_NUMBERS, _HOSTS = "tasks", "line numbers", "hosts"
# pdsh and clush put the host before each line they gather: "gpu-node-3: Traceback ...".
# A host's name has a digit, a dash or a dot; a level ("ERROR: ") or an exception's
# name ("ValueError: ") has none.
_HOST_LABEL = re.compile(
    r"(?P<label>[A-Za-z][\w-]{0,62}(?:\.[\w-]{1,62}){0,6}|\d{1,3}(?:\.\d{1,3}){3}):(?: |$)"
)  # a blank line the host printed ends at the colon
_HOST_NAME = re.compile(r"[\d.-]")


def _most_labelled(
    lines: list[str],
    label: re.Pattern[str],
    holds: Callable[[re.Match[str]], bool] = bool,
) -> list[re.Match[str]]:
    """The label on each line, where MIN_LABELLED_SHARE of them or more have it; else
    none (read no further than the misses that settle it: this runs on every paste)."""
    misses_allowed = len(lines) * (1 - MIN_LABELLED_SHARE)
    found, misses = [], 0
    for line in lines:
        if (match := label.match(line)) is not None and holds(match):
            found.append(match)
        elif (misses := misses + 1) > misses_allowed:
            return []
    return found


def _line_labels(physical: list[str]) -> str:
    """What labels most of the paste's lines: _TASKS, _LINE_NUMBERS, _HOSTS or ""."""
    filled = [line for line in physical if line.strip()]
    labels = [int(found["label"]) for found in _most_labelled(filled, _LINE_LABEL)]
    if (
        labels
        and len(labels) == len(filled)
        and any("\t" in line for line in filled)
        and all(map(_NUMBERED_LINE.match, filled))
    ):
        return _LINE_NUMBERS  # `cat -n`'s shape tells alone, on a line or two too
    if len(labels) < MIN_LABELLED_LINES:
        named = _most_labelled(filled, _HOST_LABEL, lambda found: _is_host_name(found["label"]))
        return _HOSTS if len(named) >= MIN_LABELLED_LINES or _host_said_it(filled, named) else ""
    if len(set(labels)) * 2 <= len(labels):
        return _TASKS
    return _LINE_NUMBERS if labels == sorted(labels) else ""


# `grep` over log files names the file before each line it prints: "server.log:" on a
# matching line, "server.log-" on a line of context, each followed by the line's number
# with -n. A log file's name: source files (".py:", ".cu:") are compilers' places.
_FILE_LABEL = re.compile(
    r"(?P<file>[\w.~/-]{0,200}\.(?:log|txt|out|err)(?:\.\d{1,3})?)(?P<sep>[:-])(?:\d{1,7}(?P=sep))?"
)
_GREP_GROUPS = "--"  # between grep's groups of context


def _without_file_labels(physical: list[str]) -> list[str]:
    """The lines without the log file's name grep put before most of them."""
    filled = [line for line in physical if line.strip() and line != _GREP_GROUPS]
    # A log file's name is telling alone: a short paste's one or two lines count too.
    if not _most_labelled(filled, _FILE_LABEL):
        return physical
    return [
        ""
        if line == _GREP_GROUPS
        else line[found.end() :]
        if (found := _FILE_LABEL.match(line))
        else line
        for line in physical
    ]


def _without_line_numbers(physical: list[str]) -> list[str]:
    """The lines without the numbers an editor, `grep -n` or `cat -n` put before them:
    they say nothing, and the readers of tables and wraps need the line as printed."""
    if _line_labels(physical) != _LINE_NUMBERS:
        return physical
    return [
        line[found.end() :] if (found := _LINE_LABEL.match(line)) else line for line in physical
    ]


def _is_host_name(label: str) -> bool:
    # A host's name has no "_" (RFC 1123): "launch_server.py: error: ..." is argparse
    # naming its program. A dotted name ending in a class
    # ("torch.distributed.DistNetworkError") is an exception's type.
    if "_" in label or label.endswith(".py") or not _HOST_NAME.search(label):
        return False
    return not _STRICT_TYPE.fullmatch(label.rsplit(".", 1)[-1])


def _host_said_it(filled: list[str], named: list[re.Match[str]]) -> bool:
    """A line or two, each after one host's name, and what follows each is an exception
    or a logger's line: too few lines to tell a label by its repeats, but a name, then
    what a program prints, is pdsh's shape. (A program's own name before its error,
    "nvidia-container-cli: initialization error: ...", is the error's first word.)"""
    if not named or len(named) < len(filled) or len({found["label"] for found in named}) > 1:
        return False
    if len(named) > 1 and any(map(str.isdigit, named[0]["label"])):
        return True  # a program names itself once per message, not a numbered host's way
    said = [found.string[found.end() :] for found in named]
    return all(_exception_line(line, strict=True) or has_prefix(line) for line in said)


def _logical_lines(physical: list[str]) -> list[_Line]:
    lines: list[_Line] = []
    stream = ""
    labels = _line_labels(physical)
    for index, raw in enumerate(physical):
        label = (_HOST_LABEL if labels == _HOSTS else _LINE_LABEL).match(raw) if labels else None
        body, prefix = _strip_prefixes(raw[label.end() :] if label else raw)
        if label and labels == _TASKS and not prefix.rank:
            prefix.rank = f"rank{label['label']}"
        if label and labels == _HOSTS and not (prefix.rank or prefix.proc):
            prefix.proc = label["label"]  # each host's lines are a stream of their own
        # Unprefixed lines continue the record of whoever printed last; where every task's
        # line is labelled, an unlabelled one is the launcher's own.
        if prefix.rank or prefix.proc:
            stream = prefix.rank or prefix.proc or ""
        elif prefix.stamped or labels == _TASKS:
            stream = ""
        style = (prefix.stamped, prefix.level, prefix.source)
        lines.append(_Line(index, body, stream, style, prefix.rank))
    return lines


# --- line shapes ----------------------------------------------------------------------

_HEADER = "Traceback (most recent call last):"
_FRAME = re.compile(
    # Curly quotes: a traceback that passed through a word processor or a chat's formatting.
    r'\s*File ["\u201c](?P<path>[^"\u201d]{1,1000})["\u201d], line (?P<lineno>\d+)'
    r"(?:, in (?P<func>.+))?$"
)
# IPython and Jupyter (8+): "AssertionError      Traceback (most recent call last)", then
# "File /opt/.../vllm/worker/worker.py:229, in Worker.determine_num_available_blocks(self)"
# frames, each followed by numbered source lines, "--> 229" marking the one that ran.
_NOTEBOOK_HEADER = re.compile(r"\s*[A-Za-z_][\w.]*\s{2,}Traceback \(most recent call last\)\s*$")
_NOTEBOOK_FRAME = re.compile(
    r"\s*File (?P<path>(?:/|~/|[A-Za-z]:\\)[^:\n]{1,1000}):(?P<lineno>\d+), in "
    r"(?:[\w.<>]+\.)?(?P<func>[\w<>]+)(?:\(.*)?$"
)
_NOTEBOOK_CELL = re.compile(r"\s*(?:Cell In\s*\[\d*\], line \d+|<ipython-input-[\w-]+> in )")
_NOTEBOOK_SOURCE = re.compile(r"\s*(?P<arrow>-+>)?\s*\d+(?: (?P<code>.*))?$")
# pytest's report of a failed test (`--tb=auto`, its default) has no header: it opens with
# "____ test_name ____"; each entry of the traceback is then the function's source (its
# "def" line among it), over "path.py:12: " ("path.py:12: ValueError" for the last), or
# short, for the entries between: "path.py:12: in function" over the line that ran. The
# exception's lines start "E   " (a prefix, `decisiontree.logline`); "_ _ _" divides.
_PYTEST_TEST = re.compile(r"_{3,} (?P<test>\S.{0,300}?) _{3,}\s*$")
# Its section banners: headings, not errors ("=== FAILURES ===", "=== 1 failed in 2.1s ===").
_PYTEST_SECTION = re.compile(
    r"={3,} (?:FAILURES|ERRORS|short test summary info|warnings summary"
    r"|(?:\d+ (?:failed|passed|errors?|skipped|warnings?|deselected)[, ]*)+in [\d.]+s.*?) ={3,}\s*$"
)
_PYTEST_CALL = re.compile(
    r"(?P<path>[^\s:]{1,1000}\.py):(?P<lineno>\d+): in (?P<func>[\w<>.]+)\s*$"
)
_PYTEST_PLACE = re.compile(
    r"(?P<path>[^\s:]{1,1000}\.py):(?P<lineno>\d+):(?: (?P<raised>[A-Za-z_][\w.]*))?\s*$"
)
_PYTEST_DEF = re.compile(r"\s+(?:async\s+)?def (?P<func>\w+)\(")
_PYTEST_DIVIDER = re.compile(r"(?:_ ){3,}_?\s*$")
# A Rust panic: "thread 'main' panicked at src/router.rs:412:38:" with its message on the
# next line (Rust 1.73 and later), or "thread 'main' panicked at 'message', src/main.rs:2:5".
PANIC = "RustPanic"  # FixGraph's name for it: Rust's panics have no type
_RUST_NOTE = "note: run with `RUST_BACKTRACE"
_RUST_PANIC = re.compile(
    r"\s*thread '[^']{0,200}' panicked at (?:'(?P<quoted>.{0,2000})', )?"
    r"(?P<path>[\w./\\-]{1,500}\.rs):(?P<lineno>\d+):\d+:?\s*$"
)
# Python's faulthandler (a segfault, `faulthandler.dump_traceback`): a block per thread,
# innermost call first, frames without a comma before "in". Only the thread
# that crashed tells; the other threads' blocks are read past.
_DUMP_HEADER = re.compile(
    r"\s*(?:(?P<crashed>Current thread|Stack)|Thread) ?[^(]{0,200}\(most recent call first\):\s*$"
)
_DUMP_FRAME = re.compile(
    r'\s*File "(?P<path>[^"]{1,1000})", line (?P<lineno>\d+) in (?P<func>\S.*)$'
)
_DUMP_NO_FRAME = "<no Python frame>"
# py-spy's dump of a live process (`py-spy dump --pid`, what a hang is reported with): a
# block per thread, innermost call first, "    func (path.py:12)"; with --locals, each
# frame's "Arguments:" and "Locals:" below it, indented further. The main thread is where
# the program waits.
_SPY_HEADER = re.compile(
    r"\s*Thread (?:0x[0-9A-Fa-f]{1,16}|\d{1,10}) \((?:active|idle|gil)[+\w]{0,12}\)"
    r'(?:: "(?P<name>[^"]{0,200})")?\s*$'
)
_SPY_FRAME = re.compile(
    r"\s{2,8}(?P<func>[\w<>.]{1,200}) \((?P<path>[^()]{1,1000}):(?P<lineno>\d+)\)\s*$"
)
# A file py-spy shortened to its bare name that is a standard library module: marked so,
# since the directory that would say it (".../lib/python3.10/") was cut.
STDLIB_SHORTENED = "<stdlib>/"
_SPY_LOCALS = " " * 8  # a frame's arguments and locals: indented under it
_SPY_MAIN = "MainThread"
# Go's panic or runtime fatal error, then the failing goroutine's calls, innermost first:
# "pkg/path.(*T).Method(0x0)" over a tab-indented "/build/file.go:88 +0x2c" (Kubernetes'
# device plugin, the NVIDIA container toolkit, Ollama are Go).
_GO_HEADER = re.compile(r"\s*goroutine \d+ \[[^\]]{1,100}\]:\s*$")
_GO_CALL = re.compile(
    r"(?:created by )?(?P<func>[\w./*()\[\]{}-]+?)(?:\([^()]*\))?(?: in goroutine \d+)?"
)
_GO_PLACE = re.compile(r"\s+(?P<path>\S+\.(?:go|s)):(?P<lineno>\d+)(?: \+0x[0-9a-f]+)?\s*$")
_GO_RUNTIME = re.compile(r"panic$|runtime\.")  # where Go's runtime raises it: no one's code
# What the crash was, printed before the dump; the dump's frames are where it happened.
FATAL_PYTHON_ERROR = "FatalPythonError"  # FixGraph's names for them: no class is printed
GO_PANIC = "GoPanic"
_CRASHES = (
    (re.compile(r"Fatal Python error: (?P<what>.+)"), FATAL_PYTHON_ERROR),
    (re.compile(r"(?:panic|fatal error): (?P<what>.+)"), GO_PANIC),
)
# rich's traceback (typer apps: TGI's text-generation-server, the hf CLI) in a box: a frame
# is "│ /path/file.py:55 in serve │" (the function wrapped to the next line when the path
# is long), the line that ran "│ ❱ 55 │   server.serve(...) │", locals in boxes of their
# own; the exception line follows the box, unboxed.
_BOX_HEADER = re.compile(r"\s*╭─+ Traceback \(most recent call last\) ─+╮\s*$")
_BOX_SIDE = "│"
_BOX_FRAME = re.compile(
    r"\s*(?P<path>(?:[/~<]|[A-Za-z]:\\)\S.*?|\S+\.pyw?):(?P<lineno>\d+)"
    r"(?: in(?: (?P<func>\S+))?)?\s*$"
)
_BOX_RAN = re.compile(r"\s*❱\s*\d+\s*│(?P<code>.*)$")
_BOX_INNER = re.compile(r"\s*(?:[╭│╰]|\d+\s*│|\d+\s*$|\.\.\. \d+ frames? hidden)")
_CHAIN = re.compile(
    r"\s*(?:During handling of the above exception, another exception occurred"
    r"|The above exception was the direct cause of the following exception):?\s*$"
)
_CARETS = re.compile(r"\s*[~^][~^ ]*$")
_REPEATED = re.compile(r"\s*\[Previous line repeated \d+ more times?\]")
# A native stack's call, under a C++ error: PyTorch's "frame #3: ..."; TensorRT-LLM's and
# glibc's "2       0x7f3a5c31a1c2 tensorrt_llm::common::throwRuntimeError(...) + 77";
# gdb's "#4  0x00007f... in ncclGroupEnd () from ..."; backtrace_symbols' "/lib/libc.so.6(
# +0x42520) [0x7f...]"; boost's "3# main at /src/app.cpp:12". A call's name may say
# "Error" (throwRuntimeError): it names code, not what went wrong.
_CPP_FRAME = re.compile(
    r"\s*(?:frame #\d+:|Exception raised from |\d{1,4}\s+0x[0-9a-fA-F]{4,16}\s+\S"
    r"|#\d{1,4}\s+0x[0-9a-fA-F]{4,16} in |\d{1,3}# \S"
    r"|[^\s()]{1,500}\([^()\s]{0,300}\+0x[0-9a-fA-F]{1,16}\)\s{0,4}\[0x[0-9a-fA-F]{1,16}\])"
)
# A call of a JavaScript (V8: Node, a browser), JVM or Rust stack, under its error's line:
# "    at OpenAI.makeStatusError (/app/node_modules/openai/core.js:263:33)", "    at
# async f (file:1:2)", "    at file:///app/x.mjs:3:9"; "\tat org.Foo.bar(Foo.java:42)";
# RUST_BACKTRACE's "   2: core::result::unwrap_failed" over its "      at src/x.rs:1:5".
# A call's name may say "Error", "Exception" or "failed"; it names code, not what went wrong.
_FOREIGN_FRAME = re.compile(
    r"\s+(?:at (?:async |new )?(?:"
    r"[^\s()]{1,300}(?: \[as [^\]\s]{1,100}\])?"  # V8, a named call: where, or what it is
    r" \((?:[^()]{1,1000}:\d+(?::\d+)?|<anonymous>|native|index \d+)\)"
    r"|[^\s()]{1,1000}:\d+:\d+"  # V8 or Rust, a place alone
    r"|[\w$./<>-]{1,500}\([^()]{0,500}\)"  # the JVM
    # Rust, a path of "::"-joined parts that have no colon or space, or " as " in generics
    r")|\d{1,4}: +(?:0x[0-9a-fA-F]{1,16} - )?(?=\S*::)[<\w$.{][^\s:]*(?:(?:::| as )[^\s:]*)+"
    r")\s*$"
)
# "...", "[... 120 lines omitted ...]", "(log truncated)"
_CLIPPED = re.compile(r"\s*(?:(?:\.\.\.|…)(?!\w)|[\[(<](?:\.\.\.|…|[\w ]{0,30}truncated))")
_GROUP_BORDER = re.compile(r"\s*\+[-+]")  # +-+---- 1 ---- around exception-group members
# pip closes the output of a build step it ran ("╰─> [12 lines of output]") with this line.
_OUTPUT_END = "[end of output]"
# An exception raised in another process and carried across names that one's class in
# parentheses after its own: "ray.exceptions.RayTaskError(ValueError): ...".
_EXCEPTION = re.compile(
    r"(?P<type>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\((?P<wraps>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\))?"
    r"(?P<colon>:(?: (?P<msg>.*))?)?$"
)
_STRICT_TYPE = re.compile(
    r"[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Failed|Fault|Timeout)"
    r"|Exception|StopIteration|StopAsyncIteration|ExceptionGroup"
)
_KERNEL_ASSERTION = re.compile(r"Assertion [`'](?P<cond>.+)[`'] failed\.?")
# The message may start on the next line (PyTorch's own begin with a line break, and a
# paste loses the space after the colon): "__init__.py:235: UserWarning:".
_PY_WARNING = re.compile(r"\S+\.py:\d+: (?P<warning>\w*Warning:(?: .*)?)$")
_WARNING_SOURCE = re.compile(r"  \S")  # the line `warnings.warn` shows under its message
# Lines that are errors although no Python traceback surrounds them: at the line's start,
# or anywhere in it. A word boundary is checked after a branch's first letter,
# `N(?<=\bN)CCL` for `\bNCCL`: when every branch starts with a letter, re skips straight
# to the places where one may start (10x faster over a log line, bench/log_speed.py).
_STRONG_ERROR_START = re.compile(
    r"terminate called after throwing|\s*what\(\):|nvcc fatal|ninja: build stopped|FAILED: "
    r"|Killed$|Fatal Python error|Bus error|Aborted\b|panic: "
)
_STRONG_ERROR = re.compile(
    r"N(?<=\bN)CCL (?:WARN|error)\b|N(?<=\bN)VRM: Xid\b"
    r"|n(?<=\bn)ccl(?:UnhandledCudaError|SystemError|InternalError|InvalidUsage|RemoteError)\b"
    r"|static.assert(?:ion)? failed|static_assert failed"
    r"|\.(?:cu|cuh|cpp|cc|c|h|hpp)(?:\(\d+\)|:\d+:\d+): (?:fatal )?error\b"
    r"|Killed process \d+|Out of memory: Kill|invoked oom-killer|oom-kill:"
    r"|Segmentation fault|S(?<=\bS)IG(?:SEGV|ABRT)\b|core dumped"
    r"|Watchdog caught collective operation timeout|ran for \d+ milliseconds before timing out"
    r"|Received sigquit|scheduler is dead"
)


def _strong_error(text: str) -> bool:
    head = text[:ERROR_SCAN_CHARS]
    return bool(_STRONG_ERROR_START.match(head) or _STRONG_ERROR.search(head))


_CUDA_ERROR = re.compile(r"C(?<=\bC)U(?:DA error: |BLAS_STATUS_\w+|DNN_STATUS_\w+)")
_HTTP_ACCESS = re.compile(r'"(?:GET|POST|PUT|DELETE|HEAD|OPTIONS) \S* HTTP/\d')
# The word patterns below are lowercase and searched in the lowercased line (`_said`):
# with re.IGNORECASE the engine cannot skip to the positions where a word may start, and
# every log line pays for it (2-3x slower over a 2 MB log, bench/log_speed.py).
# INFO lines worth keeping: the framework chose or overrode something.
_CHOICE = re.compile(
    r"\b(?:set|setting|sets|using|use|uses|select(?:ed|ing)?|chose|choos\w*|forc(?:e|ed|es|ing)"
    r"|overrid\w*|overwrit\w*|fall(?:ing)?\s?back|fallback|switch\w*|defaults? to|ignor\w*"
    r"|deprecat\w*|disabl\w*|not supported|unsupported|incompatib\w*|mismatch\w*)\b"
)
_CHOICE_TOPIC = re.compile(
    r"\b(?:backends?|dtype|kv.?cache|quantiz\w*|attention|kernels?|cuda.?graphs?|page.?size"
    r"|precision|fp8|fp4|nvfp4|bf16|bfloat16|float16|fp16|version|flags?|arguments?)\b"
)


def _said(words: re.Pattern[str], text: str) -> bool:
    """Whether one of the lowercase `words` stands in the text, in any case."""
    return words.search(text.lower()) is not None


_MAX_RELEVANT_INFO_CHARS = 400  # longer INFO lines are argument dumps


def _frame_of(text: str) -> re.Match[str] | None:
    """A frame line, as Python prints it, as IPython does, or as pytest's short entry."""
    if ": in " in text and (call := _PYTEST_CALL.match(text)):
        return call
    return _FRAME.match(text) or (_NOTEBOOK_FRAME.match(text) if "File " in text else None)


def _is_structural(text: str) -> bool:
    return (
        _HEADER in text
        or bool(_frame_of(text))
        or bool(_CHAIN.match(text))
        or bool(_CPP_FRAME.match(text))
        or bool(_FOREIGN_FRAME.match(text))
        or text.startswith("```")
        or bool(_GROUP_BORDER.match(text))
    )


def _margin(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]


def _exception_line(text: str, *, strict: bool) -> tuple[str, str, str] | None:
    """(type, message, the class it wraps) if `text` reads like "module.TypeName: message"."""
    if not text or text[0].isspace():
        return None
    match = _EXCEPTION.match(text)
    if match is None:
        return None
    short = match["type"].rsplit(".", 1)[-1]
    # A bare name ("AssertionError") must look like an exception class; with a
    # colon, any CamelCase name will do after frames ("CompilationError: ...").
    if (strict or not match["colon"]) and not _STRICT_TYPE.fullmatch(short):
        return None
    if not short[:1].isupper():  # code lines that lost their indent: "else:", "self.x"
        return None
    return match["type"], (match["msg"] or "").strip(), match["wraps"] or ""


def _untyped_message(line: _Line) -> bool:
    """Could this line, right after a traceback's last source line, be its message?"""
    text = line.text
    if not text or text[0].isspace() or line.level in ("INFO", "DEBUG", "WARNING"):
        return False
    if len(text) > MAX_PLAIN_ERROR_CHARS or _is_structural(text) or _CLIPPED.match(text):
        return False
    return any(char.isalpha() for char in text[:80])


def kernel_assertion_of(line: str) -> str | None:
    """ "Assertion `cond` failed." from a device-side assert line, without block/thread ids."""
    match = _KERNEL_ASSERTION.search(line)
    return f"Assertion `{match['cond']}` failed." if match else None


def _warning_of(line: _Line) -> str | None:
    text = line.text.strip()
    if py := _PY_WARNING.match(text):
        return py["warning"]
    if line.level == "WARNING" or text.lower().startswith("warning:"):
        return text
    if line.level not in (None, "INFO") or len(text) > _MAX_RELEVANT_INFO_CHARS:
        return None
    if _HTTP_ACCESS.search(text) or not _said(_CHOICE, text):
        return None
    # An unprefixed line that says something failed is an error that names its setup ("X
    # crashes when using the flashinfer backend", an issue's title), not a choice logged.
    if line.level is None and _said(_ERRORISH, text):
        return None
    return text if _said(_CHOICE_TOPIC, text) else None


# One member of a JSON object printed over several lines: `"message": "At most ...",`.
_JSON_MEMBER = re.compile(r'\s{0,80}"(?P<key>[\w-]{1,40})"\s{0,3}:\s{0,3}(?P<value>.*)')
# The members that hold what went wrong in the error bodies HTTP APIs answer with
# (OpenAI-style, FastAPI, most JSON APIs); the others name its type, code or parameter.
_ERROR_BODY_KEYS = frozenset({"message", "detail", "error", "msg", "error_message"})


def error_body_message(text: str) -> str | None:
    """What a member of a printed JSON object says went wrong, or None.

    A message member's text whatever it says; another member's text when it reads
    as an error sentence. A one-word value (`"object": "error"`) is a label.
    """
    if not text.lstrip().startswith('"'):
        return None
    member = _JSON_MEMBER.fullmatch(text)
    if member is None:
        return None
    value = member["value"].rstrip().removesuffix(",")
    if len(value) < 3 or not (value.startswith('"') and value.endswith('"')):
        return None  # an object or a number: its own members say what went wrong
    said = value[1:-1].replace('\\"', '"').strip()
    if member["key"].lower() in _ERROR_BODY_KEYS:
        return said or None
    return said if " " in said and _said(_ERRORISH, said) else None


# The same member inside an error body printed on one line (JSON or a Python dict):
# `Error code: 400 - {'object': 'error', 'message': "This model's ...", 'type': ...}`.
_INLINE_MESSAGE = re.compile(
    r"""(['"])(?:message|detail|msg|error_message)\1\s{0,3}:\s{0,3}(['"])(?P<said>.{3,400}?)(?<!\\)\2\s{0,3}[,}]"""
)


def inline_body_message(text: str) -> str | None:
    """The message member of an error body printed inside a line, or None."""
    if "message" not in text and "detail" not in text and "msg" not in text:
        return None
    found = _INLINE_MESSAGE.search(text[: ERROR_SCAN_CHARS * 4])
    if found is None:
        return None
    # The string as the server wrote it (JSON's and Python's escapes read back), and of its
    # lines the error's: the first that has words (not a rule of dashes), or a traceback's
    # last ("detail": "Traceback ...\\n...").
    said = _ESCAPE.sub(lambda escape: _ESCAPED[escape[1]], found["said"])
    lines = [line.strip() for line in said.splitlines() if _WORDS.search(line)]
    if not lines:
        return None
    return lines[-1] if _HEADER in lines[0] else lines[0]


_ESCAPE = re.compile(r"""\\(["'\\nrt])""")
_ESCAPED = {'"': '"', "'": "'", "\\": "\\", "n": "\n", "r": "\r", "t": "\t"}


# An error that quotes the error it caught: "Worker failed with error 'CUDA error: an
# illegal memory access was encountered ...', please check the stack trace above". What
# it quotes is an error of its own, as the stack trace it points to would show it.
_QUOTED_ERROR = re.compile(r"""\b[Ee]rror:?\s{0,3}(['"])(?P<said>(?:(?!\1).){3,2000}?)\1""", re.S)


# An error quoted as code in a sentence, as issues and chats write it: "I get `RuntimeError:
# CUDA error: an illegal memory access was encountered` from `gptq_marlin_gemm`".
_CODE_SPAN = re.compile(r"`(?P<said>[^`\n]{3,2000})`")


def quoted_error_message(text: str) -> str | None:
    """The first line of an error quoted in `text`, where it reads as an error; else None."""
    head = text[: ERROR_SCAN_CHARS * 8]
    quoted = _QUOTED_ERROR.finditer(head) if "rror" in text else iter(())
    spans = _CODE_SPAN.finditer(head) if "`" in text else iter(())
    for found in (*quoted, *spans):
        said = found["said"].strip().split("\n", 1)[0].strip()
        start = said[:ERROR_SCAN_CHARS]
        if _exception_line(said, strict=True) or _strong_error(start) or _CUDA_ERROR.search(start):
            return said
    return None


def _is_error_line(line: _Line) -> bool:
    text = line.text
    if not text.strip() or _JSON_MEMBER.fullmatch(text) or _FOREIGN_FRAME.match(text):
        return False  # a member of a printed object ("type": "BadRequestError") is data
    if _strong_error(text) or _CUDA_ERROR.search(text[:ERROR_SCAN_CHARS]):
        return True
    if line.level in ("ERROR", "CRITICAL", "FATAL") and not text[:1].isspace():
        return True
    # An unprefixed line that says something failed: a daemon's answer, a C++ log line,
    # an HTTP error body, a one-line issue title.
    if line.level is not None or len(text) > MAX_PLAIN_ERROR_CHARS or _is_structural(text):
        return False
    return _said(_ERRORISH, text)


# --- the per-stream state machine -----------------------------------------------------


@dataclass
class _Sink:
    """What the streams found, each item tagged with the index of its first line."""

    exceptions: list[tuple[int, RaisedException]] = field(default_factory=list)
    kernel_assertions: list[tuple[int, str]] = field(default_factory=list)
    error_lines: list[tuple[int, str]] = field(default_factory=list)
    warnings: list[tuple[int, str]] = field(default_factory=list)
    truncated: bool = False


_IDLE, _FRAMES, _MESSAGE = "idle", "frames", "message"


@dataclass
class _Dump:
    """A thread's calls being read, innermost first: faulthandler's or Go's."""

    start: int
    crashed: bool  # the thread that crashed, or a dump of the only one
    go: bool = False
    spy: bool = False  # py-spy's dump
    frames: list[Frame] = field(default_factory=list)
    call: str | None = None  # Go: the call whose place comes on the next line


@dataclass
class _Crash:
    """A fatal error line kept among the sink's error lines, as what it names."""

    line: tuple[int, str]
    type: str
    what: str


@dataclass
class _Stream:
    """Reads the lines of one rank/process, one at a time."""

    sink: _Sink
    state: str = _IDLE
    start: int = 0
    frames: list[Frame] = field(default_factory=list)
    awaiting_code: bool = False
    notebook: bool = False  # the frames are IPython's: numbered source lines follow each
    after_code: bool = False  # the last line read was a frame's source line
    noise: int = 0
    exc_type: str = ""
    wraps: str = ""
    message: list[str] = field(default_factory=list)
    exc_style: tuple[bool, str | None, str | None] = (False, None, None)
    # A Python warning just read that ends in a colon (its place among the sink's warnings,
    # its line's prefix): its message goes on over the next unindented lines, before the
    # indented source line.
    warned: tuple[int, tuple[bool, str | None, str | None]] | None = None
    # The margin of the traceback being read: one quoted as an indented block (Markdown,
    # a mail) or printed inside another tool's output (pip's "[N lines of output]") has
    # its exception line there, where an unindented log line would stand.
    indent: str = ""
    boxed: bool = False  # inside rich's box of frames
    box_function: bool = False  # the last boxed frame's function is on the next line
    frames_indented: bool = False  # the last frame line was printed indented, as Python does
    # Reading a faulthandler dump: its frames come innermost first; None when not.
    dump: _Dump | None = None
    # The last "Fatal Python error: ..." or Go "panic: ..." line: the crash the dump that
    # follows shows the place of.
    crash: _Crash | None = None
    # Reading pytest's report of a failed test: the function whose source was shown last.
    pytest: bool = False
    pytest_function: str = ""

    def feed(self, line: _Line) -> None:
        if self.warned is not None and self._continues_warning(line):
            return
        if self.dump is not None and self._feed_dump(line):
            return
        if _PYTEST_SECTION.match(line.text):
            self.pytest = True
            return
        text = line.text
        starts = self.pytest or _PYTEST_TEST.match(text)
        if (starts or ((place := _PYTEST_PLACE.match(text)) and place["raised"])) and (
            self._feed_pytest(line)
        ):
            return
        if self.indent and self.state != _IDLE and line.text.startswith(self.indent):
            line = replace(line, text=line.text[len(self.indent) :])
        if self.state == _MESSAGE:
            if self._continues_message(line):
                self.message.append(line.text.strip())
                return
            self._close_exception()
        if self.boxed and self._feed_box(line):
            return
        if self.state == _FRAMES and self._feed_frames(line):
            return
        self._feed_idle(line)

    def finish(self) -> None:
        # A paste may end on a dump's last frame, with no line after it to close it.
        if self.dump is not None:
            self._close_dump(self.dump)
        if self.state == _MESSAGE:
            self._close_exception()
        elif self.state == _FRAMES:
            self._close_untyped()

    # idle: between tracebacks

    def _feed_idle(self, line: _Line) -> None:
        text = line.text
        if _HEADER in text or _NOTEBOOK_HEADER.match(text):
            self._open_frames(line.index, _margin(text))
        elif _BOX_HEADER.match(text):
            self._open_frames(line.index)
            self.boxed = True
        elif panic := _RUST_PANIC.match(text):
            self._open_panic(line, panic)
        elif dump := _DUMP_HEADER.match(text):
            self.dump = _Dump(line.index, crashed=bool(dump["crashed"]))
        elif spy := _SPY_HEADER.match(text):
            self.dump = _Dump(line.index, crashed=spy["name"] == _SPY_MAIN, spy=True)
        elif self.crash and self.crash.type == GO_PANIC and _GO_HEADER.match(text):
            self.dump = _Dump(line.index, crashed=True, go=True)
        elif frame := _frame_of(text):
            self.sink.truncated = True  # the paste starts inside a traceback
            # Python indents a frame two spaces under its header.
            self._open_frames(line.index, _margin(text)[:-2] if text.startswith("  ") else "")
            self._add_frame(frame)
        elif exc := self._frameless_exception(line):
            self._open_exception(line, *exc)
        else:
            self._collect(line)

    @staticmethod
    def _frameless_exception(line: _Line) -> tuple[str, str, str] | None:
        # "ValueError: ..." logged on its own; a WARNING that quotes one is still a warning.
        if line.level in ("INFO", "DEBUG", "WARNING"):
            return None
        return _exception_line(line.text, strict=True)

    def _collect(self, line: _Line) -> bool:
        """Keep kernel assertions, error lines and telling warnings; True if kept."""
        if assertion := kernel_assertion_of(line.text):
            self.sink.kernel_assertions.append((line.index, assertion))
        elif (said := error_body_message(line.text)) is not None:
            self.sink.error_lines.append((line.index, said))
        elif warning := _warning_of(line):
            self.sink.warnings.append((line.index, warning))
            if _PY_WARNING.match(line.text.strip()) and warning.endswith(":"):
                self.warned = (len(self.sink.warnings) - 1, line.style)
        elif _is_error_line(line) and not _exception_line(line.text, strict=True):
            self.sink.error_lines.append((line.index, line.text.strip()))
            self._note_crash(self.sink.error_lines[-1])
        elif _CARETS.match(line.text) and "^" in line.text and self._kept_just_before(line):
            # Node and compilers show the failing source line with a marker under it: the
            # line above was code ("triggerUncaughtException(err, true);"), not an error.
            self.sink.error_lines.pop()
        else:
            return False
        return True

    def _kept_just_before(self, line: _Line) -> bool:
        return bool(self.sink.error_lines) and self.sink.error_lines[-1][0] == line.index - 1

    def _continues_warning(self, line: _Line) -> bool:
        """Python prints a warning as "file.py:12: Category: message", the message's
        further lines as they are, then the warning's source line indented by two spaces:
        any other line after a warning, printed alike, goes on with its message (PyTorch's
        capability warning indents its lines by four). True if taken."""
        assert self.warned is not None
        (place, style), self.warned = self.warned, None
        text = line.text
        if not text.strip() or _WARNING_SOURCE.match(text) or line.style != style:
            return False
        if _is_structural(text) or _exception_line(text, strict=True) or _warning_of(line):
            return False
        index, warning = self.sink.warnings[place]
        self.sink.warnings[place] = (index, f"{warning} {text.strip()}")
        self.warned = (place, style)
        return True

    def _open_panic(self, line: _Line, panic: re.Match[str]) -> None:
        """A Rust panic (SGLang's router and gateway are Rust): where it panicked is its
        frame; its message follows on the next line, or sits in quotes before Rust 1.73."""
        path = panic["path"]
        self._open_exception(line, PANIC, (panic["quoted"] or "").strip())
        self.frames = [Frame(path, module_of(path), int(panic["lineno"]), "")]

    # pytest's report of a failed test

    def _feed_pytest(self, line: _Line) -> bool:
        """Take a line of pytest's report that no other reader knows; False for others."""
        text = line.text
        if _PYTEST_TEST.match(text):
            self.finish()
            self.pytest, self.pytest_function = True, ""
            return True
        if _PYTEST_DIVIDER.match(text):
            return True
        if (place := _PYTEST_PLACE.match(text)) and not _PYTEST_CALL.match(text):
            self._pytest_place(line, place)
            return True
        if self.state == _MESSAGE or not text[:1].isspace():
            return False
        if self.state == _FRAMES and self.awaiting_code:
            return False  # a short entry's line that ran
        if found := _PYTEST_DEF.match(text):
            self.pytest_function = found["func"]
        return True  # a line of the function's source: no error of its own

    def _pytest_place(self, line: _Line, place: re.Match[str]) -> None:
        """ "path.py:12: " after a function's source: where it called the next entry; with
        the exception's name, where the exception printed above was raised."""
        path = place["path"]
        frame = Frame(path, module_of(path), int(place["lineno"]), self.pytest_function)
        self.pytest_function = ""
        if self.state == _MESSAGE:
            self._close_exception()
        if place["raised"]:
            self._raised_at(frame, place["raised"])
            return
        if self.state == _IDLE:
            self._open_frames(line.index)
        self.frames.append(frame)
        self.awaiting_code = self.after_code = False

    def _raised_at(self, frame: Frame, raised: str) -> None:
        if not self.sink.exceptions:
            return
        index, exc = self.sink.exceptions[-1]
        same_type = exc.type.rsplit(".", 1)[-1] == raised.rsplit(".", 1)[-1]
        place = (frame.path, frame.lineno)
        if same_type and not (exc.frames and (exc.frames[-1].path, exc.frames[-1].lineno) == place):
            self.sink.exceptions[-1] = (
                index,
                replace(exc, frames=(*exc.frames, frame)[-MAX_FRAMES:]),
            )

    # rich's box of frames: "╭─── Traceback (most recent call last) ───╮"

    def _feed_box(self, line: _Line) -> bool:
        """Take a line of rich's box; False when it is none (the box was cut short)."""
        text = line.text.strip()
        if text.startswith("╰"):
            self.boxed = False  # the exception line comes next, as after Python's frames
            return True
        if not text.startswith(_BOX_SIDE):
            self.boxed = False
            return False
        inner = text[1:].removesuffix(_BOX_SIDE).rstrip()
        if not inner.strip() or _BOX_INNER.match(inner):
            return True  # source lines around the one that ran, locals, hidden frames
        if self.box_function and self.frames:
            self.box_function = False
            function = inner.strip().removeprefix("in ").strip()
            if function and " " not in function:
                self.frames[-1] = replace(self.frames[-1], function=function)
                return True
        if frame := _BOX_FRAME.match(inner):
            path = frame["path"].strip()
            function = frame["func"] or ""
            self.frames.append(Frame(path, module_of(path), int(frame["lineno"]), function))
            self.box_function = not function
            if len(self.frames) > MAX_FRAMES:
                del self.frames[0]
        elif (ran := _BOX_RAN.match(inner)) and self.frames:
            code = ran["code"].lstrip(" " + _BOX_SIDE).strip()
            self.frames[-1] = replace(self.frames[-1], code=code)
        return True

    # a crash's thread dump: faulthandler's "Current thread 0x... (most recent call first):",
    # Go's "goroutine 1 [running]:"

    def _note_crash(self, kept: tuple[int, str]) -> None:
        for pattern, crash_type in _CRASHES:
            if said := pattern.match(kept[1]):
                self.crash = _Crash(kept, crash_type, said["what"].strip())

    def _feed_dump(self, line: _Line) -> bool:
        """Take a line of the thread dump being read; False when it ended before it."""
        dump = self.dump
        assert dump is not None
        text = line.text
        if dump.go and self._feed_go_call(dump, text):
            return True
        if dump.spy and (frame := _SPY_FRAME.match(text)):
            path = frame["path"]
            # py-spy names a file from the sys.path entry it was imported from (unless
            # --full-filenames): "concurrent/futures/_base.py" is the module already.
            module = module_of(path) if path.startswith(("/", "\\")) or ":" in path else path
            if "/" not in module and module.removesuffix(".py") in sys.stdlib_module_names:
                path = module = STDLIB_SHORTENED + module  # its directory is the stdlib's
            # py-spy names a method by its class too ("Pool._terminate_pool"); a traceback
            # and faulthandler print the function's own name.
            function = frame["func"].rsplit(".", 1)[-1]
            dump.frames.append(Frame(path, module, int(frame["lineno"]), function))
            return True
        if dump.spy and dump.frames and text.startswith(_SPY_LOCALS):
            return True
        if not dump.go and (frame := _DUMP_FRAME.match(text)):
            path = frame["path"]
            function = frame["func"].strip()
            dump.frames.append(Frame(path, module_of(path), int(frame["lineno"]), function))
            return True
        if text.strip() == _DUMP_NO_FRAME:
            return True
        self._close_dump(dump)
        return False

    def _close_dump(self, dump: _Dump) -> None:
        """The crash the dump read, raised from its crashed thread's frames."""
        self.dump = None
        frames = [f for f in dump.frames if not (dump.go and _GO_RUNTIME.match(f.function))]
        if dump.crashed and frames:
            innermost_last = tuple(reversed(frames[:MAX_FRAMES]))
            self.sink.exceptions.append((dump.start, self._crash_at(innermost_last, dump.go)))

    @staticmethod
    def _feed_go_call(dump: _Dump, text: str) -> bool:
        """A Go call's line, or its place on the next; named by its package, which says
        where the code is wherever it was built."""
        if dump.call is not None and (place := _GO_PLACE.match(text)):
            package, _, function = dump.call.rpartition("/")
            package_tail, _, function = function.partition(".")
            package = f"{package}/{package_tail}" if package else package_tail
            module = f"{package}/{place['path'].rsplit('/', 1)[-1]}"
            dump.frames.append(Frame(place["path"], module, int(place["lineno"]), function))
            dump.call = None
            return True
        if text[:1].isspace() or not (call := _GO_CALL.fullmatch(text.strip())):
            return False
        dump.call = call["func"]
        return True

    def _crash_at(self, frames: tuple[Frame, ...], go: bool) -> RaisedException:
        """The fatal error printed before the dump, raised from the crashed thread's frames."""
        crash, self.crash = self.crash, None
        if crash is None or crash.line not in self.sink.error_lines:
            return RaisedException("", "", frames, dumped=True)  # on demand, on a timeout
        if (crash.type == GO_PANIC) != go:
            return RaisedException("", "", frames, dumped=True)  # another program's crash
        self.sink.error_lines.remove(crash.line)
        return RaisedException(crash.type, crash.what, frames)

    # frames: inside "Traceback (most recent call last):"

    def _open_frames(self, index: int, indent: str = "") -> None:
        self.state, self.start, self.frames, self.noise = _FRAMES, index, [], 0
        self.indent = indent
        self.notebook = False
        self.awaiting_code = self.after_code = False

    def _add_frame(self, match: re.Match[str]) -> None:
        self.frames_indented = match.string[:1].isspace()
        path = match["path"]
        function = (match["func"] or "").strip()
        self.frames.append(Frame(path, module_of(path), int(match["lineno"]), function))
        self.notebook = match.re is _NOTEBOOK_FRAME
        if len(self.frames) > MAX_FRAMES:
            del self.frames[0]
        self.awaiting_code = True

    def _feed_frames(self, line: _Line) -> bool:
        """Consume a line inside a traceback; False hands it back to the idle reader."""
        text = line.text
        if frame := _frame_of(text):
            self._add_frame(frame)
        elif self.notebook and (source := _NOTEBOOK_SOURCE.match(text)):
            if source["arrow"] and self.awaiting_code and source["code"]:
                self._set_code(source["code"].strip())  # the line that ran
            return True  # the source lines IPython shows around it
        elif _NOTEBOOK_CELL.match(text):
            pass  # the notebook cell that made the call: no module to name
        elif _HEADER in text or _CHAIN.match(text):
            self._close_untyped()  # a traceback with no exception line: it was cut
            return _HEADER not in text
        elif not text.strip() or _CARETS.match(text) or _REPEATED.match(text):
            pass
        elif _CLIPPED.match(text):
            self.sink.truncated = True
        elif exc := _exception_line(text, strict=False):
            self._open_exception(line, *exc)
        elif self.awaiting_code and self._may_be_code(text) and not kernel_assertion_of(text):
            # (A kernel's assert lands anywhere in a log, also after a frame printed
            # without its source line; it is never that line.)
            self._set_code(text.strip())
            return True
        elif self.after_code and not self.noise and _untyped_message(line):
            # Python prints the exception right after the last frame; a paste that lost
            # its "Type: " (an extension's exception, a clipped copy) still has the message.
            self._open_exception(line, "", text.strip())
        else:
            return self._feed_noise(line)
        self.after_code = False
        return True

    def _may_be_code(self, text: str) -> bool:
        """Python indents a frame's source line under its "File" line: where the frames are
        indented, an unindented line is another writer's (a prompt, a print) that landed
        between a frame and its source line. A paste that lost its indents has none."""
        return text[:1].isspace() or not self.frames_indented

    def _set_code(self, code: str) -> None:
        self.frames[-1] = replace(self.frames[-1], code=code)
        self.awaiting_code = False
        self.after_code = True

    def _feed_noise(self, line: _Line) -> bool:
        # Another process's lines can land inside a traceback; keep what matters in them.
        self._collect(line)
        self.noise += 1
        if self.noise > MAX_NOISE_IN_FRAMES:
            self._close_untyped()
        return True

    def _close_untyped(self) -> None:
        self.sink.truncated = True
        if self.frames:
            self.sink.exceptions.append((self.start, RaisedException("", "", tuple(self.frames))))
        self.state, self.frames = _IDLE, []

    # message: the exception line and its continuation lines

    def _open_exception(self, line: _Line, exc_type: str, message: str, wraps: str = "") -> None:
        if self.state != _FRAMES:
            self.start, self.frames, self.indent = line.index, [], ""
        self.state, self.exc_type, self.message = _MESSAGE, exc_type, [message]
        self.wraps = wraps
        self.exc_style = line.style

    def _continues_message(self, line: _Line) -> bool:
        text = line.text
        if not text.strip() or line.style != self.exc_style:
            return False
        if len(self.message) >= MAX_MESSAGE_LINES or _is_structural(text):
            return False
        if kernel_assertion_of(text) or _strong_error(text) or text.strip() == _OUTPUT_END:
            return False
        if self.exc_type == PANIC and text.startswith(_RUST_NOTE):
            return False  # the runtime's hint after a panic, not what panicked
        return _exception_line(text, strict=True) is None

    def _close_exception(self) -> None:
        message = "\n".join(self.message).strip()
        exc = RaisedException(self.exc_type, message, tuple(self.frames), wraps=self.wraps)
        self.sink.exceptions.append((self.start, exc))
        self.state, self.frames, self.message = _IDLE, [], []


# --- merging streams ------------------------------------------------------------------

_DIGITS = re.compile(r"\d+")


def _dedupe_key(text: str) -> str:
    # Ranks differ only in numbers ("GPU 3", "Rank 5", pids); compare without them.
    return " ".join(_DIGITS.sub("#", text.lower()).split())


def _unique_texts(items: list[tuple[int, str]]) -> tuple[str, ...]:
    seen: set[str] = set()
    kept: list[str] = []
    for _, text in sorted(items, key=lambda item: item[0]):
        key = _dedupe_key(text)
        if key not in seen and len(kept) < MAX_COLLECTED:
            seen.add(key)
            kept.append(text)
    return tuple(kept)


def _exception_key(exc: RaisedException) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    frames = tuple((f.module, f.function) for f in exc.frames)
    return exc.type.rsplit(".", 1)[-1], _dedupe_key(exc.message[:300]), frames


def _unique_exceptions(items: list[tuple[int, RaisedException]]) -> tuple[RaisedException, ...]:
    seen: set[tuple[str, str, tuple[tuple[str, str], ...]]] = set()
    unique: list[RaisedException] = []
    for _, exc in sorted(items, key=lambda item: item[0]):
        if (key := _exception_key(exc)) not in seen:
            seen.add(key)
            unique.append(exc)
    framed = [exc for exc in unique if exc.type and exc.frames]
    return tuple(exc for exc in unique if not _repeats_framed(exc, framed))


def _repeats_framed(exc: RaisedException, framed: list[RaisedException]) -> bool:
    """A log line repeating a traceback's last line, or a cut copy of a full traceback."""
    if exc.type and not exc.frames:
        key = _exception_key(exc)[:2]
        return any(_exception_key(other)[:2] == key for other in framed)
    if not exc.type:
        mine = {(f.module, f.function) for f in exc.frames}
        return any(mine <= {(f.module, f.function) for f in other.frames} for other in framed)
    return False


def _rank_order(rank: str) -> tuple[str, int]:
    digits = _DIGITS.search(rank)
    return rank.rstrip("0123456789"), int(digits.group()) if digits else -1


_ERRORISH = re.compile(
    r"error|fail|assert|exception|abort|fatal|killed|invalid|unsupported|not supported|cannot"
    r"|can't|u(?<=\bu)nable|denied|time(?:d)? ?out|crash|n(?<=\bn)an\b|i(?<=\bi)nf\b"
    r"|o(?<=\bo)om\b|out of memory|illegal|segfault|mismatch|not found|no such|refused"
    r"|h(?<=\bh)ang(?:s|ing)?\b|undefined|could not|couldn.t|exceed"
)  # lowercase, searched with `_said`; `n(?<=\bn)an` is `\bnan`, see _STRONG_ERROR. Words that
# sit inside others start at a word: "hang" in "change" made "What should I change?" a
# paste's error; "unable" is in "tunable" (PyTorch's TunableOp). "killed" may follow "OOM".
MAX_SHORT_PASTE_LINES = 5
_CHATTY_LEVELS = ("INFO", "DEBUG", "TRACE")


def _short_paste_errors(lines: list[_Line]) -> list[tuple[int, str]]:
    """For a paste of a few lines with no recognised error: its error-sounding lines, or else
    its plain lines (no log prefix): a message copied alone, an issue title."""
    filled = [line for line in lines if line.text.strip()]
    if len(filled) > MAX_SHORT_PASTE_LINES:
        return []
    found = [(line.index, line.text.strip()) for line in filled if _said(_ERRORISH, line.text)]
    if found:
        return found
    plain = [
        (line.index, line.text.strip()) for line in filled if line.style == (False, None, None)
    ]
    if plain or len(filled) != 1 or filled[0].level in _CHATTY_LEVELS:
        return plain
    # One line copied alone with its clock or host: the line is what was asked about. (Of
    # more lines, clocked ones without a level may be a server's INFO: SGLang's are so.)
    return [(filled[0].index, filled[0].text.strip())]


def _context_lines(lines: list[_Line]) -> tuple[str, ...]:
    """The last MAX_CONTEXT_LINES distinct non-empty lines, in printed order."""
    seen: set[str] = set()
    kept: list[str] = []
    for line in reversed(lines):
        text = line.text.strip()
        if not text:
            continue
        key = _dedupe_key(text)
        if key not in seen:
            seen.add(key)
            kept.append(text)
            if len(kept) >= MAX_CONTEXT_LINES:
                break
    return tuple(reversed(kept))


def parse(text: str) -> ParsedTraceback:
    """Parse a pasted log or traceback. Raises InputRejected for unusable input."""
    _check_input(text)
    physical, cut = _physical_lines(text)
    lines = _logical_lines(physical)
    sink = _Sink(truncated=cut)
    streams: dict[str, _Stream] = {}
    for line in lines:
        streams.setdefault(line.stream, _Stream(sink)).feed(line)
    for stream in streams.values():
        stream.finish()
    plain_fallback = False
    if not (sink.exceptions or sink.kernel_assertions or sink.error_lines or sink.warnings):
        sink.error_lines = _short_paste_errors(lines)
        plain_fallback = not any(_said(_ERRORISH, text) for _, text in sink.error_lines)
    ranks = {line.rank for line in lines if line.rank}
    # What an error body inside a line says is an error line of its own: the same
    # message answered by another client arrives with other keys around it.
    said = [exc.message.split("\n", 1)[0] for _, exc in sink.exceptions]
    said += [text for _, text in sink.error_lines]
    # So is an error another one quotes: the error it caught.
    whole = [*(exc.message for _, exc in sink.exceptions), *said[len(sink.exceptions) :]]
    for (index, _), text, message in zip(
        [*sink.exceptions, *sink.error_lines], said, whole, strict=True
    ):
        if (inner := inline_body_message(text)) is not None:
            sink.error_lines.append((index, inner))
        elif (quoted := quoted_error_message(message)) is not None:
            sink.error_lines.append((index, quoted))
    return ParsedTraceback(
        context=_context_lines(lines),
        exceptions=_unique_exceptions(sink.exceptions),
        kernel_assertions=_unique_texts(sink.kernel_assertions),
        error_lines=_unique_texts(sink.error_lines),
        warnings=_unique_texts(sink.warnings),
        ranks=tuple(sorted(ranks, key=_rank_order)),
        truncated=sink.truncated,
        plain_fallback=plain_fallback and bool(sink.error_lines),
    )


def is_python_warning(line: str) -> bool:
    """ "file.py:12: UserWarning: ...", as Python's warnings module prints one."""
    return _PY_WARNING.match(line.strip()) is not None


def holds_error(text: str) -> bool:
    """Does `text` hold an error (rather than a command, a config or prose)?"""
    try:
        parsed = parse(text)
    except InputRejected:
        return False
    found = parsed.exceptions or parsed.kernel_assertions or parsed.error_lines
    return bool(found) and not parsed.plain_fallback
