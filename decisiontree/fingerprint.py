"""Signatures of errors: what makes two reports "the same bug".

A `Signature` has three levels of strictness, cheapest match first:
- `fingerprint`: exception type + message template + the innermost in-app frames;
- `template_key`: exception type + message template only;
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import lru_cache, partial

from decisiontree.traceback import (
    Frame,
    ParsedTraceback,
    RaisedException,
    is_generic,
    is_generic_line,
    kernel_assertion_of,
)

MAX_KEY_FRAMES = 2  # the innermost two survive truncated pastes and refactors of callers
MAX_TEMPLATE_CHARS = 200
MIN_SENTENCE_CHARS = 16  # "Not enough memory." is a template; "Error." is not
MAX_TERMS = 300


@dataclass(frozen=True)
class Signature:
    exception_type: str
    template: str
    key_frames: tuple[str, ...]
    fingerprint: str
    template_key: str
    terms: tuple[str, ...]


# --- normalising messages -------------------------------------------------------------

_PATH = re.compile(
    r"(?<![\w.@+/-])(?:[A-Za-z]:)?(?:(?:~|\.{1,3})?/(?:[\w.@+-]+/)*|(?:[\w.@+-]+/){2,})[\w.@+-]+"
)
_GPU_NAME = re.compile(
    r"\b(?:NVIDIA\s+)?(?:GeForce\s+|Tesla\s+|Quadro\s+)?"
    r"(?:RTX\s+(?:PRO\s+)?[A-Z]?\d{4}(?:\s?Ti)?(?:\s+(?:Ada|Blackwell)(?:\s+Generation)?)?"
    r"(?:\s+(?:Server|Workstation|Max-Q)(?:\s+(?:Workstation|Edition))*)?"
    r"|(?:[ABHLV]\d{2,3}[A-Z]?|T4|L4|G[BH]\d{3})(?:[- ](?:SXM\d?|PCIe|NVL|HBM\d?e?|\d+GB))*)\b"
)
# Order matters: wide shapes (URLs, paths, timestamps) before the numbers inside them.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"https?://\S+"), "<url>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<ts>"),
    (re.compile(r"\b\d\d:\d\d:\d\d(?:\.\d+)?\b"), "<ts>"),
    (re.compile(r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"), "<uuid>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (_PATH, "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b"), "<hex>"),
    (re.compile(r"torch\.Size\(\[[^\]]{0,200}\]\)"), "<shape>"),
    (re.compile(r"\[\s*-?\d+(?:\s*,\s*-?\d+)+\s*,?\s*\]"), "<shape>"),
    (re.compile(r"\(\s*-?\d+(?:\s*,\s*-?\d+)+\s*,?\s*\)"), "<shape>"),
    (re.compile(r"\b\d+(?:x\d+)+\b"), "<shape>"),
    (_GPU_NAME, "<gpu>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:[KMGTPkmgtp]i?B|[kmgt]b|bytes?)\b"), "<size>"),
    (
        re.compile(r"\bv?\d+(?:\.\d+){2,}(?:[.+-]?[A-Za-z]+\d*)*\b|\bv\d+\.\d+\b|\b\d+\.\d+\+\w+"),
        "<ver>",
    ),
    (re.compile(r"\b(?:GPU|gpu|[Dd]evice)\s?#?\d+\b|\bcuda:\d+\b"), "<gpu>"),
    (
        re.compile(
            r"\[PG ID[^\]]{0,160}\]|\[[Rr]ank \d+\]|\b[Rr]ank[ =:]?\d+\b"
            r"|\b(?:TP|DP|PP|EP)\d+\b|\btp_rank[=: ]?\d+"
        ),
        "<rank>",
    ),
    (
        re.compile(r"(['\"])(?=[^'\"\s]{0,63}\d)(?:[0-9a-fA-F-]{8,64}|[\w-]{0,40}-[0-9a-f]{6,})\1"),
        "<id>",
    ),
    (re.compile(r"(?<![\w<])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w>])"), "<num>"),
)
_SPACES = re.compile(r"\s+")


def normalise_message(message: str) -> str:
    """Mask the parts of a message that differ between machines, runs and releases."""
    for pattern, placeholder in _MASKS:
        message = pattern.sub(placeholder, message)
    return _SPACES.sub(" ", message).strip()


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z<])")
_LEADING_RANK = re.compile(r"^(?:<rank>\s*:?\s*)+")


def template_of(text: str) -> str:
    """Normalised first sentence: later sentences are advice that changes between releases."""
    normalised = _LEADING_RANK.sub("", normalise_message(text))
    for end in _SENTENCE_END.finditer(normalised):
        if end.start() >= MIN_SENTENCE_CHARS:
            normalised = normalised[: end.start()]
            break
    return normalised[:MAX_TEMPLATE_CHARS]


# --- key frames -----------------------------------------------------------------------

# Frames that carry every error and so tell none apart.
_LIBRARY_TOPS = frozenset(
    {"torch", "triton", "uvloop", "zmq", "uvicorn", "starlette", "fastapi", "anyio", "tqdm",
     "click", "typer", "ray", "typing_extensions", "runpy"}
)  # fmt: skip
_PLUMBING_FUNCTIONS = frozenset(
    {"_call_impl", "_wrapped_call_impl", "decorate_context", "wrapper", "inner", "_fn",
     "wrapped", "new_func", "decorated", "wrapped_fn", "_run_module_as_main", "_run_code"}
)  # fmt: skip
_STDLIB_PATH = re.compile(r"/lib/python\d[\d.]*/(?!(?:site|dist)-packages/)")


def _top_package(frame: Frame) -> str:
    return frame.module.split("/", 1)[0].removesuffix(".py")


def _is_stdlib(frame: Frame) -> bool:
    if frame.path.startswith("<frozen") or _STDLIB_PATH.search(frame.path.replace("\\", "/")):
        return True
    # An abbreviated path ("…/multiprocessing/process.py") still names a stdlib package.
    return "/" in frame.module and _top_package(frame) in sys.stdlib_module_names


@lru_cache(maxsize=4096)
def _is_plumbing(frame: Frame, *, allow_libraries: bool) -> bool:
    if frame.function in _PLUMBING_FUNCTIONS or _is_stdlib(frame):
        return True
    return not allow_libraries and _top_package(frame) in _LIBRARY_TOPS


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
)
_ALIASABLE_TYPES = frozenset(
    {"RuntimeError", "AcceleratorError", "OutOfMemoryError", "CudaError", "C10Error", "CppError"}
)


def canonical_type(exc_type: str, message: str) -> str:
    """Short, release-independent type name: "torch.cuda.OutOfMemoryError" -> "OutOfMemoryError"."""
    short = exc_type.rsplit(".", 1)[-1].rsplit("::", 1)[-1] or "IncompleteTraceback"
    if short in _ALIASABLE_TYPES:
        head = message.lstrip()[:80]
        for pattern, alias in _TYPE_BY_MESSAGE:
            if pattern.match(head):
                return alias
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

_URL = re.compile(r"https?://\S+")
_HEXISH = re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)[0-9a-f]{8,}(?:-[0-9a-f]{4,})*\b")
_SIZE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:[KMGTPkmgtp]i?B|bytes?)\b")
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_PART_SPLIT = re.compile(r"[-_\s]+")
_RANKISH = re.compile(r"(?:tp|dp|pp|ep|rank|gpu|cuda|pid|tid|node)\d+")
_STOPWORDS = frozenset(
    {
        "a", "an", "the", "of", "to", "in", "is", "are", "was", "were", "be", "been", "being",
        "for", "and", "or", "at", "by", "on", "with", "this", "that", "it", "its", "as",
        "from", "if", "but", "so", "than", "then", "there", "which", "can", "could", "may",
        "might", "will", "would", "should", "has", "have", "had", "do", "does", "did", "into",
        "some", "any", "your", "you", "we", "our", "please", "try", "see", "also", "more",
        "other", "such", "per", "via", "when", "while", "where", "what", "who", "how", "all",
        "each", "only", "just", "one", "two", "here", "these", "those", "self", "cls",
        "return", "def", "lambda", "args", "kwargs", "raise", "gib", "mib", "kib", "gb", "mb", "kb",
        "tb", "bytes", "ms", "https", "http", "www", "com", "org", "html", "py",
    }
)  # fmt: skip
_BOILERPLATE = re.compile(
    r"^(?:CUDA kernel errors might be asynchronously|For debugging consider passing"
    r"|Compile with .TORCH_USE_CUDA_DSA|Exception raised from|frame #\d)"
)


def text_terms(text: str) -> tuple[str, ...]:
    """Tokens for term similarity, from free text or a one-line query."""
    return _terms_of([text])


def _terms_of(texts: Iterable[str]) -> tuple[str, ...]:
    text = "\n".join(texts)  # one pass of each pattern, not one per fragment
    text = _SIZE.sub(" ", _HEXISH.sub(" ", _URL.sub(" ", text)))
    # A path says little beyond its file name: "/root/.cache/.../mma.cuh" -> "mma.cuh".
    text = _PATH.sub(lambda m: m.group().rsplit("/", 1)[-1], text)
    seen = dict.fromkeys(term for token in _TOKEN.findall(text) for term in _expand(token))
    return tuple(seen)[:MAX_TERMS]


@lru_cache(maxsize=16_384)
def _expand(token: str) -> tuple[str, ...]:
    """The identifier whole, then its parts: nsa_kv_cache_store_fp8 -> nsa, kv, cache ..."""
    if not _is_term(token.lower()):
        return ()
    parts = _PART_SPLIT.split(_CAMEL.sub(" ", token).lower())
    candidates = [token.lower(), *parts] if len(parts) > 1 else [token.lower()]
    return tuple(term for term in candidates if _is_term(term))


def _is_term(term: str) -> bool:
    if len(term) < 2 or term.isdigit() or term in _STOPWORDS:
        return False
    return not _RANKISH.fullmatch(term)


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
    exc_type: str, template: str, frames: tuple[Frame, ...], terms: tuple[str, ...]
) -> Signature:
    key_frames = tuple(f"{f.module}:{f.function}" for f in frames)
    # Hash basenames, not full modules: a file moved between packages, or a path
    # abbreviated to ".../memory_pool.py" in a paste, is still the same place.
    hashed_frames = [f"{f.module.rsplit('/', 1)[-1]}:{f.function}" for f in frames]
    lowered = template.lower()
    return Signature(
        exception_type=exc_type,
        template=template,
        key_frames=key_frames,
        fingerprint=_digest("f", exc_type, lowered, *hashed_frames),
        template_key=_digest("t", exc_type, lowered),
        terms=terms,
    )


def _with_assertion(template: str, parsed: ParsedTraceback) -> str:
    # "device-side assert triggered" says nothing on its own; the kernel's
    # assertion text says which assert fired.
    if parsed.kernel_assertions and "device-side assert" in template:
        return f"{template} | {normalise_message(parsed.kernel_assertions[0])}"
    return template


def _first_line(message: str) -> str:
    return next((line for line in message.splitlines() if line.strip()), "")


def _innermost_code(frames: tuple[Frame, ...]) -> str:
    return next((f.code for f in frames[::-1] if f.code), "")


def _exception_signature(exc: RaisedException, parsed: ParsedTraceback) -> Signature:
    # A bare "AssertionError" is identified by the assert statement that raised it.
    text = _first_line(exc.message) or _innermost_code(exc.frames)
    exc_type = canonical_type(exc.type, exc.message)
    template = _with_assertion(template_of(text), parsed)
    terms = _terms_of(
        [exc_type, *_message_texts(exc.message), _innermost_code(exc.frames)]
        + [f.code for f in key_frames_of(exc.frames)]
        + _frame_texts(exc.frames)
    )
    return _signature(exc_type, template, key_frames_of(exc.frames), terms)


def _exception_score(exc: RaisedException, primary: RaisedException | None) -> int:
    if not exc.type:
        return _CUT
    if is_generic(exc):
        return _GENERIC
    return _PRIMARY if exc is primary else _SPECIFIC


def _kernel_signature(assertion: str) -> Signature:
    return _signature("CUDAAssertion", template_of(assertion), (), _terms_of([assertion]))


# Error lines outside Python tracebacks: (pattern, type, score, fixed template).
# First match wins; without a fixed template, the template starts where the pattern matched.
_LINE_KINDS: tuple[tuple[re.Pattern[str], str, int, str], ...] = (
    (re.compile(r"static.assert(?:ion)?\b.*"), "StaticAssertionFailed", _ERROR_LINE, ""),
    (re.compile(r"Watchdog caught collective operation timeout.*|\S+ ran for \d+ milliseconds.*"),
     "CollectiveTimeout", _ERROR_LINE, ""),
    (re.compile(r"\bNCCL\b.*|\bnccl[A-Z]\w+.*"), "NCCLError", _ERROR_LINE, ""),
    (re.compile(r"(?<=: )(?:fatal )?error\b.*|^nvcc fatal.*"), "CompileError", _ERROR_LINE, ""),
    (re.compile(r"Out of memory: Kill|oom-kill|invoked oom-killer"), "HostOutOfMemory", _KILLED,
     "Out of memory: Killed process"),
    (re.compile(r"^Killed$|Killed process"), "Killed", _KILLED, "Killed"),
    (re.compile(r"Segmentation fault|SIGSEGV"), "SegmentationFault", _KILLED,
     "Segmentation fault"),
    (re.compile(r"CUDA error: .*"), "AcceleratorError", _ERROR_LINE, ""),
)  # fmt: skip
_WHAT = re.compile(r"\s*what\(\):\s*")
_TERMINATE = re.compile(r"terminate called after throwing an instance of (?P<instance>\S+)")


def _line_signature(
    parsed: ParsedTraceback, exc_type: str, text: str, score: int, template: str = ""
) -> tuple[int, Signature]:
    template = _with_assertion(template_of(template or text), parsed)
    return score, _signature(exc_type, template, (), _terms_of([text]))


def _classify_line(line: str) -> tuple[str, int, str]:
    """(type, score, template source): the template skips "path/mma.cuh(523): " and the like."""
    if is_generic_line(line):
        return "ErrorLog", _GENERIC_LINE, line
    for pattern, exc_type, score, fixed in _LINE_KINDS:
        if match := pattern.search(line):
            return exc_type, score, fixed or match.group()
    return "ErrorLog", _ERROR_LINE - 5, line


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
    return _one_per_type(found)


def _one_per_type(found: list[tuple[int, Signature]]) -> list[tuple[int, Signature]]:
    # An OOM kill or an NCCL failure prints several lines about one event.
    seen: set[str] = set()
    kept: list[tuple[int, Signature]] = []
    for score, sig in found:
        if sig.exception_type not in seen:
            seen.add(sig.exception_type)
            kept.append((score, sig))
    return kept


def _cpp_signature(
    parsed: ParsedTraceback, instance: str, what_lines: Iterable[str]
) -> tuple[int, Signature]:
    what = next((_WHAT.sub("", w, count=1) for w in what_lines if _WHAT.match(w)), "")
    exc_type = canonical_type(_cpp_type(instance), what)
    return _line_signature(parsed, exc_type, what or instance, _ERROR_LINE)


def _ranked(parsed: ParsedTraceback) -> list[tuple[int, Callable[[], Signature]]]:
    """(score, signature maker) per error, best first; making is deferred until kept."""
    primary = parsed.primary
    ranked: list[tuple[int, Callable[[], Signature]]] = [
        (_exception_score(exc, primary), partial(_exception_signature, exc, parsed))
        for exc in parsed.exceptions
    ]
    ranked += [(_KERNEL, partial(_kernel_signature, a)) for a in parsed.kernel_assertions]
    ranked += [(score, partial(lambda s: s, sig)) for score, sig in _error_line_signatures(parsed)]
    if not ranked:  # a bare warning or log line is still something to match on
        ranked = [(_WARNING, partial(_warning_signature, w)) for w in parsed.warnings]
    return sorted(ranked, key=lambda item: -item[0])  # stable: printed order among equals


def _warning_signature(warning: str) -> Signature:
    return _signature("Warning", template_of(warning), (), _terms_of([warning]))


def signatures_of(parsed: ParsedTraceback) -> tuple[Signature, ...]:
    """One signature per distinct error, most informative first.

    The first one also carries the terms of the whole paste (kernel assertions,
    NCCL lines ...), because it is the one a diagnosis matches on.
    """
    ranked = _ranked(parsed)
    # Wrappers ("Received sigquit", "scheduler is dead") end every crash; they only
    # count when the paste holds nothing better, or they would match everything.
    best = ranked[0][0] if ranked else 0
    unique: dict[str, Signature] = {}
    for score, make in ranked:
        if score > _GENERIC or best <= _GENERIC:
            sig = make()
            unique.setdefault(sig.template_key, sig)
    signatures = list(unique.values())
    if not signatures:
        return ()
    merged = dict.fromkeys(term for sig in signatures for term in sig.terms)
    signatures[0] = replace(signatures[0], terms=tuple(merged)[:MAX_TERMS])
    return tuple(signatures)


def signature_of(parsed: ParsedTraceback) -> Signature | None:
    """The signature to diagnose by; None when the paste holds nothing error-like."""
    signatures = signatures_of(parsed)
    return signatures[0] if signatures else None
