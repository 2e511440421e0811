"""Plain records shared by extraction, the graph and diagnosis.

These are the vocabulary of the domain layer: `kb/` turns ORM rows into them,
`decisiontree/` reasons over them. Frozen, hashable, JSON-friendly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Outcome(StrEnum):
    """What applying a fix did to the problem."""

    RESOLVES = "resolves"
    PARTIAL = "partial"
    NO_EFFECT = "no_effect"
    WORSE = "worse"
    PROPOSED = "proposed"  # suggested or planned, not tried yet: validate it

    @property
    def helps(self) -> bool:
        return self in (Outcome.RESOLVES, Outcome.PARTIAL)

    @property
    def tried(self) -> bool:
        """Someone applied the change and saw what it did (a proposal is not evidence)."""
        return self is not Outcome.PROPOSED


class ChangeAction(StrEnum):
    """The kind of structured change a fix makes to a deployment."""

    SET_FLAG = "set_flag"  # --name value (or a bare boolean flag)
    REMOVE_FLAG = "remove_flag"  # drop --name from the launch command
    SET_ENV = "set_env"  # NAME=value in the server's environment
    PIN_VERSION = "pin_version"  # install package==version
    PATCH = "patch"  # a code change, described in text
    OTHER = "other"  # anything else, described in text


@dataclass(frozen=True)
class Change:
    """One structured change, e.g. SET_FLAG kv-cache-dtype=bf16.

    Flag names are canonical: no leading dashes, the spelling of the newest
    framework release the vocabulary knows (`dsa-decode-backend`, not
    `nsa-decode-backend`). `value` is None for a boolean flag or a removal.
    """

    action: ChangeAction
    name: str
    value: str | None = None

    def describe(self) -> str:
        if self.action is ChangeAction.SET_FLAG:
            return f"--{self.name}" + (f" {self.value}" if self.value is not None else "")
        if self.action is ChangeAction.REMOVE_FLAG:
            return f"remove --{self.name}"
        if self.action is ChangeAction.SET_ENV:
            return f"{self.name}={self.value or ''}"
        if self.action is ChangeAction.PIN_VERSION:
            return f"{self.name}=={self.value}" if self.value else self.name
        return self.value or self.name


@dataclass(frozen=True)
class Condition:
    """A fact about the context that a cause needs, e.g. `gpu.arch = sm_120`.

    Keys and values are those of `decisiontree.conditions` (`gpu.arch`,
    `flag.<canonical-name>`, `version.<package>`, ...), which reads what people type.
    `negate=True` means the cause needs the key to be anything *but* `value`
    (e.g. `flag.kv-cache-dtype != bf16`).

    `derived=True` marks a condition nobody stated: read off where the finding was
    seen (its GPU, model, framework, launched flags; `decisiontree.documents.derive`),
    not said to be what the cause needs. Stated is the default, so a condition
    stored before the mark existed reads as stated.
    """

    key: str
    value: str
    negate: bool = False
    derived: bool = False

    def describe(self) -> str:
        return f"{self.key} {'!=' if self.negate else '='} {self.value}"


@dataclass(frozen=True)
class Evidence:
    """How much we have seen a fix work (or not) beyond the finding that reported it."""

    validated_passed: tuple[tuple[str, int], ...] = ()  # (arch, count) of passed runs on hosts
    validated_failed: tuple[tuple[str, int], ...] = ()
    feedback_helped: int = 0  # users who said "this fixed it"
    feedback_not_helped: int = 0


@dataclass(frozen=True)
class FixRecord:
    id: int
    summary: str
    changes: tuple[Change, ...]
    outcome: Outcome
    evidence: Evidence = field(default_factory=Evidence)


@dataclass(frozen=True)
class SourceRef:
    id: int
    title: str


@dataclass(frozen=True)
class FindingRecord:
    """A published finding, as the graph sees it.

    `samples` are verbatim error texts (tracebacks, log lines) reported for
    this finding; the graph parses and fingerprints them itself. `title`,
    `summary` (the symptom in words) and `cause` are searched beside them.
    """

    id: int
    title: str
    kind: str
    cause: str
    samples: tuple[str, ...]
    conditions: tuple[Condition, ...]
    fixes: tuple[FixRecord, ...]
    sources: tuple[SourceRef, ...] = ()
    # Fingerprints a reviewer attached to (or split from) this finding.
    linked_fingerprints: tuple[str, ...] = ()
    split_fingerprints: tuple[str, ...] = ()
    summary: str = ""
