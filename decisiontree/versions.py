"""Versions, read the way pip reads them (PEP 440, through `packaging`).

One parser for every reader: conditions (`framework.version`, `version.torch`),
the release a renamed flag was last spelled in, and the readers that find
versions in tool output, logs and write-ups. So "0.5.9.post1" is one version
everywhere (after 0.5.9, before 0.5.10), and a local build label such as
"2.8.0+cu128" is ignored by "==2.8.0", as pip ignores it.
"""

from __future__ import annotations

import functools
import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

# A version as people write it: "v0.5.9", "0.5.9.post1", "0.11.0rc1", "2.8.0+cu128".
# Release, then pre/post/dev parts, then a local label; nothing else is kept.
VERSION_TEXT = (
    r"v?(\d+(?:\.\d+)+"
    r"(?:[.-]?(?:a|b|c|rc|alpha|beta|pre|preview|post|rev|r|dev)\.?\d*(?![A-Za-z]))*"
    r"(?:\+[A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*)?)"
)
_LEADING_VERSION = re.compile(VERSION_TEXT)
_OPERATOR = re.compile(r"^\s*(===|==|!=|~=|<=|>=|<|>)")

# How tools name a package, to the one key a `version.<package>` condition uses.
_PACKAGE_KEYS = {
    "pytorch": "torch",
    "flashinfer-python": "flashinfer",
    "sglang-kernel": "sgl-kernel",
    "nvidia-nccl-cu12": "nccl",
    "nvidia-nccl-cu13": "nccl",
    "pytorch-triton": "triton",
    "nvidia-driver": "driver",
    "deepgemm": "deep-gemm",
}


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> Version | None:
    """The version `text` starts with: "v0.5.9.post1 (git abc)" -> 0.5.9.post1; else None."""
    found = _LEADING_VERSION.match(text.strip())
    if found is None:
        return None
    try:
        return Version(found.group(1))
    except InvalidVersion:  # "1.2-foo": keep the release part
        return _release_only(found.group(1))


def _release_only(text: str) -> Version:
    release = re.match(r"\d+(?:\.\d+)*", text)
    assert release is not None  # VERSION_TEXT's group starts with its release
    return Version(release.group(0))


def version_text(text: str) -> str | None:
    """The version `text` starts with, as written (without a leading "v"): "2.9.1+cu128"."""
    found = _LEADING_VERSION.match(text.strip())
    return found.group(1) if found else None


def satisfies(actual: str, wanted: str) -> bool:
    """Does release `actual` meet `wanted`?

    `wanted` is a PEP 440 specifier (">=0.5.9", "==2.8.0", ">=2.8,<2.10", "~=0.5.0"),
    or a bare version meaning that release and everything under it: "0.5" is any 0.5.x,
    "0.5.9" also 0.5.9.post1 and 0.5.9+cu128. Pre-releases count (a user who runs
    0.6.0rc1 runs it). Text that is no version ("main") only equals itself.
    """
    have = parse(actual)
    specifier = _specifier(wanted)
    if have is None or specifier is None:
        return actual.strip().lower() == wanted.strip().lower()
    return specifier.contains(have, prereleases=True)


@functools.lru_cache(maxsize=1024)
def _specifier(wanted: str) -> SpecifierSet | None:
    text = wanted.strip()
    if not _OPERATOR.match(text):
        bare = parse(text)
        if bare is None:
            return None
        text = f"=={bare.public}.*" if not bare.is_prerelease else f"=={bare}"
    try:
        return SpecifierSet(text.replace(" ", ""))
    except InvalidSpecifier:
        return None


def is_specifier(text: str) -> bool:
    """Is `text` something `satisfies` reads as a version requirement?"""
    return _specifier(text) is not None


def at_or_before(actual: str, last: str) -> bool:
    """`actual` is release `last` or an older one (0.5.9.post1 is after 0.5.9)."""
    have, bound = parse(actual), parse(last)
    return have is not None and bound is not None and have <= bound


def sort_key(text: str) -> Version:
    """For sorting releases; text that is no version sorts first."""
    return parse(text) or Version("0")


_BUILT_WITH_CUDA = re.compile(r"\+cu(\d+)(\d)\b")


def cuda_of_build(version: str) -> str | None:
    """The CUDA release a wheel's local label names: "2.5.1+cu124" -> "12.4"."""
    found = _BUILT_WITH_CUDA.search(version)
    return f"{found.group(1)}.{found.group(2)}" if found else None


def package_key(name: str) -> str:
    """The key a package's version is filed under: "PyTorch" -> "torch"."""
    key = "-".join(name.lower().replace("_", "-").split())
    return _PACKAGE_KEYS.get(key, key)


__all__ = [
    "VERSION_TEXT",
    "at_or_before",
    "cuda_of_build",
    "is_specifier",
    "package_key",
    "parse",
    "satisfies",
    "sort_key",
    "version_text",
]
