"""Signatures of errors: what makes two reports "the same bug".

A `Signature` has three levels of strictness, cheapest match first:
- `fingerprint`: exception type + message template + the innermost in-app frames;
- `template_key`: exception type + message template only (its case and closing
  period aside);
- `terms`: lower-cased tokens for weighted similarity (rare ones like
  `nsa_kv_cache_store_fp8` should count far more than `error`).

Templates mask what differs between machines and releases (numbers, sizes,
paths, addresses, GPU names and indices, versions, shapes, ranks, ids), so the
same bug on another host or release keeps its template.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache, partial

from decisiontree.gated import GatedPattern, Needs
from decisiontree.host_faults import XID
from decisiontree.terms import facets_of, unique_words
from decisiontree.traceback import (
    FATAL_PYTHON_ERROR,
    GO_PANIC,
    PANIC,
    STDLIB_SHORTENED,
    Frame,
    ParsedTraceback,
    RaisedException,
    is_generic,
    is_generic_line,
    kernel_assertion_of,
)

# Bumped on purpose, never derived from the code: reviewers' link/split decisions are
# keyed by fingerprint, so a change that moves fingerprints must say so. Version 2
# masks quoted single values ('llama4', "/models/x") in templates. Version 3 reads a
# message's first line that ends in a colon with the line it announces (`headline`):
# "Error(s) in loading state_dict for M:" alone was one error for every parameter.
FINGERPRINT_VERSION = 3
# While a transition is open, every signature also carries its fingerprint under the
# previous version, so decisions stored under it keep applying and can migrate.
PREVIOUS_FINGERPRINT_VERSION: int | None = 2

MAX_KEY_FRAMES = 2  # the innermost two survive truncated pastes and refactors of callers
MAX_TEMPLATE_CHARS = 200
MAX_MESSAGE_CHARS = 400
MIN_SENTENCE_CHARS = 16  # "Not enough memory." is a template; "Error." is not
MAX_TERMS = 300
MAX_CONTEXT_TERMS = 600


@dataclass(frozen=True)
class Signature:
    exception_type: str
    template: str
    key_frames: tuple[str, ...]
    fingerprint: str
    template_key: str
    terms: tuple[str, ...]
    # The error's first line, normalised like the template but not cut at a sentence, its
    # quoted values kept: the matcher decides whether they count.
    message: str = ""
    # The fingerprint under PREVIOUS_FINGERPRINT_VERSION ("" outside a transition).
    previous_fingerprint: str = ""
    # Terms of the rest of the paste (start-up logs, config lines), on the first signature.
    context_terms: tuple[str, ...] = ()
    # What the paste says about the setup: "flag:enable-lora", "env:NCCL_DEBUG",
    # "version:0.6.3.post1", "library:libcudart", "kernel:indexSelectLargeIndex".
    facets: tuple[str, ...] = ()


# --- normalising messages -------------------------------------------------------------

# A POSIX path, or a Windows one under a drive (`C:\Users\me\...\torch\lib\c10.dll`): a
# backslash elsewhere is an escape ("\n" in a logged string), no separator.
_PATH = re.compile(
    r"(?<![\w.@+/\\-])(?:(?:[A-Za-z]:)?(?:(?:~|\.{1,3})?/(?:[\w.@+-]+/)*|(?:[\w.@+-]+/){2,})"
    r"|[A-Za-z]:\\(?:[\w.@+-]+\\)*)[\w.@+-]+"
)
_WINDOWS_DRIVE = ":\\"
_GPU_NAME = re.compile(
    r"\b(?:NVIDIA\s+)?(?:GeForce\s+|Tesla\s+|Quadro\s+)?"
    r"(?:RTX\s+(?:PRO\s+)?[A-Z]?\d{4}(?:\s?Ti)?(?:\s+(?:Ada|Blackwell)(?:\s+Generation)?)?"
    r"(?:\s+(?:Server|Workstation|Max-Q)(?:\s+(?:Workstation|Edition))*)?"
    r"|(?:[ABHLV]\d{2,3}[A-Z]?|T4|L4|G[BH]\d{3})(?:[- ](?:SXM\d?|PCIe|NVL|HBM\d?e?|\d+GB))*)\b"
)


def _mask(
    pattern: re.Pattern[str], placeholder: str, *, digit: bool = False, needs: Needs = ()
) -> tuple[GatedPattern, str]:
    """One masked shape: its pattern, run only where it can match, and its placeholder."""
    return GatedPattern(pattern, digit=digit, needs=needs), placeholder


# Order matters: wide shapes (URLs, paths, timestamps) before the numbers inside them.
_MASKS: tuple[tuple[GatedPattern, str], ...] = (
    _mask(re.compile(r"https?://\S+"), "<url>", needs=("://",)),
    _mask(
        re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"),
        "<ts>",
        digit=True,
        needs=("-", ":"),
    ),
    _mask(re.compile(r"\b\d\d:\d\d:\d\d(?:\.\d+)?\b"), "<ts>", digit=True, needs=(":",)),
    _mask(
        re.compile(r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"),
        "<uuid>",
        needs=("-",),
    ),
    _mask(re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>", digit=True, needs=(".",)),
    _mask(_PATH, "<path>", needs=(("/", _WINDOWS_DRIVE),)),
    _mask(re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>", needs=("0x",)),
    _mask(re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b"), "<hex>", digit=True),
    _mask(re.compile(r"torch\.Size\(\[[^\]]{0,200}\]\)"), "<shape>", needs=("torch.Size([",)),
    _mask(
        re.compile(r"\[\s*-?\d+(?:\s*,\s*-?\d+)+\s*,?\s*\]"),
        "<shape>",
        digit=True,
        needs=("[", ","),
    ),
    _mask(
        re.compile(r"\(\s*-?\d+(?:\s*,\s*-?\d+)+\s*,?\s*\)"),
        "<shape>",
        digit=True,
        needs=("(", ","),
    ),
    _mask(re.compile(r"\b\d+(?:x\d+)+\b"), "<shape>", digit=True, needs=("x",)),
    _mask(_GPU_NAME, "<gpu>", digit=True),
    _mask(
        re.compile(r"\b\d+(?:\.\d+)?\s?(?:[KMGTPkmgtp]i?B|[kmgt]b|bytes?)\b"),
        "<size>",
        digit=True,
        needs=(("B", "b"),),
    ),
    _mask(
        re.compile(r"\bv?\d+(?:\.\d+){2,}(?:[.+-]?[A-Za-z]+\d*)*\b|\bv\d+\.\d+\b|\b\d+\.\d+\+\w+"),
        "<ver>",
        digit=True,
        needs=(".",),
    ),
    _mask(
        re.compile(r"\b(?:GPU|gpu|[Dd]evice)\s?#?\d+\b|\bcuda:\d+\b"),
        "<gpu>",
        digit=True,
        needs=(("GPU", "gpu", "evice", "cuda:"),),
    ),
    _mask(
        re.compile(
            r"\[PG ID[^\]]{0,160}\]|\[[Rr]ank \d+\]|\b[Rr]ank[ =:]?\d+\b"
            r"|\b(?:TP|DP|PP|EP)\d+\b|\btp_rank[=: ]?\d+"
        ),
        "<rank>",
        needs=(("ank", "P"),),
    ),
    _mask(
        re.compile(r"(['\"])(?=[^'\"\s]{0,63}\d)(?:[0-9a-fA-F-]{8,64}|[\w-]{0,40}-[0-9a-f]{6,})\1"),
        "<id>",
        digit=True,
        needs=(("'", '"'),),
    ),
    _mask(re.compile(r"(?<![\w<])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w>])"), "<num>", digit=True),
)
_SPACES = re.compile(r"\s+")
_DIGIT = re.compile(r"\d")


def normalise_message(message: str) -> str:
    """Mask the parts of a message that differ between machines, runs and releases."""
    # Placeholders hold no digits, so a message without one never gains one.
    has_digit = _DIGIT.search(message) is not None
    for gated, placeholder in _MASKS:
        message = gated.sub(placeholder, message, has_digit)
    return _SPACES.sub(" ", message).strip()


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z<])")
_LEADING_RANK = re.compile(r"^(?:<rank>\s*:?\s*)+")


# A single quoted value ('llama4', "/models/x") is a parameter of the message, not its wording.
_QUOTED_VALUE = re.compile(r"(['\"])[^'\"\s]{1,80}\1")


def template_of(text: str) -> str:
    """Normalised first sentence: later sentences are advice that changes between releases."""
    return mask_quoted(base_template(text))


def mask_quoted(template: str) -> str:
    return _QUOTED_VALUE.sub("<q>", template)


def base_template(text: str) -> str:
    """The template as version 1 read it: everything but the quoted-value mask."""
    return _first_sentence(normalise_message(text))


def first_sentence(normalised: str) -> str:
    """A normalised message's first sentence, as its template keeps it."""
    return _first_sentence(normalised)


def _first_sentence(normalised: str) -> str:
    normalised = _LEADING_RANK.sub("", normalised)
    for end in _SENTENCE_END.finditer(normalised):
        if end.start() >= MIN_SENTENCE_CHARS:
            normalised = normalised[: end.start()]
            break
    return normalised[:MAX_TEMPLATE_CHARS]


# --- key frames -----------------------------------------------------------------------

# Frames that carry every error and so tell none apart.
_LIBRARY_TOPS = frozenset(
    {"torch", "triton", "uvloop", "zmq", "uvicorn", "starlette", "fastapi", "anyio", "tqdm",
     "click", "typer", "ray", "typing_extensions", "runpy", "pydantic", "pydantic_core"}
)  # fmt: skip
_PLUMBING_FUNCTIONS = frozenset(
    {"_call_impl", "_wrapped_call_impl", "decorate_context", "wrapper", "inner", "_fn",
     "wrapped", "new_func", "decorated", "wrapped_fn", "_run_module_as_main", "_run_code"}
)  # fmt: skip
_STDLIB_PATH = re.compile(r"/(?:lib/python\d[\d.]*|Lib)/(?!(?:site|dist)-packages/)")


def _top_package(frame: Frame) -> str:
    return frame.module.split("/", 1)[0].removesuffix(".py")


def _is_stdlib(frame: Frame) -> bool:
    if frame.path.startswith(("<frozen", STDLIB_SHORTENED)) or _STDLIB_PATH.search(
        frame.path.replace("\\", "/")
    ):
        return True
    # An abbreviated path ("…/multiprocessing/process.py") still names a stdlib package.
    return "/" in frame.module and _top_package(frame) in sys.stdlib_module_names


@lru_cache(maxsize=4096)
def _is_plumbing(frame: Frame, *, allow_libraries: bool) -> bool:
    if frame.function in _PLUMBING_FUNCTIONS or _is_stdlib(frame):
        return True
    return not allow_libraries and _top_package(frame) in _LIBRARY_TOPS


def library_frame(key_frame: str) -> bool:
    """Whether a key frame as a signature holds it ("triton/compiler/compiler.py:_init_handles")
    is inside a library the application calls (torch, Triton), not the application's own
    code: key frames fall back to those only where no frame of the application was printed."""
    return key_frame.split("/", 1)[0].removesuffix(".py") in _LIBRARY_TOPS


def key_frames_of(frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
    """Innermost frames of the application (SGLang, vLLM, user code), innermost first."""
    innermost_first = frames[::-1]
    for allow_libraries in (False, True):
        chosen = [
            f for f in innermost_first if not _is_plumbing(f, allow_libraries=allow_libraries)
        ]
        if chosen:
            return tuple(chosen[:MAX_KEY_FRAMES])
    return innermost_first[:MAX_KEY_FRAMES]


# --- exception types ------------------------------------------------------------------

# The same failure is raised under different names across torch releases.
_TYPE_BY_MESSAGE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"CUDA out of memory", re.IGNORECASE), "OutOfMemoryError"),
    (re.compile(r"CUDA error: "), "AcceleratorError"),
    (re.compile(r"NCCL error", re.IGNORECASE), "DistBackendError"),
    (re.compile(r"Segmentation fault"), "SegmentationFault"),  # as the shell's line says
)
_ALIASABLE_TYPES = frozenset(
    {
        "RuntimeError", "AcceleratorError", "OutOfMemoryError", "CudaError", "C10Error",
        "CppError", FATAL_PYTHON_ERROR,
    }
)  # fmt: skip


# Our names for an error whose paste names no class: a traceback cut off before its
# exception line, and an error log line of no known kind. Two pastes that both have one
# share no class.
INCOMPLETE_TRACEBACK = "IncompleteTraceback"
ERROR_LOG = "ErrorLog"
THREAD_DUMP = "ThreadDump"  # a live program's calls, dumped: a hang, no error printed
UNNAMED_TYPES = frozenset({INCOMPLETE_TRACEBACK, ERROR_LOG, THREAD_DUMP})


def error_name(exception_type: str) -> str:
    """The error's class as an answer names it to people: our names for a paste that names
    none read as what they are."""
    unnamed = {
        ERROR_LOG: "error line",
        INCOMPLETE_TRACEBACK: "cut-off traceback",
        THREAD_DUMP: "thread dump",
        PANIC: "Rust panic",
        FATAL_PYTHON_ERROR: "Fatal Python error",
        GO_PANIC: "Go panic",
    }
    return unnamed.get(exception_type, exception_type)


_PRINTED_AS = {PANIC: "panicked", GO_PANIC: "panic", FATAL_PYTHON_ERROR: "Fatal Python error"}


def class_shown(signature: Signature) -> str:
    """The error's class as an answer names it: a Python warning by its category
    ("UserWarning"), which the signature files under one type."""
    if signature.exception_type == WARNING_TYPE and (
        category := _WARNING_CATEGORY.match(signature.template)
    ):
        return category.group(1)
    return error_name(signature.exception_type)


def shown_error(exception_type: str, template: str) -> str:
    """The error as an answer quotes it: `ValueError: <message>`; an error line of no known
    kind as it stands; a traceback cut before its error line with the last line it has."""
    if exception_type == ERROR_LOG or (
        exception_type == WARNING_TYPE and _PYTHON_WARNING.match(template)
    ):  # a Python warning names its own category: "UserWarning: ..."
        return template
    if exception_type == INCOMPLETE_TRACEBACK:
        return f"traceback cut off before its error, last line: {template}"
    if exception_type == THREAD_DUMP:
        said = f", innermost call: {template}" if template else ""
        return f"thread dump of a running program (no error printed){said}"
    return f"{error_name(exception_type)}: {template}"


def ends_before_error(exception_type: str | None) -> bool:
    """Whether a paste whose first signature has this type (None: no signature) holds no
    error line of its own: frames or log lines only, a traceback cut before its exception."""
    return exception_type in (None, "", INCOMPLETE_TRACEBACK, THREAD_DUMP)


def canonical_type(exc_type: str, message: str) -> str:
    """Short, release-independent type name: "torch.cuda.OutOfMemoryError" -> "OutOfMemoryError"."""
    short = exc_type.rsplit(".", 1)[-1].rsplit("::", 1)[-1] or INCOMPLETE_TRACEBACK
    if short in _ALIASABLE_TYPES:
        head = message.lstrip()[:80]
        for pattern, alias in _TYPE_BY_MESSAGE:
            if pattern.match(head):
                return alias
    if short == _VALIDATION_ERROR and (raised := validator_raised(message)):
        return raised[0]
    return short


def _cpp_type(instance: str) -> str:
    """'c10::DistBackendError' -> DistBackendError; 'std::runtime_error' -> RuntimeError."""
    namespace, _, name = instance.strip("'\" ").rpartition("::")
    if name == "Error":
        return namespace.capitalize() + "Error" if namespace else "CppError"
    if "_" in name or name.islower():
        return "".join(part.capitalize() for part in name.split("_"))
    return name or "CppError"


# --- terms ----------------------------------------------------------------------------


def text_terms(text: str) -> tuple[str, ...]:
    """Tokens for term similarity, from free text or a one-line query."""
    return _terms_of([text])


def _terms_of(texts: Iterable[str]) -> tuple[str, ...]:
    # One pass of each pattern over the joined text, not one per fragment.
    return unique_words(["\n".join(texts)])[:MAX_TERMS]


_BOILERPLATE = re.compile(
    r"^(?:CUDA kernel errors might be asynchronously|For debugging consider passing"
    r"|Compile with .TORCH_USE_CUDA_DSA|Exception raised from|frame #\d)"
)


def _frame_texts(frames: tuple[Frame, ...]) -> list[str]:
    texts: list[str] = []
    for frame in key_frames_of(frames) + _app_frames(frames)[:5]:
        texts += [frame.function, frame.module.rsplit("/", 1)[-1].removesuffix(".py")]
    return texts


def _app_frames(frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
    return tuple(f for f in frames[::-1] if not _is_plumbing(f, allow_libraries=False))


def _message_texts(message: str) -> list[str]:
    return [line for line in message.splitlines() if not _BOILERPLATE.match(line.strip())]


# --- building signatures --------------------------------------------------------------

# How informative each kind of finding is; higher sorts first.
_PRIMARY, _SPECIFIC, _KERNEL, _ERROR_LINE, _CUT = 100, 90, 80, 70, 60
_KILLED, _GENERIC, _GENERIC_LINE, _WARNING = 50, 40, 30, 10


def _digest(*parts: str) -> str:
    joined = "\x1f".join(parts).encode()
    return hashlib.blake2b(joined, digest_size=16).hexdigest()


def _signature(
    exc_type: str,
    base: str,
    frames: tuple[Frame, ...],
    terms: tuple[str, ...],
    message: str | None = None,
    previous: tuple[str, str] | None = None,
) -> Signature:
    """`base` is the version-1 template; the signature carries the current one.
    `previous` is the type and version-1 template the previous version read, where they
    differ (version 2 read only a message's first line, and a validator's exception as
    the validation error).

    `message` is the error's whole first line as `message_of` gives it (the template
    keeps only its first sentence), for comparing messages word by word; the
    template stands in without one.
    """
    key_frames = tuple(f"{f.module}:{f.function}" for f in frames)
    # Hash basenames, not full modules: a file moved between packages, or a path
    # abbreviated to ".../memory_pool.py" in a paste, is still the same place.
    hashed_frames = [f"{f.module.rsplit('/', 1)[-1]}:{f.function}" for f in frames]
    template = mask_quoted(base)
    return Signature(
        exception_type=exc_type,
        template=template,
        key_frames=key_frames,
        fingerprint=fingerprint_hash(FINGERPRINT_VERSION, exc_type, template, hashed_frames),
        template_key=_digest("t", exc_type, template_words_key(template)),
        terms=terms,
        message=template if message is None else message,
        previous_fingerprint=(
            fingerprint_hash(
                PREVIOUS_FINGERPRINT_VERSION,
                previous[0] if previous else exc_type,
                mask_quoted(previous[1] if previous else base),
                hashed_frames,
            )
            if PREVIOUS_FINGERPRINT_VERSION
            else ""
        ),
    )


def template_words_key(template: str) -> str:
    """What of a template the template layer compares: its case and a closing period
    aside. Python 3.10 added "Did you mean: 'x'?" after a name error's message, so the
    same error's first sentence ends in "." on one Python and in nothing on another."""
    return template.lower().rstrip(". ")


_NAMED_FILE = re.compile(r"[A-Za-z_][A-Za-z_.+-]{1,39}")
# Directories whose files are programs and libraries: a message about one is about it.
_PROGRAM_DIRS = frozenset({"bin", "sbin", "libexec", "lib", "lib64"})


def _named_paths(line: str) -> str:
    """A program's or a shared library's path in a message keeps its name ("/bin/sh: 1:
    /usr/local/cuda/bin/nvcc: not found", ".../libcuda.so: cannot open"): the template masks
    the path whole; the message, compared word by word, keeps what it names. Other paths
    (data, sockets, temporary files, whose names change from run to run) stay masked, as
    does a name with a digit."""
    if "/" not in line and _WINDOWS_DRIVE not in line:
        return line

    def named(found: re.Match[str]) -> str:
        parent, _, name = found.group(0).replace("\\", "/").rstrip("/").rpartition("/")
        program = parent.rsplit("/", 1)[-1] in _PROGRAM_DIRS or ".so" in name
        return name if program and _NAMED_FILE.fullmatch(name) else found.group(0)

    return _PATH.sub(named, line)


def message_of(text: str) -> str:
    """The first line of an error (with the lines its sentence was wrapped onto),
    normalised for comparing messages word by word; its quoted values kept (the matcher
    decides whether they count, `match.SignatureIndex.message_form`)."""
    return normalise_message(_named_paths(_first_sentence_lines(text)))[:MAX_MESSAGE_CHARS]


def _base_and_message(template_source: str, text: str) -> tuple[str, str | None]:
    """The version-1 template of `template_source` and `message_of(text)` (None without
    text); one normalising pass serves both when the two are the same single line."""
    normalised = normalise_message(template_source)
    if not text:
        return _first_sentence(normalised), None
    first = _first_sentence_lines(text)
    named = _named_paths(first)
    line = normalised if first == template_source and named == first else normalise_message(named)
    return _first_sentence(normalised), line[:MAX_MESSAGE_CHARS]


def fingerprint_hash(version: int, exc_type: str, template: str, frames: Iterable[str]) -> str:
    """The fingerprint of one error under a given version's hashing."""
    # Version 1 hashed with the tag "f"; later versions tag the hash with their number
    # so that two versions can never produce the same fingerprint by accident.
    tag = "f" if version == 1 else f"f{version}"
    return _digest(tag, exc_type, template.lower(), *frames)


def _with_assertion(template: str, parsed: ParsedTraceback) -> str:
    # "device-side assert triggered" says nothing on its own; the kernel's
    # assertion text says which assert fired.
    if parsed.kernel_assertions and "device-side assert" in template:
        return f"{template} | {normalise_message(parsed.kernel_assertions[0])}"
    return template


def _first_line(message: str) -> str:
    return next((line for line in message.splitlines() if line.strip()), "")


# A line that stops mid-sentence (no closing punctuation) and a next line that goes on in
# lower case: one sentence wrapped at a fixed width, as Python's multiprocessing and many
# C++ libraries print their messages. Wrapping leaves lines near its width (60-80
# characters); a shorter line without a stop is a fragment of its own ("see the log above"
# after it is another remark).
_OPEN_SENTENCE = re.compile(r"[\w,;(\-]$")
_GOES_ON = re.compile(r"[a-z(]")
MIN_WRAPPED_CHARS = 50


def _first_sentence_lines(message: str) -> str:
    """The first line (with the line it announces after a colon), joined with the lines
    its sentence was wrapped onto. Only the compared message takes the wrapped lines: the
    template (and so the fingerprint) stays the headline. A heading that counts errors
    stays alone here (`_announced`)."""
    lines = message.strip().splitlines() or [""]
    first, detail, taken = _announced(lines)
    joined, rest = [f"{first} {detail}" if detail else first], lines[taken:]
    for line in rest:
        line = line.strip()
        last = joined[-1]
        wrapped = len(last) >= MIN_WRAPPED_CHARS and _OPEN_SENTENCE.search(last)
        if not line or not wrapped or not _GOES_ON.match(line):
            break
        joined.append(line)
    return " ".join(joined)


def _innermost_code(frames: tuple[Frame, ...]) -> str:
    return next((f.code for f in frames[::-1] if f.code), "")


# A compiler's message that opens with where in the source it failed ("at 32:18:"), then
# quotes that source with a caret under the spot, says what failed on its last line
# (Triton's CompilationError: "at {line}:{col}:", the excerpt, then the error).
_AT_SOURCE = re.compile(r"at \d+:\d+:?")


def told_last(message: str) -> str:
    """What a message that opens with a place in the source says, on its last line; ""
    for any other message."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[-1] if len(lines) > 1 and _AT_SOURCE.fullmatch(lines[0]) else ""


def headline(message: str) -> str:
    """The message's first line; where that line announces what went wrong on the lines
    after it, read with them as one line (`_announced`)."""
    first, detail, _ = _announced(message.strip().splitlines(), counted=True)
    return f"{first} {detail}" if detail else first


# A heading that counts the errors below it, as pydantic's ValidationError does ("1
# validation error for ModelConfig"; vLLM's config classes and every FastAPI request
# model raise it): the first error, under the field it is about where it names one, says
# what went wrong. The value that failed is the user's, its type code is the error's.
_COUNTED_ERRORS = re.compile(r"\d+ (?:[\w-]+ ){0,2}errors? (?:for|in|occurred|found)\b.*")
_FIELD_PATH = re.compile(r"[\w.\[\]-]{1,200}")
_INPUT_SHOWN = re.compile(r"\[type=(?P<code>[\w.]+),.*$")


def _announced(lines: list[str], *, counted: bool = False) -> tuple[str, str, int]:
    """(the first line, what it announces or "", how many lines the two take).

    A first line that ends in a colon announces the next ("Error(s) in loading state_dict
    for M:", then which parameter and how); a compiler's place in the source ("at 32:18:")
    is no announcement: its excerpt of code follows. With `counted`, a heading that counts
    errors announces the first of them: the template and the quote name which error it
    is, but the compared message stays the heading. Compared, the field's name and the
    allowed values drew a control about the same field (a rank outside pydantic's list)
    to the bug of a rank above the server's limit, and the cut-off fitted to keep false
    matches down rose with it: leave-one-bug-out top-1 0.87 -> 0.79 (bench/fit_matcher.py,
    2026-12-06)."""
    first = lines[0].strip() if lines else ""
    following = [line.strip() for line in lines[1:3]]
    if not following or not following[0]:
        return first, "", 1
    if first.endswith(":") and not _AT_SOURCE.fullmatch(first):
        return first, following[0], 2
    if counted and _COUNTED_ERRORS.fullmatch(first):
        placed = len(following) > 1 and following[1] and _FIELD_PATH.fullmatch(following[0])
        said = following if placed else following[:1]
        return first, _INPUT_SHOWN.sub(r"[type=\g<code>]", " ".join(said)), 1 + len(said)
    return first, "", 1


# pydantic reports a ValueError or an AssertionError that a validator raised as the
# model's validation error: "1 validation error for ModelConfig", then "  Value error,
# <what the check said> [type=value_error, ...]". It is that exception, the one the same
# check raised before it moved into a validator (vLLM's config classes from 0.10 on).
_VALIDATION_ERROR = "ValidationError"
_VALIDATOR_RAISED = re.compile(
    r"(?P<kind>Value error|Assertion failed), (?P<said>.+?)(?:\s*\[type=[\w.]+,.*)?"
)
_VALIDATOR_TYPES = {"Value error": "ValueError", "Assertion failed": "AssertionError"}


def validator_raised(message: str) -> tuple[str, str] | None:
    """(type, message) of the exception a validator raised, where a validation error's
    first error is one; else None."""
    first, _, rest = message.strip().partition("\n")  # every exception asks: two lines read
    if not rest or not _COUNTED_ERRORS.fullmatch(first.strip()):
        return None
    found = _VALIDATOR_RAISED.fullmatch(rest.partition("\n")[0].strip())
    return (_VALIDATOR_TYPES[found["kind"]], found["said"]) if found else None


def stated_message(exc: RaisedException) -> str:
    """What the error says: its message's headline (what a validator raised, where a
    validation error reports that); a bare "AssertionError" says it with the assert
    statement that raised it."""
    if raised := validator_raised(exc.message):
        return raised[1]
    return headline(exc.message) or _innermost_code(exc.frames)


# A pasted line longer than this is quoted cut (the whole paste is kept beside it).
ERROR_LINE_CHARS = 300


@dataclass(frozen=True)
class PastedError:
    """The error as the user wrote it: the signature is normalised (numbers read `<num>`,
    the type release-independent), which a reader does not recognise as theirs."""

    lines: tuple[str, ...] = ()  # empty when the paste holds no error line
    # The raised exception's type as pasted, where the signature names it otherwise: a
    # RuntimeError that says "CUDA error: ..." is the AcceleratorError of newer torch.
    renamed_from: str = ""
    # What the quoted lines say in full: the exception's whole message, the lines uncut.
    said: tuple[str, ...] = ()


def quoted_error(parsed: ParsedTraceback, exception_type: str | None) -> PastedError:
    """The raised exception the signature names (its first line, the type as pasted),
    any kernel assertion; else the paste's error lines."""
    named = exception_type or ""
    raised = [
        exc
        for exc in parsed.exceptions
        if named and exc.type and canonical_type(exc.type, exc.message) == named
    ]
    said = [(exc.type, _quotable(exc).strip()) for exc in raised[-1:]]
    lines = [
        f"{error_name(name)}: {message}" if message else error_name(name) for name, message in said
    ]
    whole = [exc.message for exc in raised[-1:]]
    lines += parsed.kernel_assertions[:1]
    whole += parsed.kernel_assertions[:1]
    if not lines:
        lines = whole = list(parsed.error_lines[:2])
    # The type's own short name, without the alias its message gives it.
    renamed = [error_name(exc.type) for exc in raised[-1:] if canonical_type(exc.type, "") != named]
    if not lines and named == WARNING_TYPE:  # warnings alone: the first is matched on
        lines = whole = [_RAISED_AT.sub("", warning) for warning in parsed.warnings[:1]]
        # A Python warning's category is its type as pasted ("UserWarning").
        renamed = [m.group(1) for line in lines[:1] if (m := _WARNING_CATEGORY.match(line))]
    shown = tuple(_cut(line) for line in dict.fromkeys(lines) if line.strip())
    return PastedError(shown, next(iter(renamed), ""), tuple(w for w in whole if w.strip()))


def _quotable(exc: RaisedException) -> str:
    """The message's first line that says something: torchrun's failure table opens with a
    rule of "=" (the signature keeps its first line as it is, so fingerprints stay); a
    compiler's place in the source, with what it says after it."""
    if told := told_last(exc.message):
        return f"{_first_line(exc.message).strip()} … {told}"
    if re.search(r"[A-Za-z]{2}", head := headline(exc.message)):
        return head
    words = next((ln for ln in exc.message.splitlines() if re.search(r"[A-Za-z]{2}", ln)), "")
    return words or stated_message(exc)


def _cut(line: str) -> str:
    line = line.strip()
    return line if len(line) <= ERROR_LINE_CHARS else line[: ERROR_LINE_CHARS - 1] + "…"


def _exception_signature(exc: RaisedException, parsed: ParsedTraceback) -> Signature:
    text = stated_message(exc)
    exc_type = THREAD_DUMP if exc.dumped and not exc.type else canonical_type(exc.type, exc.message)
    if exc_type == THREAD_DUMP and not text and (key := key_frames_of(exc.frames)):
        # No message: what it says is where the program is (a hang's place).
        text = f"{key[0].function} in {key[0].module.rsplit('/', 1)[-1]}"
    # The template (and so the fingerprint) is of the headline; what the message is
    # compared on is what it says.
    raised = validator_raised(exc.message)
    said = raised[1] if raised else exc.message
    base, message = _base_and_message(text, told_last(exc.message) or said or text)
    template = _with_assertion(base, parsed)
    first = _first_line(exc.message)
    # Version 2 read the first line alone, the type as raised (FINGERPRINT_VERSION).
    previous = (
        (canonical_type(exc.type, ""), _with_assertion(base_template(first), parsed))
        if first and (first != text or raised)
        else None
    )
    # "IncompleteTraceback" is our word, not the paste's; our names for errors that print no
    # class count as the words the paste printed.
    named = [_PRINTED_AS.get(exc_type, exc_type)] if exc.type else []
    terms = _terms_of(
        [*named, *_message_texts(exc.message), _innermost_code(exc.frames)]
        + [f.code for f in key_frames_of(exc.frames)]
        + _frame_texts(exc.frames)
    )
    return _signature(exc_type, template, key_frames_of(exc.frames), terms, message, previous)


def _exception_score(exc: RaisedException, primary: RaisedException | None) -> int:
    if not exc.type:
        return _CUT
    if is_generic(exc):
        return _GENERIC
    return _PRIMARY if exc is primary else _SPECIFIC


def _kernel_signature(assertion: str) -> Signature:
    base, message = _base_and_message(assertion, assertion)
    return _signature("CUDAAssertion", base, (), _terms_of([assertion]), message)


_COMPILER_ERROR = re.compile(
    r"(?:\.(?:cu|cuh|cpp|cxx|cc|c|h|hpp|hxx|inl)(?:\(\d+\)|:\d+(?::\d+)?)"
    r"|\b(?:nvcc|ptxas|nvlink|cicc|gcc|g\+\+|c\+\+|cc1plus|cc1|clang(?:\+\+)?|ld(?:\.\w+)?|collect2)"
    r"): (?P<said>(?:fatal )?error\b.*)|^nvcc fatal.*"
)
# Error lines outside Python tracebacks: (pattern, type, score, fixed template).
# First match wins; without a fixed template, the template starts where the pattern matched
# (at its "said" group where it has one).
_LINE_KINDS: tuple[tuple[re.Pattern[str], str, int, str], ...] = (
    (re.compile(r"static.assert(?:ion)?\b.*"), "StaticAssertionFailed", _ERROR_LINE, ""),
    (re.compile(r"Watchdog caught collective operation timeout.*|\S+ ran for \d+ milliseconds.*"),
     "CollectiveTimeout", _ERROR_LINE, ""),
    (re.compile(r"\bNCCL\b.*|\bnccl[A-Z]\w+.*"), "NCCLError", _ERROR_LINE, ""),
    # A compiler's error after its place in a source file or after the tool's name: not a
    # program's own "error" after its name ("srun: error: ...", "llama_model_load: error").
    (_COMPILER_ERROR, "CompileError", _ERROR_LINE, ""),
    # a container runtime's "OOMKilled" is the same kernel OOM killer, inside a memory limit,
    # and so is a cgroup's "oom_kill" event (Slurm reports its job step's)
    (re.compile(r"Out of memory: Kill|oom[-_]kill|invoked oom-killer|\bOOMKilled\b"),
     "HostOutOfMemory", _KILLED,
     "Out of memory: Killed process"),
    (re.compile(r"^Killed$|Killed process"), "Killed", _KILLED, "Killed"),
    (re.compile(r"Segmentation fault|SIGSEGV"), "SegmentationFault", _KILLED,
     "Segmentation fault"),
    # CUDA's own words hold no quotes: one after them closes a quote around the error (a
    # backtick, a code span in a sentence); nor backslashes: an escaped "\n" ends the line
    # it had in a JSON body
    (re.compile(r"CUDA error: [^'\"`\\]*"), "AcceleratorError", _ERROR_LINE, ""),
    # the linker's own words, not the object file and offset before them
    (re.compile(r"undefined reference to .*"), "LinkError", _ERROR_LINE, ""),
)  # fmt: skip
_WHAT = re.compile(r"\s*what\(\):\s*")
_TERMINATE = re.compile(r"terminate called after throwing an instance of (?P<instance>\S+)")


def _line_signature(
    parsed: ParsedTraceback, exc_type: str, text: str, score: int, template: str = ""
) -> tuple[int, Signature]:
    base, message = _base_and_message(template or text, text)
    template = _with_assertion(base, parsed)
    return score, _signature(exc_type, template, (), _terms_of([text]), message)


def _classify_line(line: str) -> tuple[str, int, str]:
    """(type, score, template source): the template skips "path/mma.cuh(523): " and the like."""
    if is_generic_line(line):
        return ERROR_LOG, _GENERIC_LINE, line
    if "Xid" in line and (xid := XID.search(line)):
        # The code names the fault (79: fell off the bus); the bus id and pid are the host's.
        # Written as one word, so the template keeps the number that masking would take.
        return "GPUXid", _ERROR_LINE, f"NVRM: Xid{xid['code']}"
    for pattern, exc_type, score, fixed in _LINE_KINDS:
        if match := pattern.search(line):
            return exc_type, score, fixed or match.groupdict().get("said") or match.group()
    return ERROR_LOG, _ERROR_LINE - 5, line


def _error_line_signatures(parsed: ParsedTraceback) -> list[tuple[int, Signature]]:
    found: list[tuple[int, Signature]] = []
    lines = parsed.error_lines
    for i, line in enumerate(lines):
        if _WHAT.match(line) and i and _TERMINATE.match(lines[i - 1]):
            continue  # already read together with its "terminate called" line
        if terminate := _TERMINATE.match(line):
            found.append(_cpp_signature(parsed, terminate["instance"], lines[i + 1 : i + 2]))
        elif _WHAT.match(line):
            found.append(_cpp_signature(parsed, "CppError", [line]))
        elif not kernel_assertion_of(line):
            exc_type, score, template = _classify_line(line)
            found.append(_line_signature(parsed, exc_type, line, score, template))
    return _first_of_each_kind(found)


# Distinct error lines read per kind (NCCL, compiler, plain ...): the first few name the
# failure. Five, as plain lines always had; three or five gave the same answers on both
# corpora of bench/diagnose_accuracy.py, where one line per known kind had kept an NCCL
# failure's second WARN line, the one that names /dev/shm, out of every query.
MAX_LINES_OF_A_KIND = 5
# A paste's Python warnings (`UserWarning: ...`) are matched beside its errors, after them:
# one may name the cause the error does not (PyTorch's "CUDA initialization: The NVIDIA
# driver on your system is too old" before "No CUDA GPUs are available"); they find a
# finding whose sample is that warning alone (`signatures_of(..., warnings=True)`). The
# last few: a long log repeats the deprecation warnings of its start. Matching them
# changed neither corpus (bench/README.md, "Session 30").
MAX_WARNINGS_MATCHED = 3
_PYTHON_WARNING = re.compile(r"\w*Warning: ")
_WARNING_CATEGORY = re.compile(r"(\w*Warning):")
WARNING_TYPE = "Warning"
# PyTorch ends a warning raised in its C++ with where ("(Triggered internally at
# /pytorch/c10/cuda/CUDAFunctions.cpp:119.)"): a place, like a frame, not what it says.
_RAISED_AT = re.compile(r"\s*\(Triggered internally at [^()]*\)\.?\s*$")


def _first_of_each_kind(found: list[tuple[int, Signature]]) -> list[tuple[int, Signature]]:
    """The first few distinct lines of each kind. One event prints several lines (an NCCL
    failure a WARN line from each layer it went through, a compiler one per error) and
    each may say what the others do not: the first line of an NCCL failure in a container
    says a segment could not be extended, the second that /dev/shm is where it failed."""
    seen: dict[str, set[str]] = defaultdict(set)
    kept: list[tuple[int, Signature]] = []
    for score, sig in found:
        templates = seen[sig.exception_type]
        if sig.template_key in templates or len(templates) < MAX_LINES_OF_A_KIND:
            templates.add(sig.template_key)
            kept.append((score, sig))
    return kept


def _cpp_signature(
    parsed: ParsedTraceback, instance: str, what_lines: Iterable[str]
) -> tuple[int, Signature]:
    what = next((_WHAT.sub("", w, count=1) for w in what_lines if _WHAT.match(w)), "")
    exc_type = canonical_type(_cpp_type(instance), what)
    return _line_signature(parsed, exc_type, what or instance, _ERROR_LINE)


def _ranked(parsed: ParsedTraceback, warnings: bool) -> list[tuple[int, Callable[[], Signature]]]:
    """(score, signature maker) per error, best first; making is deferred until kept."""
    primary = parsed.primary
    ranked: list[tuple[int, Callable[[], Signature]]] = [
        (_exception_score(exc, primary), partial(_exception_signature, exc, parsed))
        for exc in parsed.exceptions
    ]
    ranked += [(_KERNEL, partial(_kernel_signature, a)) for a in parsed.kernel_assertions]
    ranked += [(score, partial(lambda s: s, sig)) for score, sig in _error_line_signatures(parsed)]
    if not ranked:  # a bare warning or log line is still something to match on
        ranked = [(_WARNING, partial(warning_signature, w)) for w in parsed.warnings]
    elif warnings:  # Python's own warnings too, after the errors (see MAX_WARNINGS_MATCHED)
        told = [w for w in parsed.warnings if _PYTHON_WARNING.match(w)]
        last = told[max(0, len(told) - MAX_WARNINGS_MATCHED) :]
        ranked += [(_WARNING, partial(warning_signature, w)) for w in last]
    return sorted(ranked, key=lambda item: -item[0])  # stable: printed order among equals


def warning_signature(warning: str) -> Signature:
    """A warning line as something to match on."""
    warning = _RAISED_AT.sub("", warning)
    base, message = _base_and_message(warning, warning)
    return _signature(WARNING_TYPE, base, (), _terms_of([warning]), message)


def log_warnings_beside_errors(parsed: ParsedTraceback) -> tuple[str, ...]:
    """The paste's last log warnings beside its errors (WARNING lines, a line that says
    what the server chose), as printed, for a paste whose errors match no finding: a
    server's log warns of many things, and one may name the cause the error does not
    ("Set NSA backends for fp8_e4m3 KV Cache" before a device-side assert). Empty where
    the paste holds no error (`signatures_of` reads its warnings then)."""
    if not (parsed.exceptions or parsed.kernel_assertions or parsed.error_lines):
        return ()
    told = [w for w in parsed.warnings if not _PYTHON_WARNING.match(w)]
    return tuple(told[max(0, len(told) - MAX_WARNINGS_MATCHED) :])


def signatures_of(parsed: ParsedTraceback, *, warnings: bool = False) -> tuple[Signature, ...]:
    """One signature per distinct error, most informative first.

    The first one also carries the terms of the whole paste (kernel assertions,
    NCCL lines ...), because it is the one a diagnosis matches on. With `warnings`, a
    paste's last Python warnings follow its errors; a finding's sample is read without
    them: a warning printed beside a finding's error is incidental (the deprecation
    notices every start-up prints), and two pastes sharing one would match on it.
    """
    ranked = _ranked(parsed, warnings)
    # Wrappers ("Received sigquit", "scheduler is dead") end every crash; they only
    # count when the paste holds nothing better, or they would match everything. A plain
    # error line of no known kind is not better: it may be a logger's own words.
    best = ranked[0][0] if ranked else 0
    unique: dict[str, Signature] = {}
    for score, make in ranked:
        if score > _GENERIC or best < _ERROR_LINE or score == _WARNING:
            sig = make()
            unique.setdefault(sig.template_key, sig)
    signatures = list(unique.values())
    if not signatures:
        return ()
    # The first signature's terms are the errors', not those of the warnings beside them.
    errors = [sig for sig in signatures if sig.exception_type != WARNING_TYPE] or signatures
    merged = dict.fromkeys(term for sig in errors for term in sig.terms)
    context = "\n".join(parsed.context)
    around = tuple(t for t in unique_words([context]) if t not in merged)
    signatures[0] = replace(
        signatures[0],
        terms=tuple(merged)[:MAX_TERMS],
        context_terms=around[:MAX_CONTEXT_TERMS],
        facets=facet_strings(context),
    )
    return tuple(signatures)


def facet_strings(text: str) -> tuple[str, ...]:
    facets = facets_of(text)
    return (
        tuple(f"flag:{f}" for f in facets.flags)
        + tuple(f"env:{e}" for e in facets.env)
        + tuple(f"version:{v}" for v in facets.versions)
        + tuple(f"library:{lib}" for lib in facets.libraries)
        + tuple(f"kernel:{k}" for k in facets.kernels)
    )


def signature_of(parsed: ParsedTraceback) -> Signature | None:
    """The signature to diagnose by; None when the paste holds nothing error-like."""
    signatures = signatures_of(parsed)
    return signatures[0] if signatures else None
