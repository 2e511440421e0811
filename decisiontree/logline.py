"""Log lines: what a logger puts before the message, and terminal colour.

One place for the shapes of log lines that people paste and write down: SGLang,
vLLM, Ray and torchrun prefixes, glog/c10, ISO timestamps, `logging` formats,
docker compose (`sglang-1  | `), kubectl, syslog, dmesg, NCCL. The paste parser
(`decisiontree.traceback`), the write-up reader (`decisiontree.documents.samples`)
and the context reader all strip the same prefixes, so a traceback reads the same
pasted alone or inside a write-up.

- `strip_ansi(text)`: colour and cursor codes off;
- `html_unescaped(text)`: HTML's escapes of quotes and angle brackets undone;
- `last_overwrite(line)`: what a terminal showed of a line redrawn with "\r";
- `split_prefix(line)`: (message, what the prefixes said: time, level, rank, process);
- `strip_prefix(line)` / `has_prefix(line)`: the message alone / was there a prefix?
- `unquoted(line)`: without the quote marks of a Markdown or e-mail quote (`> `);
- `record_lines(line)`: a log collector's JSON record (docker's json-file, a structured
  logger, a cloud log export) as the lines its program printed;
- `logfmt_lines(line)`: the same of a Go program's logfmt record (`level=error msg="..."`);
- `escaped_lines(line)`: a traceback escaped into one line (a JSON body, a repr) as lines;
- `framework_of_log(text)`: whose log it is, vLLM's or SGLang's, by its lines' shape.
"""

from __future__ import annotations

import functools
import html
import json
import re
from dataclasses import dataclass

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
MAX_STACKED = 6  # "(VllmWorker rank=2 pid=9) ERROR 02-19 00:08:10 [core.py:1] ..." stacks three


def strip_ansi(text: str) -> str:
    """Text without terminal colour and cursor codes."""
    return ANSI.sub("", text) if "\x1b" in text else text


# A copy of a web page's source, a ticket's or a mail's HTML export: the quotes and angle
# brackets a program printed arrive as entities ('File &quot;x.py&quot;', '&lt;module&gt;').
_HTML_ESCAPES = ("&quot;", "&#39;", "&#x27;", "&lt;", "&gt;")


def html_unescaped(text: str) -> str:
    """Text as the program printed it, where it arrived with HTML's escapes."""
    return html.unescape(text) if any(escape in text for escape in _HTML_ESCAPES) else text


def last_overwrite(line: str) -> str:
    """A progress bar redraws with "\r": the terminal showed only the last segment."""
    if "\r" not in line:
        return line
    segments = [s for s in line.split("\r") if s.strip()]
    return segments[-1] if segments else ""


# Markdown and e-mail quote marks, nested or not (">>" too, as Markdown reads it). A ">"
# must be followed by a space, another ">" or the line's end, so C++'s ">::type" stays.
QUOTE_MARKS = re.compile(r"[ \t]{0,3}(?:>(?=[\s>]|$)[ \t]?)+")
_LEVELS = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
# A date written with "-" or, as Go's log package and many logging configs do, "/".
_TS = r"\d{4}(?:-\d\d-\d\d|/\d\d/\d\d)[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_LEVEL_START = "DIWECF"
# vLLM's logger: the level, the month and day without a year, the clock
# (vllm/logger.py's format and date format).
_VLLM_STAMP = rf"(?P<lvl>{_LEVELS}) +\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? +"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Each pattern is anchored at the start and listed with the characters it can
# start with ("" = any word character), so most lines try only a few. They are
# applied repeatedly because prefixes stack:
# "(VllmWorker rank=2 pid=9) ERROR 02-19 00:08:10 [core.py:1] ...".
# The daemons whose lines Ray's log monitor relays, named before each line.
_RAY_DAEMONS = "raylet|gcs_server|dashboard_agent|monitor|autoscaler"
_PREFIXES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # gunicorn's error log and logging configs like it: the stamp (gunicorn's with its zone
    # after a space), the process id, the level, each in brackets:
    # [2026-02-19 00:08:10 +0000] [7] [ERROR]
    (
        "[",
        re.compile(rf"\[(?P<ts>{_TS})(?: [+-]\d{{4}})?\] (?:\[\d+\] )?\[(?P<lvl>{_LEVELS})\] ?"),
    ),
    # SGLang: [2026-02-19 00:08:10 TP3] / [2026-02-19 00:08:10 DP0 TP3 EP3]
    ("[", re.compile(rf"\[(?P<ts>{_TS})(?P<tags>(?: [A-Z]{{2,4}}\d+)*)\] ?")),
    # A clock alone, or with a date, in brackets: [09:14:03], rich's [02/10/26 09:14:03],
    # TensorRT's [02/10/2026-09:14:03]
    (
        "[",
        re.compile(r"\[(?P<ts>(?:\d{2,4}[/-]\d\d[/-]\d{2,4}[ T-])?\d\d:\d\d:\d\d(?:[.,]\d+)?)\] ?"),
    ),
    # vLLM / Ray process tags: (VllmWorker rank=2 pid=1234) (EngineCore_DP0 pid=77)
    (
        "(",
        re.compile(
            r"\((?:(?P<proc>[A-Za-z_][\w.-]*(?: [A-Za-z_][\w.-]*)?) )?"
            r"(?:rank=(?P<rank>\d+) )?pid=\d+(?:, ip=[\w.:]+)?\) ?"
        ),
    ),
    # Ray's log monitor names the daemon a line came from: (raylet), (gcs_server)
    ("(", re.compile(rf"\((?P<proc>{_RAY_DAEMONS})\) ?")),
    # Ray's own C++ log (raylet, gcs_server): [2026-12-06 10:00:00,123 E 1234 1234] x.cc:30:
    # (the log monitor may name the daemon again before the place)
    (
        "[",
        re.compile(
            r"\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (?P<ray>[TDIWEC]) \d+ \d+\] ?"
            rf"(?:\((?:{_RAY_DAEMONS})\) )?(?:(?P<src>[\w./-]+\.(?:cc|cpp|h):\d+): ?)?"
        ),
    ),
    ("[", re.compile(r"\[rank(?P<rank>\d+)\]: ?")),  # torchrun
    ("[", re.compile(rf"\[(?P<lvl>{_LEVELS})\] ?")),  # a level in brackets: [ERROR]
    # A library's name, then its level: TensorRT's "[TRT] [E] ", TensorRT-LLM's
    # "[TensorRT-LLM][ERROR] ". The name stays in the message (split_prefix): it is often
    # the only word of the line that says which library is speaking.
    (
        "[",
        re.compile(
            r"\[(?P<named>[A-Za-z][\w.-]{0,40})\] ?"
            rf"\[(?P<tag_lvl>[VIWEF]|{_LEVELS}|VERBOSE|TRACE)\] ?"
        ),
    ),
    # torchrun --tee / torchelastic: the role and the local rank, [default0]: / [trainer3]:
    ("[", re.compile(r"\[(?P<proc>[A-Za-z_][A-Za-z_-]*?)(?P<rank>\d+)\]: ?")),
    # Open MPI's mpirun --tag-output: [job,rank]<stderr>:
    ("[", re.compile(r"\[\d+,(?P<rank>\d+)\]<std(?:out|err)>: ?")),
    # vLLM: INFO 02-19 00:08:10 [core.py:123]
    (_LEVEL_START, re.compile(rf"{_VLLM_STAMP}(?P<src>\[?[\w./-]+:\d+\]?) ?")),
    # SGLang: WARNING server_args.py:1177:
    (_LEVEL_START, re.compile(rf"(?P<lvl>{_LEVELS}) (?P<src>[\w./-]+\.py:\d+): ?")),
    # c10 / glog: [W219 00:08:10.123456789 ProcessGroupNCCL.cpp:1496] / E0219 00:08:10.1 42 x.cc:9]
    (
        "[IWEF",
        re.compile(
            r"\[?(?P<glog>[IWEF])\d{3,4} \d\d:\d\d:\d\d\.\d+ (?:\d+ )?(?P<src>[\w./-]+:\d+)\] ?"
        ),
    ),
    # glog without its clock, as older PyTorch's c10d prints it: [W socket.cpp:464]
    ("[", re.compile(r"\[(?P<glog>[IWEF]) (?P<src>[\w./-]+:\d+)\] ?")),
    # A vLLM line whose level and time were cut off in the copy: [multiproc_executor.py:492]
    ("[", re.compile(r"\[(?P<src>[\w.-]+\.(?:py|cc|cpp|cu|h|rs|go):\d+)\] ")),
    # loguru's place after its level: "app.llm:ask_tool:260 - "
    ("", re.compile(r"(?P<src>[\w.]+:[\w<>]+:\d+) - ")),
    # A command-line tool's "Error: " before the exception it caught (click, anyhow)
    ("E", re.compile(r"(?P<lvl>Error): (?=(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\b)")),
    # Go's logrus in text form (dockerd, containerd, the NVIDIA container toolkit): ERRO[0000]
    ("DIWEFP", re.compile(r"(?P<logrus>DEBU|INFO|WARN|ERRO|FATA|PANI)\[\d+\] ?")),
    # rsyslog's RFC 3339 stamp (Debian and Ubuntu's /var/log/syslog), journalctl -o short-iso:
    # 2026-02-19T00:08:10.123456+00:00 host vllm[4242]: / ... host kernel:
    (
        "0123456789",
        re.compile(rf"(?P<ts>{_TS}) [\w.-]+ (?:[\w./-]+\[\d+\]|kernel): ?"),
    ),
    # Kubernetes' node log (CRI): 2026-02-19T00:08:10.123456789Z stderr F
    ("0123456789", re.compile(rf"(?P<ts>{_TS}) (?:stdout|stderr) [FP] ")),
    # ISO / logging: "<ts> | msg", "<ts> - msg", "<ts>  ERROR msg"; a line's own indent
    # after "<ts> " stays (docker logs -t and kubectl --timestamps put one space).
    (
        "0123456789",
        re.compile(rf"(?P<ts>{_TS})(?: *(?:[|:]|-(?= )) ?| ?(?: +(?=(?:{_LEVELS})\b))?)"),
    ),
    ("", re.compile(rf"[\w.]+ +- +(?P<lvl>{_LEVELS}) +- ?")),  # "name - ERROR - "
    # ERROR:root: / INFO:     / ERROR | / ERROR
    (_LEVEL_START, re.compile(rf"(?P<lvl>{_LEVELS})(?::[\w.]*:| *[|-] +|: +| +)")),
    ("", re.compile(r"[\w.-]*[-_]\d+ +\| ?")),  # docker compose: sglang-1  |
    ("[", re.compile(r"\[pod/[^\]\s]+\] ?")),  # kubectl logs --prefix
    # docker build's plain progress (BuildKit): the step's number and its clock in seconds,
    # "#8 45.67 ", or the number alone before the step's own words, "#8 ERROR: ". A clock's
    # one space: the program's indent after it stays.
    (
        "#",
        re.compile(
            r"#\d{1,4} (?:\d{1,6}\.\d{1,3}(?: |$)|(?=(?:ERROR|DONE|CACHED|CANCELED)\b|\[\d))"
        ),
    ),
    # syslog / journald: Feb 19 00:08:10 host kernel:
    (_UPPER, re.compile(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [\w./-]+(?:\[\d+\])?: ?")),
    ("[", re.compile(r"\[ *\d+\.\d+\] ?")),  # dmesg
    # dmesg -T: [Mon Dec  1 10:22:31 2026]
    ("[", re.compile(r"\[(?P<ts>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\] ?")),
    (">", QUOTE_MARKS),  # a log quoted in an issue or a mail: "> > Traceback ..."
    ("E", re.compile(r"E {3,}(?=\S)")),  # pytest's failure lines: "E       RuntimeError: ..."
    ("", re.compile(r"[\w.-]+:\d+:\d+ \[(?P<dev>\d+)\] (?=NCCL )")),  # NCCL: host:pid:tid [3]
    # Rust's tracing (TGI's router and launcher): the spans an event was logged in, one with
    # its fields at least, "warmup{max_batch_size=None}:warmup: ", and after them the
    # target and place, "text_generation_client: router/client/src/lib.rs:33: " (the
    # target stays in the message, as a library's name does).
    (
        "",
        re.compile(
            r"(?:[A-Za-z_]\w*:){0,4}"
            r"(?:[A-Za-z_]\w*\{[^{}\n]{0,400}\}:(?:[A-Za-z_]\w*:)*)+ ?"
        ),
    ),
    ("", re.compile(r"(?P<named>[a-z_]\w*(?:::\w+)*): (?P<src>[\w./-]+\.rs:\d+): ")),
)


@functools.lru_cache(maxsize=512)
def _prefixes_for(first: str) -> tuple[re.Pattern[str], ...]:
    word = first.isalnum() or first in "_.-"
    return tuple(p for starts, p in _PREFIXES if first in starts or (word and not starts))


_GLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}
_RAY_LEVELS = {
    "T": "TRACE",
    "D": "DEBUG",
    "I": "INFO",
    "W": "WARNING",
    "E": "ERROR",
    "C": "CRITICAL",
}
_LOGRUS_LEVELS = {
    "DEBU": "DEBUG", "INFO": "INFO", "WARN": "WARNING", "ERRO": "ERROR", "FATA": "FATAL",
    "PANI": "FATAL",
}  # fmt: skip
# Ray folds a line its workers all printed into one, marked at its end: not the message.
_REPEATED_ON_CLUSTER = "across cluster]"
_REPEATED_SUFFIX = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
_TAG_LEVELS = {"V": "DEBUG", "VERBOSE": "DEBUG", "TRACE": "DEBUG", **_GLOG_LEVELS}
_TP_TAG = re.compile(r"\bTP(\d+)\b|_TP(\d+)")


@dataclass
class Prefix:
    """What the prefixes before a message said."""

    stamped: bool = False  # a time or a level: a logger wrote the line
    level: str | None = None  # INFO, WARNING, ERROR, ...
    source: str | None = None  # "server_args.py:1177"
    rank: str | None = None  # "TP3", "rank2"
    proc: str | None = None  # "VllmWorker", "EngineCore_DP0"


def split_prefix(line: str) -> tuple[str, Prefix]:
    """The message of a log line and what its (stacked) prefixes said."""
    found = Prefix()
    for _ in range(MAX_STACKED):
        match = _first_prefix(line)
        if match is None:
            break
        _note_prefix(found, match.groupdict())
        named = match.groupdict().get("named")
        line = f"[{named}] {line[match.end() :]}" if named else line[match.end() :]
    if _REPEATED_ON_CLUSTER in line:
        line = _REPEATED_SUFFIX.sub("", line)
    return line, found


def strip_prefix(line: str) -> str:
    """The message of a log line: "sglang-1  | Traceback ..." -> "Traceback ..."."""
    return split_prefix(line)[0]


def has_prefix(line: str) -> bool:
    """Does a logger's prefix start the line?"""
    return _first_prefix(line) is not None


def _first_prefix(line: str) -> re.Match[str] | None:
    if not line or line[0] == " ":
        return None  # indented traceback lines never carry a prefix of their own
    for pattern in _prefixes_for(line[0]):
        if (match := pattern.match(line)) and match.end():
            return match
    return None


def unquoted(line: str) -> str:
    """The line without the marks of a Markdown or e-mail quote: "> > x" -> "x"."""
    match = QUOTE_MARKS.match(line) if ">" in line[:40] else None
    return line[match.end() :] if match else line


# A log collector's record: the keys that hold what the program printed, and keys that
# only a log record has (a JSON error body of an HTTP server has "message" too, and is
# left as it is). Docker's json-file driver: {"log": "...\n", "stream": "stderr", "time": ...};
# structured loggers: {"level": "error", "ts": ..., "msg": ...}; cloud exports:
# {"severity": "ERROR", "textPayload": ...}.
_RECORD_MESSAGE = ("log", "msg", "message", "MESSAGE", "textPayload")
_RECORD_EXTRA = ("exc_info", "exception", "stack_trace", "stacktrace", "traceback", "error")
_RECORD_KEYS = frozenset(
    {"time", "ts", "timestamp", "@timestamp", "level", "levelname", "severity", "stream",
     "logger", "logger_name", "caller", "_SYSTEMD_UNIT", "__REALTIME_TIMESTAMP"}
)  # fmt: skip
_RECORD_LEVEL = ("level", "levelname", "severity")


# A record or an escaped traceback longer than this is read as the one line it is: its
# lines would cost more than the paste's line budget allows (traceback.MAX_RAW_LINE_CHARS).
MAX_UNPACKED_LINE_CHARS = 64_000


def record_lines(line: str) -> list[str] | None:
    """The lines a JSON log record carries, its level before its message ("ERROR ...");
    None for a line that is not one."""
    if len(line) > MAX_UNPACKED_LINE_CHARS:
        return None
    body = line.strip()
    if not (body.startswith("{") and body.endswith("}")) or '"' not in body:
        return None
    try:
        record = json.loads(body)
    except ValueError:
        return None
    if not isinstance(record, dict) or not _RECORD_KEYS.intersection(record):
        return None
    texts = {key: value for key, value in record.items() if isinstance(value, str)}
    # Rust's tracing-subscriber (TGI, SGLang's router) nests what was logged in "fields".
    if isinstance(fields := record.get("fields"), dict):
        nested = {key: value for key, value in fields.items() if isinstance(value, str)}
        texts = nested | texts
    message = next((texts[k] for k in _RECORD_MESSAGE if k in texts), None)
    if message is None:
        return None
    return _printed_by(texts, message)


def _printed_by(texts: dict[str, str], message: str, before: str = "") -> list[str]:
    """A record's message as lines, its level first ("ERROR ..."), then the traceback or
    error it carries in a key of its own; `before` is what the line had before it."""
    level = next((texts[k] for k in _RECORD_LEVEL if k in texts), "").upper()
    lead = f"{level} " if re.fullmatch(_LEVELS, level) else ""
    lines = message.rstrip("\n").split("\n")
    if lines[0]:
        lines[0] = lead + lines[0]
    lines[0] = before + lines[0]
    for key in _RECORD_EXTRA:
        if texts.get(key, "").strip():
            carried = texts[key].strip("\n").split("\n")
            # One line (Go's `"error": "dial tcp ...: connection refused"`) is the error
            # the record is logged at; a traceback's lines say what they are themselves.
            lines += [lead + carried[0]] if len(carried) == 1 else carried
    return lines


# Go's logfmt (logrus and its kin: dockerd and containerd under journald, the NVIDIA
# container toolkit, Kubernetes' components): time="..." level=error msg="..." error="...".
_LOGFMT_START = re.compile(r'(?:^|(?<=\s))(?:time|ts|level)=(?=["\w])')
_LOGFMT_PAIR = re.compile(r'([A-Za-z_][\w.-]*)=(?:"((?:[^"\\]|\\.)*)"|([^\s"]*))(?:\s+|$)')


def logfmt_lines(line: str) -> list[str] | None:
    """The lines a logfmt record carries, its level before its message; None for a line
    that is not one. What precedes the record (a journald prefix) stays before it."""
    if len(line) > MAX_UNPACKED_LINE_CHARS or "msg=" not in line:
        return None
    start = _LOGFMT_START.search(line)
    if start is None:
        return None
    texts: dict[str, str] = {}
    position, body = start.start(), line.rstrip()
    while position < len(body):
        pair = _LOGFMT_PAIR.match(body, position)
        if pair is None:
            return None
        key, quoted, bare = pair.groups()
        texts[key] = _unescaped(quoted) if quoted is not None else bare
        position = pair.end()
    level = texts.get("level", "INFO").upper()
    if "msg" not in texts or not re.fullmatch(rf"{_LEVELS}|TRACE|PANIC", level):
        return None
    return _printed_by(texts, texts["msg"], line[: start.start()])


# A traceback written into one line as an escaped string: a JSON error body's "detail", a
# logged repr() of an exception text. Its "\n" are two characters.
_ESCAPED_TRACE = re.compile(r'Traceback \(most recent call last\):\\n|\\n\s*File \\?["\']')
_ESCAPES = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(.))")
_ESCAPED = {"n": "\n", "t": "\t", "r": "", '"': '"', "'": "'", "\\": "\\", "/": "/"}
_STRING_END = re.compile(r"""['"]+[)\]}]*[,;]?\s*$""")


def _unescaped(text: str) -> str:
    return _ESCAPES.sub(
        lambda m: chr(int(m[1], 16)) if m[1] else _ESCAPED.get(m[2], "\\" + m[2]), text
    )


def escaped_lines(line: str) -> list[str] | None:
    """The lines of a traceback escaped into one line ("...call last):\\n  File \\"x\\"...");
    None for a line that holds none. The string's closing quote and brackets come off."""
    if len(line) > MAX_UNPACKED_LINE_CHARS or "\\n" not in line:
        return None
    if not _ESCAPED_TRACE.search(line):
        return None
    lines = _unescaped(line).split("\n")
    lines[-1] = _STRING_END.sub("", lines[-1])
    return lines


# An exception logged as its repr() (a logger given "%r", asyncio's and vLLM's engine
# loggers): "RuntimeError('CUDA error: ...\\nCUDA kernel errors ...')", alone after a
# logger's prefix. It is the exception line Python would print, "RuntimeError: CUDA ...".
_EXCEPTION_REPR = re.compile(
    r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception))"
    r"\((?P<quote>['\"])(?P<said>.*)(?P=quote),?\)\s*$"
)


def exception_repr_lines(line: str) -> list[str] | None:
    """The exception line and message lines of a logged exception's repr; None for a line
    that is no such repr after a logger's prefixes."""
    if ("Error(" not in line and "Exception(" not in line) or len(line) > MAX_UNPACKED_LINE_CHARS:
        return None
    body = strip_prefix(line)
    # Code that raises it, words before it, or a repr inside another message (Triton's
    # CompilationError ends with its cause's): no logger printed it. Matched at the
    # message's start only: searched, the names before "(" cost a scan from every position.
    if body == line or not line.endswith(body) or (match := _EXCEPTION_REPR.match(body)) is None:
        return None
    # Each line under the record's prefix: one record, so the message goes on over them.
    head = line[: len(line) - len(body)]
    first, *rest = _unescaped(match["said"]).split("\n")
    return [f"{head}{match['type']}: {first}", *(head + said for said in rest)]


def _note_prefix(found: Prefix, groups: dict[str, str | None]) -> None:
    level = (
        groups.get("lvl")
        or _GLOG_LEVELS.get(groups.get("glog") or "")
        or _LOGRUS_LEVELS.get(groups.get("logrus") or "")
        or _RAY_LEVELS.get(groups.get("ray") or "")
        or _TAG_LEVELS.get(groups.get("tag_lvl") or "", groups.get("tag_lvl"))
    )
    found.stamped = found.stamped or bool(level or groups.get("ts"))
    if level:
        level = level.upper()
        found.level = "WARNING" if level == "WARN" else level
    found.source = groups.get("src") or found.source
    if rank := groups.get("rank"):
        found.rank = f"rank{rank}"
    for key in ("tags", "proc"):
        if value := groups.get(key):
            tp = _TP_TAG.search(value)
            found.rank = f"TP{tp.group(1) or tp.group(2)}" if tp else found.rank
            found.proc = value.strip() if key == "proc" else found.proc


# Whose log a paste is, by the shape of its lines: vLLM's stamp with its place in a source
# file ("ERROR 12-07 01:00:05 [core.py:700] "), SGLang's stamp with its rank tags
# ("[2026-12-07 01:00:05 TP0] "). A bare "[date time]" or a level alone says nothing.
_FRAMEWORK_LINES = (
    ("vllm", re.compile(rf"(?:^|[\s)|\]]){_VLLM_STAMP}\[?[\w.-]+\.py:\d+\]", re.MULTILINE)),
    ("sglang", re.compile(rf"(?:^|[\s|])\[{_TS}(?: (?:TP|DP|EP|PP)\d+)+\]", re.MULTILINE)),
)


def framework_of_log(text: str) -> str | None:
    """The serving framework whose logger printed most of the paste's log lines, if any."""
    counts = {name: len(shape.findall(text)) for name, shape in _FRAMEWORK_LINES}
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if not ranked[0][1] or ranked[0][1] == ranked[1][1]:
        return None  # no such line, or as many of each: a paste of two servers' logs
    return ranked[0][0]


__all__ = [
    "ANSI",
    "Prefix",
    "escaped_lines",
    "framework_of_log",
    "has_prefix",
    "last_overwrite",
    "logfmt_lines",
    "record_lines",
    "split_prefix",
    "strip_ansi",
    "strip_prefix",
    "unquoted",
]
