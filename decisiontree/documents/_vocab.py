"""The slice of `decisiontree.vocabulary` that extraction uses, typed as a Protocol.

Extraction only needs these calls; tests may pass anything shaped like this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from decisiontree.flags import FlagSpec


class GpuLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def arch(self) -> str: ...


class LaunchLike(Protocol):
    @property
    def framework(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def flags(self) -> Mapping[str, str]: ...


class ModelInfoLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def family(self) -> str | None: ...
    @property
    def arch(self) -> str | None: ...
    @property
    def quantization(self) -> str | None: ...


class VocabularyLike(Protocol):
    def gpus_in_text(self, text: str) -> Sequence[tuple[GpuLike, int]]: ...
    def arch_of(self, text: str) -> str | None: ...
    def flag(self, name: str, framework: str | None = None) -> FlagSpec | None: ...
    def parse_launch_command(self, cmd: str) -> LaunchLike: ...
    def flags_in_text(
        self, text: str, framework: str | None = None
    ) -> list[tuple[str, str | None]]: ...
    def model_info(self, text: str) -> ModelInfoLike | None: ...


MAX_REMEMBERED_TEXT = 200  # a GPU scan is remembered for texts up to this long
MAX_REMEMBERED_SCANS = 4096


class CachedVocabulary:
    """Remembers lookups of short names: a document asks about the same flag hundreds of times."""

    def __init__(self, inner: VocabularyLike) -> None:
        self._inner = inner
        self._flags: dict[tuple[str, str | None], FlagSpec | None] = {}
        self._models: dict[str, ModelInfoLike | None] = {}
        self._arches: dict[str, str | None] = {}
        self._gpus: dict[str, tuple[tuple[GpuLike, int], ...]] = {}

    def gpus_in_text(self, text: str) -> Sequence[tuple[GpuLike, int]]:
        if len(text) > MAX_REMEMBERED_TEXT:  # prose: rarely the same twice
            return self._inner.gpus_in_text(text)
        if text not in self._gpus:  # a field's "8x H100", entry after entry
            if len(self._gpus) >= MAX_REMEMBERED_SCANS:  # short paragraphs of many write-ups
                self._gpus.clear()
            self._gpus[text] = tuple(self._inner.gpus_in_text(text))
        return self._gpus[text]

    def arch_of(self, text: str) -> str | None:
        if text not in self._arches:
            self._arches[text] = self._inner.arch_of(text)
        return self._arches[text]

    def flag(self, name: str, framework: str | None = None) -> FlagSpec | None:
        key = (name, framework)
        if key not in self._flags:
            self._flags[key] = self._inner.flag(name, framework)
        return self._flags[key]

    def parse_launch_command(self, cmd: str) -> LaunchLike:
        return self._inner.parse_launch_command(cmd)

    def flags_in_text(
        self, text: str, framework: str | None = None
    ) -> list[tuple[str, str | None]]:
        return self._inner.flags_in_text(text, framework)

    def model_info(self, text: str) -> ModelInfoLike | None:
        if text not in self._models:
            self._models[text] = self._inner.model_info(text)
        return self._models[text]


_DEFAULT: list[CachedVocabulary] = []


def default_vocabulary() -> VocabularyLike:
    if not _DEFAULT:
        from decisiontree import vocabulary

        _DEFAULT.append(CachedVocabulary(vocabulary.load()))
    return _DEFAULT[0]


def cached(vocab: VocabularyLike) -> VocabularyLike:
    return vocab if isinstance(vocab, CachedVocabulary) else CachedVocabulary(vocab)
