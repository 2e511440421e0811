"""Before a launch runs: the known issues its setup meets, from the findings' conditions.

A finding states what its cause needs (`gpu.arch = sm_120`, `model.arch = glm_moe_dsa`,
`flag.kv-cache-dtype != bf16`). A launch whose GPU, model, framework and flags meet every
one of them walks into that finding: it is named before anything runs, with its fixes
applied to the launch. Where the launch leaves a condition open (a flag it does not set,
whose default the release decides), the finding "may" apply, and the open conditions say
what would settle it. A condition the launch contradicts rules the finding out.

A flag the launch does not set has its release's default, where the flag tables give one.
Where the framework chooses at start-up (`auto`, no default), a finding that needs the flag
at some value is ruled out (the cause needs a setting this launch does not make), and one
that needs it at anything but some value stays open: the framework's choice decides.

A finding that states nothing beyond the framework (an out-of-memory any server may meet)
says nothing about this launch and is not named; nor is one that records a working launch.
Conditions nobody stated, read off where a finding was seen (`derived`), say what its cause
needs no more than that: they never name a finding, but one seen with a setting this launch
contradicts (an FP8 KV cache, where the launch sets BF16) is left out.
Everything here is read off the graph: no paste, no matching. Beside the findings, three
facts need none: whether the model's weights fit each GPU's share (`model_weights`), what
the builds must be made with to run on the GPU at all (`build_support.cuda_needed`), and the
backends it chooses that its framework refuses on its GPU (`backend_gpus`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from decisiontree import flags
from decisiontree.answer import PathStep, RankedFix, WhyStep
from decisiontree.backend_gpus import backend_requirements
from decisiontree.build_support import cuda_needed
from decisiontree.context import Context
from decisiontree.flag_check import FlagProblem, flag_problems
from decisiontree.gpu_memory import MemoryReading
from decisiontree.gpu_requirement import GpuRequirement
from decisiontree.graph import KnowledgeGraph
from decisiontree.model_weights import weights_reading
from decisiontree.records import Condition, FindingRecord
from decisiontree.setup import UNDECIDED_VALUES, State, assess, gpu_bytes, normal_value
from decisiontree.vocabulary import Vocabulary
from decisiontree.walk import (
    Visit,
    condition_step,
    order,
    ranked,
    spelled_text,
    unhelpful_reason,
)

# Conditions that hold for every launch of a framework: met, they single nothing out.
GENERAL_KEYS = frozenset({"framework"})
# A finding of this kind records a launch that works (the runbook's), not an issue.
WORKING_KINDS = frozenset({"works"})


@dataclass(frozen=True)
class LaunchRisk:
    """A known issue this launch's setup meets, or may meet."""

    finding: FindingRecord
    met: tuple[Condition, ...]  # the finding's conditions this launch meets
    open: tuple[Condition, ...]  # those it leaves open: empty means it meets them all
    why: tuple[WhyStep, ...]  # the cause, and a step per condition
    fixes: tuple[RankedFix, ...]  # best first, applied to this launch

    @property
    def certain(self) -> bool:
        return not self.open


@dataclass(frozen=True)
class LaunchCheck:
    context: Context
    flag_problems: tuple[FlagProblem, ...]  # flags no release of the framework knows
    risks: tuple[LaunchRisk, ...]  # those it meets first, the most specific first
    more: int = 0  # risks beyond the first SHOWN, counted but not told
    # Whether the model's weights fit each GPU's share (None: model or GPU size unknown).
    weights: MemoryReading | None = None
    # What builds must be made with to run on the GPU at all ("" where any will do).
    builds: str = ""
    # Backends the launch chooses that its framework refuses on its GPU.
    gpu_requirements: tuple[GpuRequirement, ...] = ()


# A launch check tells at most this many issues, the best first: a page, a thread or a
# bot's reply past that is not read, and each told one walks its fixes.
SHOWN = 20


def check_launch(context: Context, graph: KnowledgeGraph, vocabulary: Vocabulary) -> LaunchCheck:
    """The known issues a launch in `context` meets before it runs."""
    judged: dict[Condition, _Judged] = {}  # findings share conditions: each judged once

    def judge(condition: Condition) -> _Judged:
        if condition not in judged:
            judged[condition] = _judge(condition, context, vocabulary)
        return judged[condition]

    def state(condition: Condition) -> State:
        return judge(condition).state

    found = [
        (finding, met, open_)
        for finding in graph.findings.values()
        if finding.kind not in WORKING_KINDS
        # The record's own conditions: a fact both stated and derived is judged alike both
        # ways, so the graph's deduplicated view is needed only for the risks told.
        and (held := _held(finding.conditions, state)) is not None
        for met, open_ in (held,)
    ]
    found.sort(key=lambda f: (bool(f[2]), len(f[2]), -len(f[1]), f[0].id))
    risks = tuple(
        _risk(finding, met, open_, judge, context, graph, vocabulary)
        for finding, met, open_ in found[:SHOWN]
    )
    weights = weights_reading(context, vocabulary, gpu_bytes(context, vocabulary))
    more = max(len(found) - SHOWN, 0)
    builds = cuda_needed(context.arch, vocabulary) if context.arch else ""
    return LaunchCheck(
        context,
        flag_problems("", context),
        risks,
        more,
        weights,
        builds,
        backend_requirements(context, vocabulary),
    )


def _held(
    conditions: Sequence[Condition], state: Callable[[Condition], State]
) -> tuple[tuple[Condition, ...], tuple[Condition, ...]] | None:
    """The stated conditions this launch meets and those it leaves open; None where it
    contradicts one, or meets nothing particular to it."""
    if any(c.derived and state(c) is State.CONTRADICTED for c in conditions):
        return None  # seen on another setup than this launch: it says nothing of this one
    met: list[Condition] = []
    left: list[Condition] = []
    for condition in conditions:
        if condition.derived:
            continue
        found = state(condition)
        if found is State.CONTRADICTED:
            return None
        (met if found is State.MET else left).append(condition)
    if not any(c.key not in GENERAL_KEYS for c in met):
        return None  # nothing particular to this launch is known to lead there

    def in_order(held: list[Condition]) -> tuple[Condition, ...]:
        return tuple(sorted(held, key=lambda c: (c.key, c.value)))

    return in_order(met), in_order(left)


def _risk(
    finding: FindingRecord,
    met: tuple[Condition, ...],
    left: tuple[Condition, ...],
    judge: Callable[[Condition], _Judged],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
) -> LaunchRisk:
    steps = (
        condition_step(condition, judged.state, context, vocabulary, judged.unset)
        for condition in graph.conditions_of(finding.id)
        for judged in (judge(condition),)
    )
    why = (WhyStep("cause", spelled_text(finding.cause, context, finding)), *steps)
    visit = Visit(
        finding,
        finding,
        1.0,
        1.0,
        why,
        (PathStep("finding", finding.title, finding.id),),
    )
    return LaunchRisk(finding, met, left, why, _fixes(visit, context, graph, vocabulary))


@dataclass(frozen=True)
class _Judged:
    state: State
    unset: str | None = None  # how a flag the launch leaves unset was judged


def _judge(condition: Condition, context: Context, vocabulary: Vocabulary) -> _Judged:
    """The condition's state for this launch, an unset flag taken at its default (a
    derived condition as written: an unset flag does not contradict where it was seen)."""
    state = assess(condition, context, vocabulary)
    if state is not State.UNKNOWN or condition.derived or not condition.key.startswith("flag."):
        return _Judged(state)
    name = condition.key.removeprefix("flag.")
    spec = flags.flag(name, context.framework)
    default = flags.default_in(spec, context.framework_version) if spec else None
    if (
        default is None
        or default.changed is not None  # the release does not settle it
        or default.value is None
        or normal_value(default.value) in UNDECIDED_VALUES
    ):
        # The framework chooses: a cause needing one value of it needs the user to set it.
        chooser = context.framework or "the framework"
        if default is not None and default.changed is not None:
            how = f"not set ({default.describe()}; your release is not known)"
        else:
            how = f"not set: {chooser} chooses at start-up"
        return _Judged(State.UNKNOWN if condition.negate else State.CONTRADICTED, how)
    at_default = context.with_answer(condition.key, default.value)
    return _Judged(assess(condition, at_default, vocabulary), f"not set, so {default.value}")


def _fixes(
    visit: Visit, context: Context, graph: KnowledgeGraph, vocabulary: Vocabulary
) -> tuple[RankedFix, ...]:
    """The finding's fixes that help, ranked as an answer ranks them, for this launch."""
    cause = graph.cause_of(visit.finding.id)
    helpful: list[RankedFix] = []
    for fix in graph.fixes_of(visit.finding.id):
        evidence = graph.remedy_evidence(cause, fix.changes)
        if not unhelpful_reason(fix, evidence, context.arch, visit):
            helpful.append(ranked(visit, fix, evidence, context, vocabulary))
    return order(helpful)


__all__ = ["LaunchCheck", "LaunchRisk", "check_launch"]
