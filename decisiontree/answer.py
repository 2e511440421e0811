"""What a diagnosis answers: plain frozen records, the contract for every reader.

The REST API's serializer (`api.serializers.DiagnosisSerializer`, the one JSON
shape, also stored for the web page and posted to Slack) and the CLI's text
read these; field names here are the ones the JSON keeps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from decisiontree.build_support import BuildSupport
from decisiontree.context import Context
from decisiontree.fingerprint import Signature
from decisiontree.flag_check import FlagProblem, NamedFlag
from decisiontree.gpu_memory import MemoryReading, OutOfMemory
from decisiontree.gpu_requirement import GpuRequirement
from decisiontree.host_faults import HostFault
from decisiontree.launch import writable
from decisiontree.match import THROUGH_WARNING, Candidate, MatchLevel
from decisiontree.records import Change, FindingRecord, FixRecord
from decisiontree.server_memory import RankMemory
from decisiontree.setup import SetupDifference, State


class Verdict(StrEnum):
    """The headline: the match level, told truthfully about the setup."""

    KNOWN = "known"  # the known issue, on a setup that fits
    SIMILAR = "similar"  # resembles a known issue
    DIFFERENT_SETUP = "different_setup"  # the same error, seen on another GPU/model/framework
    NONE = "none"  # no known match


@dataclass(frozen=True)
class WhyStep:
    step: str  # "signature" | "cause" | "condition" | "shared" | "fix" | "value"
    detail: str
    key: str | None = None
    value: str | None = None
    state: State | None = None


@dataclass(frozen=True)
class PathStep:
    """One node of the graph on the way from the paste to a fix."""

    kind: str  # "signature" | "finding" | "cause" | "fix"
    label: str
    id: int | None = None  # the finding's or fix's id


@dataclass(frozen=True)
class WithheldChange:
    """A change of a fix that does not fit the user's setup, left out of their command."""

    change: Change
    command_change: str  # as the user's release would spell it
    reason: str


# How every channel tells a paste whose errors only say that another process failed
# (heading, advice): by the signal that killed it, where the paste names one.
CAUSE_ELSEWHERE = {
    "": (
        "The cause is not in this paste.",
        "This only says that something else failed (an engine core, a scheduler, a worker, a"
        " compiler, or the server a client called); the error that stopped it was printed"
        " earlier in the same log, or in the server's own log. Paste the log from the first"
        " Traceback or ERROR line before it.",
    ),
    "SIGKILL": (
        "The process was killed (SIGKILL), not stopped by an error of its own.",
        "Most often the kernel's out-of-memory killer did it: the host or the container ran out"
        " of RAM, which loading a checkpoint takes on every rank too. `dmesg -T | grep -i -e oom"
        " -e 'killed process'` on the host, or the container's status (OOMKilled, exit code"
        " 137), says so: give the container more memory, or start fewer ranks on the host.",
    ),
    "SIGTERM": (
        "Something stopped the process (SIGTERM).",
        "A person, a supervisor or an orchestrator asked it to stop. On Kubernetes that is"
        " most often a liveness or startup probe that failed while the weights were still"
        " loading: give the pod a startupProbe that waits long enough for the model to load,"
        " and `kubectl describe pod` shows the probe's failures.",
    ),
    "SIGSEGV": (
        "The process crashed in native code (SIGSEGV).",
        "A CUDA kernel, a compiled extension or a library built for another torch or CUDA"
        " crashed it. Paste the lines before it; started with PYTHONFAULTHANDLER=1, Python"
        " prints where each thread was, which names the library.",
    ),
    "SIGABRT": (
        "The process aborted (SIGABRT).",
        "A C++ exception or assertion aborted it: the `terminate called after throwing` and"
        " `what():` lines printed just before say which. Paste the log from there.",
    ),
}
# Why a words-only match to an out-of-memory finding is only similar (no_memory_ran_out).
NO_MEMORY_RAN_OUT = "the known issue ran out of memory; this paste shows another error"
# Why a match on a message every such error prints, from other code, is only similar.
ORDINARY_MESSAGE_ELSEWHERE = "the same ordinary message, raised from other code"
# How every channel marks a fix nobody has confirmed (RankedFix.proposed).
PROPOSED = "proposed, not confirmed — validate it"
# How every channel introduces RankedFix.for_other_setup.
OTHER_SETUP = "for another setup: its finding applies when"
# How every channel marks a fix of a match listed after a better one (RankedFix.runner_up).
RUNNER_UP = "from a less likely match"


@dataclass(frozen=True)
class RankedFix:
    rank: int
    score: float
    fix: FixRecord
    command_changes: tuple[str, ...]  # `changes`, spelled for the user's release
    finding: FindingRecord  # the finding that reported the fix
    why: tuple[WhyStep, ...]
    already_applied: bool = False
    changes: tuple[Change, ...] = ()  # the fix's changes that fit the user's setup
    summary: str = ""  # the fix's summary with flags spelled as in `command_changes`
    withheld: tuple[WithheldChange, ...] = ()
    spellings: tuple[str, ...] = ()  # older spellings, when the release is unknown
    path: tuple[PathStep, ...] = ()  # the walk through the graph that reached it
    proposed: bool = False  # suggested, never confirmed: validate it
    # The conditions its finding states that this setup contradicts, in words ("model
    # architecture is glm_moe_dsa (yours: llama)"): what confirmed it was another setup,
    # so it earns no place above proposals that fit.
    for_other_setup: tuple[str, ...] = ()
    # From a match listed only after a better one (`decisiontree.match.shortlist`): a
    # guess beside the answer, ranked after every fix of the first match.
    runner_up: bool = False
    # Its finding holds the error as printed (the same fingerprint, or a reviewer's link).
    as_printed: bool = False

    @property
    def fits_nothing(self) -> bool:
        """None of the fix's changes fits the user's setup: there is nothing to try."""
        return not self.changes and bool(self.withheld)

    @property
    def said_by_changes(self) -> bool:
        """The changes say the whole fix ("--kv-cache-dtype bf16"); a fix that names a flag
        without a value to write ("raise --mem-fraction-static") is said by its summary."""
        return bool(self.command_changes) and all(writable(c) for c in self.changes)


@dataclass(frozen=True)
class NotHelpful:
    fix: FixRecord
    command_changes: tuple[str, ...]
    finding: FindingRecord
    reason: str
    summary: str = ""  # the fix's summary with flags spelled as in `command_changes`

    @property
    def changes(self) -> tuple[Change, ...]:
        return self.fix.changes


@dataclass(frozen=True)
class Question:
    key: str
    text: str
    answers: tuple[str, ...]
    first_fix_by_answer: tuple[tuple[str, str], ...]  # (answer, summary of the first fix)


@dataclass(frozen=True)
class FixToTry:
    """A fix of a nearest finding, never offered as the answer: the user may have tried it."""

    fix: FixRecord
    summary: str  # flags spelled as the user's release spells them
    spellings: tuple[str, ...] = ()  # older spellings, when the release is unknown


@dataclass(frozen=True)
class NearMiss:
    """A finding close to a paste that got no known match, and why it was not taken."""

    finding: FindingRecord
    score: float
    why_not: str
    fixes: tuple[FixToTry, ...] = ()  # its fixes but those known not to help


def worth_trying(fix: FixRecord) -> bool:
    """Not known to fail: it helped where it was reported, or nobody has tried it yet."""
    return fix.outcome.helps or not fix.outcome.tried


@dataclass(frozen=True)
class TiedCause:
    """A finding of one cause that the paste matched as well as a finding of another
    (`walk.tied_causes`): neither the error nor the setup tells the two apart, and which
    comes first is only a matter of the evidence for their fixes."""

    finding: FindingRecord
    ranks: tuple[int, ...]  # where its fixes stand in the answer

    @property
    def text(self) -> str:
        fixes = ", ".join(f"#{rank}" for rank in self.ranks)
        cause = f": {self.finding.cause}" if self.finding.cause else ""
        return f"{self.finding.title}{cause} (fix {fixes})"


@dataclass(frozen=True)
class NotAsLaunched:
    """A flag the server ran with another value than the launch command gave it."""

    flag: str  # as the answer spells it, "--kv-cache-dtype"
    launched: str
    ran: str


@dataclass(frozen=True)
class Diagnosis:
    match: MatchLevel
    signature: Signature | None
    fixes: tuple[RankedFix, ...]
    not_helpful: tuple[NotHelpful, ...]
    questions: tuple[Question, ...]
    context: Context
    candidates: tuple[Candidate, ...] = ()
    different_setup: tuple[SetupDifference, ...] = ()  # why a match is not "known" here
    # Or: the error alone matched, and the finding's setup is all unknown here.
    setup_not_known: tuple[SetupDifference, ...] = ()
    # Or: the finding ran out of memory, and the paste shows another error and no memory
    # running out (its words matched: what the stack prints around any failure).
    no_memory_ran_out: bool = False
    # Or: the finding's sample prints the same message from other code, and the message is
    # one every error of its kind prints (PyTorch's out-of-memory line).
    ordinary_message_elsewhere: bool = False
    nearest: tuple[NearMiss, ...] = ()  # for "none": the closest findings, never as fixes
    search_words: tuple[str, ...] = ()  # for "none": words of the paste the knowledge base has
    launch_flags: tuple[tuple[str, str], ...] = ()  # the context's flags, spelled as the answer
    not_as_launched: tuple[NotAsLaunched, ...] = ()  # what the server ran otherwise
    # The error as pasted, numbers and the type's own name kept (fingerprint.quoted_error).
    error_lines: tuple[str, ...] = ()
    # The raised type as pasted where the signature gives its newer name (RuntimeError for
    # AcceleratorError): the answer names the error as the user knows it.
    type_as_pasted: str = ""
    # Flags the server refused, or that no release knows (flag_check): no finding needed.
    flag_problems: tuple[FlagProblem, ...] = ()
    # Launch flags the error's own message names ("try increasing `max_model_len`").
    named_flags: tuple[NamedFlag, ...] = ()
    # Faults of the GPU or its driver the paste shows (Xid lines, ECC errors): the host
    # failed, and no server setting fixes a hardware or driver one.
    host_faults: tuple[HostFault, ...] = ()
    # Builds the paste shows holding no machine code for its GPU (PyTorch's own warning,
    # a wheel's or the toolkit's CUDA release): the install is the fix, not a flag.
    build_support: tuple[BuildSupport, ...] = ()
    # Code the error says runs only on other GPUs ("requires SM100/SM103, got sm120"): a
    # backend, kernel or quantization that runs here is the fix, or another GPU.
    gpu_requirements: tuple[GpuRequirement, ...] = ()
    # The GPU's memory as the paste's out-of-memory messages give it, and what it shows
    # (another process holding it, fragmentation, an allocation larger than the GPU).
    memory_at_failure: tuple[OutOfMemory, ...] = ()
    # Where the memory went as the server started (its log's stages), for an error about memory.
    memory_log: tuple[RankMemory, ...] = ()
    memory_readings: tuple[MemoryReading, ...] = ()
    # The paste's only error says that another process failed (traceback.only_wrappers):
    # the line, quoted. Its cause was printed elsewhere in the log, or a signal killed it.
    cause_not_pasted: str = ""
    killed_by: str = ""  # "SIGKILL", where the paste says a signal killed the process
    # The log warnings, as printed, that the match was made through: the paste's error
    # matched no finding itself (`fingerprint.log_warnings_beside_errors`).
    through_warnings: tuple[str, ...] = ()
    # Findings of different causes that lead the match together (`walk.tied_causes`).
    tied_causes: tuple[TiedCause, ...] = ()

    @property
    def tied_note(self) -> str:
        """What every channel says above the tied causes (empty without a tie)."""
        if not self.tied_causes:
            return ""
        count = len(self.tied_causes)
        if self.verdict is Verdict.KNOWN:
            told = f"{count} known causes give this error"
        else:  # only like the known issues: their causes are candidates, not the answer
            told = f"The paste is as much like findings of {count} causes"
        return (
            f"{told}, and neither the paste nor the setup tells them apart: check which one "
            "is yours before trying the first fix (their order is only the evidence for their "
            "fixes)."
        )

    @property
    def cause_elsewhere(self) -> tuple[str, str] | None:
        """(heading, advice) for a paste whose errors only say another process failed."""
        if not self.cause_not_pasted:
            return None
        return CAUSE_ELSEWHERE.get(self.killed_by, CAUSE_ELSEWHERE[""])

    @property
    def refused_flags(self) -> tuple[FlagProblem, ...]:
        """The flag problems the paste shows the server refusing: its error, explained."""
        return tuple(p for p in self.flag_problems if p.refused)

    @property
    def verdict_label(self) -> str:
        """The verdict of a match as every channel words it (not for "none")."""
        if self.verdict is Verdict.DIFFERENT_SETUP:
            differences = "; ".join(d.describe() for d in self.different_setup)
            return f"Same error, different setup ({differences})"
        if self.verdict is Verdict.KNOWN:
            return "Known issue"
        notes = []
        if self.setup_not_known:
            unknown = ", ".join(d.named() for d in self.setup_not_known)
            notes.append(f"its setup, not known here: {unknown}")
        if self.no_memory_ran_out:
            notes.append(NO_MEMORY_RAN_OUT)
        if self.ordinary_message_elsewhere:
            notes.append(ORDINARY_MESSAGE_ELSEWHERE)
        if self.through_warnings:
            notes.append(f"through {THROUGH_WARNING}")
        return "Similar to a known issue" + (f" ({'; '.join(notes)})" if notes else "")

    @property
    def verdict(self) -> Verdict:
        if self.match is MatchLevel.NONE:
            return Verdict.NONE
        if self.different_setup:
            return Verdict.DIFFERENT_SETUP
        return Verdict(str(self.match))


def first_fix(fixes: Sequence[RankedFix]) -> RankedFix | None:
    """The fix the user would try first (one already in their command is not it)."""
    return fixes[0] if fixes and not fixes[0].already_applied else None


def summary_is_changes(summary: str, changes: Sequence[str]) -> bool:
    """The fix's summary says exactly its changes: flags ("--kv-cache-dtype bf16") or the
    one change of a fix in words ("move to a GPU of compute capability 8.0")."""
    return " ".join(changes) == summary


def changes_beside(summary: str, changes: Sequence[str]) -> tuple[str, ...]:
    """The changes a text answer lists under a fix's summary: none when the summary is
    the changes themselves ("--kv-cache-dtype bf16 --page-size 64"), and never one the
    summary already writes out ("raise --mem-fraction-static in steps of 0.05", a patch)."""
    if summary_is_changes(summary, changes):
        return ()
    return tuple(change for change in changes if not _written_in(change, summary))


def _written_in(change: str, summary: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(change)}(?![\w-])", summary) is not None


__all__ = [
    "CAUSE_ELSEWHERE",
    "NO_MEMORY_RAN_OUT",
    "ORDINARY_MESSAGE_ELSEWHERE",
    "PROPOSED",
    "Diagnosis",
    "NotAsLaunched",
    "NearMiss",
    "NotHelpful",
    "PathStep",
    "Question",
    "RankedFix",
    "Verdict",
    "WhyStep",
    "WithheldChange",
    "changes_beside",
    "first_fix",
    "summary_is_changes",
]
