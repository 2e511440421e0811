"""What a finding implies beyond what it states: conditions, kind, status."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from decisiontree.documents.model import ExtractedFix, GpuMention
from decisiontree.gpu_memory import RAN_OUT
from decisiontree.records import ChangeAction, Condition, Outcome

_KINDS = {
    "crash": "crash", "crashes": "crash", "error": "crash", "failure": "crash", "fails": "crash",
    "hang": "hang", "hangs": "hang", "deadlock": "hang", "stuck": "hang", "timeout": "hang",
    "wrong output": "wrong_output", "wrong_output": "wrong_output", "wrong-output": "wrong_output",
    "garbage": "wrong_output", "garbage output": "wrong_output", "incorrect output": "wrong_output",
    "oom": "oom", "out of memory": "oom", "out-of-memory": "oom",
    "slow": "slow", "performance": "slow", "perf": "slow", "regression": "slow",
    "works": "works", "working": "works", "ok": "works", "success": "works", "recipe": "works",
}  # fmt: skip
_STATUSES = {
    "resolved": "resolved", "fixed": "resolved", "solved": "resolved", "done": "resolved",
    "closed": "resolved", "workaround": "workaround", "worked around": "workaround",
    "mitigated": "workaround", "partial": "workaround", "open": "open", "unresolved": "open",
    "unknown": "open", "investigating": "open", "wip": "open",
}  # fmt: skip
_HANG = re.compile(
    r"\b(?:hang|hangs|hung|hanging|deadlock\w*|stuck|freez\w*|never returns|watchdog|timed out)\b",
    re.IGNORECASE,
)
_WRONG = re.compile(
    r"\b(?:garbage|gibberish|nonsense|wrong (?:output|answers?|results?)|repeat(?:s|ing|ed) tokens?"
    r"|incoherent|corrupt(?:ed)? output|empty (?:output|responses?)|!!!!)",
    re.IGNORECASE,
)


def normal_kind(raw: str) -> str | None:
    return _KINDS.get(" ".join(raw.lower().replace("_", " ").split()))


def normal_status(raw: str) -> str | None:
    return _STATUSES.get(" ".join(raw.lower().split()))


def infer_kind(
    *, samples: Iterable[str], headline: str, has_before_after: bool, has_works: bool
) -> str:
    """The spec's rule: works / slow / oom / else crash; headlines may say hang or wrong output."""
    sample_text = "\n".join(samples)
    if has_works and not sample_text:
        return "works"
    if has_before_after and not sample_text:
        return "slow"
    if RAN_OUT.search(sample_text) or RAN_OUT.search(headline):
        return "oom"
    if _HANG.search(headline):
        return "hang"
    if _WRONG.search(headline):
        return "wrong_output"
    return "crash"


def infer_status(fixes: Iterable[ExtractedFix], kind: str) -> str:
    outcomes = {fix.outcome for fix in fixes}
    if Outcome.RESOLVES in outcomes or kind == "works":
        return "resolved"
    if Outcome.PARTIAL in outcomes:
        return "workaround"
    return "open"


def derived_conditions(
    *,
    gpus: Iterable[GpuMention],
    model_arch: str | None,
    framework: str | None,
    flags: Mapping[str, str | None],
    fixes: Iterable[ExtractedFix],
) -> tuple[Condition, ...]:
    """Conditions a finding implies when it states none (FINDINGS.md `When:` absent).

    Each is marked `derived`: it says where the bug was seen, not that the cause
    needs it (the walk weighs a contradicted one less than a stated one).
    """
    conditions: list[Condition] = []
    arches = {gpu.arch for gpu in gpus if gpu.arch}
    if len(arches) == 1:
        conditions.append(Condition("gpu.arch", arches.pop(), derived=True))
    if model_arch:
        conditions.append(Condition("model.arch", model_arch, derived=True))
    if framework:
        conditions.append(Condition("framework", framework, derived=True))
    conditions += _changed_flag_conditions(flags, fixes)
    return tuple(dict.fromkeys(conditions))


def _changed_flag_conditions(
    flags: Mapping[str, str | None], fixes: Iterable[ExtractedFix]
) -> list[Condition]:
    """A helping fix that changes a launched flag says the launched value is part of the cause."""
    conditions = []
    for fix in fixes:
        if not fix.outcome.helps:
            continue
        for change in fix.changes:
            launched = flags.get(change.name)
            if launched is None or change.action not in (
                ChangeAction.SET_FLAG,
                ChangeAction.REMOVE_FLAG,
            ):
                continue
            if change.action is ChangeAction.REMOVE_FLAG or (change.value or "true") != launched:
                conditions.append(Condition(f"flag.{change.name}", launched, derived=True))
    return conditions
