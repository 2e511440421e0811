"""What extraction returns: plain frozen records, no behaviour beyond trivia."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from decisiontree.records import Change, Condition, Outcome

MAX_DOCUMENT_BYTES = 5 * 1024 * 1024

FINDING_KINDS = ("crash", "hang", "wrong_output", "oom", "slow", "works")
FINDING_STATUSES = ("resolved", "workaround", "open")

_EMPTY: Mapping[str, str] = MappingProxyType({})


class DocumentRejected(ValueError):
    """A document we refuse to read; str(e) says what is wrong with it."""


@dataclass(frozen=True)
class GpuMention:
    name: str  # as nvidia-smi prints it, when the vocabulary knows the GPU
    arch: str | None  # "sm_120"
    count: int


@dataclass(frozen=True)
class ExtractedFix:
    """An attempt: the passage it came from (`text`), the structured change and its outcome.

    `summary` is ours, written from the changes ("Lower `--mem-fraction-static` to 0.88");
    empty when the change is only words.
    """

    text: str
    changes: tuple[Change, ...]
    outcome: Outcome
    summary: str = ""

    @property
    def passage(self) -> str:
        return self.text


@dataclass(frozen=True)
class Metrics:
    throughput_tok_s: float | None = None
    ttft_ms: float | None = None
    itl_ms: float | None = None
    concurrency: int | None = None
    before: str | None = None
    after: str | None = None
    before_value: float | None = None
    after_value: float | None = None
    unit: str | None = None


@dataclass(frozen=True)
class ExtractedFinding:
    title: str
    summary: str
    kind: str  # one of FINDING_KINDS
    status: str  # one of FINDING_STATUSES
    gpus: tuple[GpuMention, ...] = ()
    model: str | None = None
    model_arch: str | None = None
    quantization: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    versions: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    flags: tuple[tuple[str, str | None], ...] = ()
    samples: tuple[str, ...] = ()
    cause: str = ""
    conditions: tuple[Condition, ...] = ()
    fixes: tuple[ExtractedFix, ...] = ()
    metrics: Metrics = field(default_factory=Metrics)
    works_command: str | None = None
    body: str = ""
    extra: Mapping[str, str] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True)
class ExtractedDocument:
    format: str  # "findings_md" | "writeup"
    title: str
    findings: tuple[ExtractedFinding, ...]
    problems: tuple[str, ...] = ()
