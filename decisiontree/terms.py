"""Words of a paste for retrieval: what two reports of one bug share, and little else.

`words_of(text)` turns any text (a traceback, a log, an issue title) into
lower-case terms:

- identifiers whole and in parts: `indexSelectLargeIndex` gives the whole and
  `index`, `select`, `large`; `NCCL_SOCKET_IFNAME` and `--enable-lora` likewise;
- paths by their informative parts: the module path inside a Python package
  (`vllm/lora/models.py` -> `vllm`, `lora`, `models`), the last directories and
  base name of any other file, a shared library's base name (`libnvidia-ml.so.1`
  -> `libnvidia-ml`, `nvidia`, `ml`) - never the home directory or user name;
- mangled C++ symbols demangled into namespace, class and function names;
- error codes kept with their number (`cuda runtime error (802)` -> `code802`),
  because the number is what names the error; other numbers, sizes, addresses,
  ids and URLs left out.

`facets_of(text)` collects what describes the setup rather than the error:
flags, environment variable names, versions, shared libraries and kernels.

Every pattern is bounded, and callers cut lines to a fixed length, so the work
is linear in the paste.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from decisiontree.gated import GatedPattern
from decisiontree.traceback import module_of

MAX_TOKEN_CHARS = 120  # longer "words" are base64, hashes or minified data

_DIGIT = re.compile(r"\d")
# Each pattern with what it cannot match without (`gated`): most lines are short and
# hold none of it.
_URL = GatedPattern(re.compile(r"\b(?:https?|ftp|file)://[^\s'\"<>)\]]{1,500}"), needs=("://",))
_UUID = GatedPattern(
    re.compile(r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b"), needs=("-",)
)
_HEXISH = GatedPattern(
    re.compile(r"\b0x[0-9a-fA-F]{1,32}\b|\b(?=[0-9a-f]{0,40}\d)[0-9a-f]{8,40}\b"), digit=True
)
_SIZE = GatedPattern(
    re.compile(r"\b\d{1,12}(?:\.\d{1,6})?\s?(?:[KMGTPkmgtp]i?B|bytes?)\b"),
    digit=True,
    needs=(("B", "byte"),),
)
_VERSION = GatedPattern(
    re.compile(
        r"(?<![\w.])v?\d{1,4}(?:\.\d{1,5}){1,3}(?:(?:[.+-]?(?:post|dev|rc|a|b|cu|rocm)\d{0,4})"
        r"|\+[\w.]{1,20})*(?![\w.]*\d)"
    ),
    digit=True,
    needs=(".",),
)
_ERROR_CODE = GatedPattern(
    re.compile(
        r"\b(?:error|code|errno|err|status|returned)\b\s{0,3}[=:(#]?\s{0,3}\(?(?P<num>\d{1,5})\b",
        re.IGNORECASE,
    ),
    digit=True,
    needs=(("err", "code", "status", "returned"),),
    fold_case=True,
)
# A path: two or more segments joined by / or \, or one segment after a leading
# /, ./, ../ or ~/; Windows drives included. Bounded segments keep it linear.
_PATH = GatedPattern(
    re.compile(
        r"(?<![\w.@+/\\-])(?:[A-Za-z]:)?(?:(?:~|\.{1,3})?[/\\](?:[\w.@+-]{1,100}[/\\]){0,30}"
        r"|(?:[\w.@+-]{1,100}[/\\]){1,30})[\w.@+-]{1,100}"
    ),
    needs=(("/", "\\"),),
)
_MANGLED = GatedPattern(re.compile(r"\b_Z[A-Za-z0-9_]{3,400}"), needs=("_Z",))
_SHARED_LIBRARY = re.compile(r"^(lib[\w+-]{1,80}?)\.(?:so|dylib|dll|a)(?:\.\d+)*$")
_TOKEN = re.compile(r"-{0,2}[A-Za-z_][A-Za-z0-9_]{0,119}(?:-[A-Za-z0-9_]{1,60}){0,8}")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# "Lo" + "RA": a mixed-case acronym (LoRA) split by the camelCase rule, put back together.
_ACRONYM_HEAD = re.compile(r"[A-Z][a-z]")
_ACRONYM_TAIL = re.compile(r"[A-Z]{1,3}")
_PART_SPLIT = re.compile(r"[-_\s]+")
_FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]{1,60}")
_ENV_NAME = re.compile(r"\b[A-Z][A-Z0-9]{1,20}(?:_[A-Z0-9]{1,30}){1,8}\b")
_KERNEL = re.compile(r"\b[a-z]\w{2,80}(?:Kernel|_kernel)\w{0,40}\b|\b\w{1,60}<<<")
# Ranks, devices and processes, numbered: they differ between two runs of one bug.
_NUMBERED = re.compile(r"(?:tp|dp|pp|ep|rank|gpu|cuda|pid|tid|node|worker|device)\d+")
_BORING_DIRS = frozenset(
    {"home", "root", "usr", "opt", "tmp", "var", "mnt", "data", "workspace", "users", "user",
     "local", "lib", "lib64", "bin", "src", "app", "srv", "envs", "env", "venv", ".venv",
     "conda", "anaconda3", "miniconda3", "site-packages", "dist-packages", "python", "work"}
)  # fmt: skip
_PACKAGED = re.compile(r"/(?:site|dist)-packages/|/lib/python\d")
_BARE_LIBRARY = GatedPattern(
    re.compile(r"(?<![\w/\\.-])lib[\w+-]{1,80}?\.(?:so|dylib|dll)(?:\.\d{1,4}){0,4}\b"),
    needs=("lib",),
)
_PATH_KEEP_DIRS = 2  # directories kept above a non-package file: ".../gloo/transport/tcp/pair.cc"


@dataclass(frozen=True)
class Facets:
    """What a paste says about the setup, apart from the error itself."""

    flags: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()


def words_of(text: str) -> list[str]:
    """Terms of `text` in order of appearance, repeats kept (callers count them)."""
    words: list[str] = []
    for group in _token_words(text):
        words.extend(group)
    return words


def word_groups(text: str) -> list[tuple[str, ...]]:
    """The terms of `text` by the token they come from, in order: a name's whole and its
    parts are one group ("flash-attn", "flash", "attn"), so two words of one name are not
    read as two words of the message side by side."""
    return list(_token_words(text))


def _token_words(text: str) -> Iterator[tuple[str, ...]]:
    digits = _DIGIT.search(text) is not None
    for m in _ERROR_CODE.finditer(text, digits):
        yield (f"code{int(m['num'])}",)
    for gated, replacement in _MASK_PASSES:
        text = gated.sub(replacement, text, digits)
    for found in _TOKEN.finditer(text):
        token = found.group()
        if found.start() and text[found.start() - 1].isdigit():
            # The tail of a name cut at a number ("8B-Instruct" of "Llama-3.1-8B-Instruct"):
            # its parts are words, "b-instruct" is no one's.
            yield expand(token)[1:]
        else:
            yield expand(token)


def _demangled_words(match: re.Match[str]) -> str:
    return " " + demangled_name(match.group()) + " "


def _path_words(match: re.Match[str]) -> str:
    return " " + " ".join(path_words(match.group())) + " "


# In this order: a URL's or a path's parts would otherwise be read as versions and hex.
# `digits` stays the text's as given: the passes put in only what came from it.
_MASK_PASSES: tuple[tuple[GatedPattern, str | Callable[[re.Match[str]], str]], ...] = (
    (_URL, " "),
    (_MANGLED, _demangled_words),
    (_PATH, _path_words),
    (_BARE_LIBRARY, _path_words),
    (_UUID, " "),
    (_HEXISH, " "),
    (_SIZE, " "),
    (_VERSION, " "),
)


def unique_words(texts: Iterable[str]) -> tuple[str, ...]:
    """Distinct terms of several texts, first appearance first."""
    return tuple(dict.fromkeys(w for text in texts for w in words_of(text)))


def path_words(path: str) -> list[str]:
    """The informative parts of a path, as plain words (no slashes)."""
    normal = path.replace("\\", "/")
    base = normal.rstrip("/").rsplit("/", 1)[-1]
    library = _SHARED_LIBRARY.match(base)
    if library:
        return [library.group(1)]
    if _PACKAGED.search(normal):
        parts = module_of(normal).split("/")
    else:  # not inside an installed package: the file and the few directories above it
        parts = [p for p in normal.split("/") if p and p not in (".", "..", "~")]
        parts = parts[-(_PATH_KEEP_DIRS + 1) :]
    kept = [p for p in parts if p.lower() not in _BORING_DIRS and not p.startswith(".")]
    return [_strip_extension(p) for p in kept]


def _strip_extension(part: str) -> str:
    stem, dot, extension = part.rpartition(".")
    return stem if dot and stem and extension.isalnum() and len(extension) <= 4 else part


@lru_cache(maxsize=4096)
def demangled_name(symbol: str) -> str:
    """`_ZN12tensorrt_llm7runtime11WorldConfig3mpiE...` -> "tensorrt_llm runtime WorldConfig mpi".

    The qualified name only: argument lists are std:: plumbing.
    """
    full = _demangle(symbol)
    if full is None:
        return ""
    # The qualified name before the argument list; arguments are std:: plumbing.
    depth = 0
    for i, char in enumerate(full):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0:
            full = full[:i]
            break
    name = full
    for _ in range(4):  # nested template arguments, innermost first
        name = re.sub(r"<[^<>]{0,400}>", "", name)
    qualified = name.split()[-1] if name.split() else ""  # "void flash::f" -> "flash::f"
    return " ".join(part for part in qualified.split("::") if part and part != "std")


def _demangle(symbol: str) -> str | None:
    try:
        import cxxfilt  # type: ignore[import-untyped]  # no stubs published

        result = cxxfilt.demangle(symbol)
    except Exception:  # noqa: BLE001  # no libstdc++ demangler here, or not a symbol
        return None
    return str(result) if result != symbol else None


@lru_cache(maxsize=65_536)
def expand(token: str) -> tuple[str, ...]:
    """The identifier whole, then its parts: nsa_kv_cache_store_fp8 -> nsa, kv, cache ..."""
    if len(token) > MAX_TOKEN_CHARS:
        return ()
    token = token.lstrip("-")
    whole = token.lower()
    if not _is_term(whole):
        return ()
    parts = _parts(token)
    if len(parts) <= 1:
        return (whole,)
    return (whole, *(part for part in parts if _is_term(part)))


def _parts(token: str) -> list[str]:
    pieces = [p for p in _PART_SPLIT.split(_CAMEL.sub(" ", token)) if p]
    merged: list[str] = []
    for piece in pieces:
        if merged and _ACRONYM_TAIL.fullmatch(piece) and _ACRONYM_HEAD.fullmatch(merged[-1]):
            merged[-1] += piece
        else:
            merged.append(piece)
    return [p.lower() for p in merged]


def _is_term(term: str) -> bool:
    if len(term) < 2 or term.isdigit():
        return False
    return not _NUMBERED.fullmatch(term)


def facets_of(text: str) -> Facets:
    """Flags, env names, versions, shared libraries and kernel names in `text`."""
    digits = _DIGIT.search(text) is not None
    libraries = []
    for match in _PATH.finditer(text, digits):
        base = match.group().replace("\\", "/").rsplit("/", 1)[-1]
        if library := _SHARED_LIBRARY.match(base):
            libraries.append(library.group(1))
    return Facets(
        flags=_distinct(m.group().lstrip("-").lower() for m in _FLAG.finditer(text)),
        env=_distinct(_ENV_NAME.findall(text)),
        versions=_distinct(
            m.group().lstrip("v") for m in _VERSION.finditer(_URL.sub(" ", text, digits), digits)
        ),
        libraries=_distinct(libraries),
        kernels=_distinct(m.group().rstrip("<") for m in _KERNEL.finditer(text)),
    )


def _distinct(items: Iterator[str] | Iterable[str], limit: int = 40) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))[:limit]
