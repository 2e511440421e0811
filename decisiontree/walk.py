"""Fixes ranked by walking the decision graph from the findings a paste matched.

The walk starts at each matched finding, weighted by its match score, and follows
the graph's edges:

    signature -> finding F --> F's fixes
                          \\-> cause C -> finding G (another symptom of C) -> G's fixes

A path scores the product of what it crosses: the match score, the condition
factor of every finding on it (met / unknown / contradicted in the user's
context; a contradicted condition only derived from where the finding was seen
weighs `contradicted_derived`), `same_cause_step` for the step to another symptom
of the cause, and the evidence for the fix's remedy over every symptom of the cause
(reported outcome, validated runs, the user's architecture counting most, and votes). So
a change validated against one symptom of a cause ranks for all its symptoms.
Each remedy keeps its best path, and that path is the one the answer draws.

`plain=True` ranks as FixGraph first did, a lookup table (the matched findings'
own fixes, each with its own evidence), for the benchmark's comparison.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from decisiontree.answer import (
    NotHelpful,
    PathStep,
    RankedFix,
    TiedCause,
    WhyStep,
    WithheldChange,
)
from decisiontree.conditions import framework_of
from decisiontree.context import Context
from decisiontree.documents.changes import with_steps, with_values
from decisiontree.flag_values import FlagValue
from decisiontree.graph import KnowledgeGraph, Node, remedy_key
from decisiontree.launch import writable
from decisiontree.match import Candidate, MatchLevel
from decisiontree.records import (
    Change,
    ChangeAction,
    Condition,
    Evidence,
    FindingRecord,
    FixRecord,
    Outcome,
)
from decisiontree.setup import State, applicability, assess, normal_value
from decisiontree.spelling import (
    condition_in_words,
    flag_names,
    older_spellings,
    respell,
    spell_change,
)
from decisiontree.vocabulary import Vocabulary

TUNING_FILE = Path(__file__).resolve().parent / "data" / "ranking.json"


@dataclass(frozen=True)
class Tuning:
    """The factors of data/ranking.json (each with its reason there)."""

    condition: Mapping[State, float]
    contradicted_derived: float
    reported: Mapping[str, float]
    same_arch: float
    unknown_arch: float
    other_arch: float
    max_runs: int
    per_vote: float
    max_votes: int
    min_evidence: float
    same_cause_step: float
    relative_cutoff: float
    nearest_specificity: float
    tie_margin: float


@cache
def tuning() -> Tuning:
    data: dict[str, Any] = json.loads(TUNING_FILE.read_text(encoding="utf-8"))

    def value(*path: str) -> Any:
        node: Any = data
        for part in path:
            node = node[part]
        return node["value"]

    return Tuning(
        condition={state: value("condition", str(state)) for state in State},
        contradicted_derived=value("condition", "contradicted_derived"),
        reported={name: value("reported", name) for name in data["reported"]},
        same_arch=value("validated", "same_arch"),
        unknown_arch=value("validated", "unknown_arch"),
        other_arch=value("validated", "other_arch"),
        max_runs=value("validated", "max_runs"),
        per_vote=value("feedback", "per_vote"),
        max_votes=value("feedback", "max_votes"),
        min_evidence=value("min_evidence"),
        same_cause_step=value("same_cause_step"),
        relative_cutoff=value("relative_cutoff"),
        nearest_specificity=value("nearest_specificity"),
        tie_margin=value("tie_margin"),
    )


# --- visiting findings ------------------------------------------------------------


@dataclass(frozen=True)
class Visit:
    """A finding the walk reached, with the weight and the way it got there."""

    finding: FindingRecord
    matched: FindingRecord  # the finding the paste matched (itself on a direct visit)
    score: float
    reach: float  # the match score of the finding the walk came from, before the context
    steps: tuple[WhyStep, ...]
    path: tuple[PathStep, ...]
    runner_up: bool = False  # reached from a match listed only after a better one
    # Matched as printed: a sample of the same fingerprint, or a reviewer's link.
    as_printed: bool = False

    @property
    def direct(self) -> bool:
        return self.finding.id == self.matched.id


@dataclass(frozen=True)
class Walk:
    fixes: tuple[RankedFix, ...]
    not_helpful: tuple[NotHelpful, ...]
    visits: tuple[Visit, ...]  # every finding shown, best first


def walk(
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
    *,
    plain: bool = False,
    values: Sequence[FlagValue] = (),
) -> Walk:
    """Fixes that help, best first (already applied ones last), those that do not, and why.
    `values`: what the paste's figures give flags that a fix names without a value."""
    visits = shown(visit_findings(candidates, context, graph, vocabulary, plain=plain))
    helpful: list[RankedFix] = []
    useless: list[NotHelpful] = []
    for visit in visits:
        cause = graph.cause_of(visit.finding.id)
        elsewhere = other_setup(visit.finding, context, vocabulary)  # the same for each fix
        for fix in carried_fixes(visit, graph):
            if plain:
                evidence = graph.evidence_of(fix)
            else:
                evidence = graph.remedy_evidence(cause, fix.changes)
            verdict = unhelpful_reason(fix, evidence, context.arch, visit)
            if verdict:
                useless.append(_not_helpful(fix, visit.finding, verdict, context))
            else:
                helpful.append(ranked(visit, fix, evidence, context, vocabulary, values, elsewhere))
    guesses = {visit.finding.id for visit in visits if visit.runner_up}
    fixes = order(helpful, after={fix.fix.id for fix in helpful if fix.finding.id in guesses})
    return Walk(fixes, dedupe_not_helpful(useless), tuple(visits))


def tied_causes(result: Walk, graph: KnowledgeGraph) -> tuple[TiedCause, ...]:
    """The matched findings of different causes that lead with the same score (within
    `tie_margin`: what the findings' own wording moves the matcher's score by), each with
    the ranks of its fixes: the paste and the setup prefer none of them, so the answer's
    order between them is only their fixes' evidence. Empty unless two causes tie."""
    direct = [visit for visit in result.visits if visit.direct and not visit.runner_up]
    if len(direct) < 2:
        return ()
    floor = max(visit.score for visit in direct) * (1 - tuning().tie_margin)
    leading: dict[Node, Visit] = {}
    for visit in direct:
        if visit.score >= floor:
            leading.setdefault(graph.cause_of(visit.finding.id), visit)
    ranks: dict[int, list[int]] = defaultdict(list)
    for fix in result.fixes:
        if not fix.already_applied and not fix.runner_up:
            ranks[fix.finding.id].append(fix.rank)
    tied = tuple(
        TiedCause(visit.finding, tuple(ranks[visit.finding.id]))
        for visit in leading.values()
        if ranks[visit.finding.id]
    )
    return tied if len(tied) > 1 else ()


def carried_fixes(visit: Visit, graph: KnowledgeGraph) -> tuple[FixRecord, ...]:
    """The fixes of a visited finding that apply to the symptom the paste matched.

    From another symptom of the cause, a fix that undoes one of that symptom's own
    triggers (it changes a flag the sibling's conditions name and the matched finding's
    do not, e.g. the memory fraction an out-of-memory needed) cured that symptom, not
    the cause: it stays behind. The flag nodes the remedy and the conditions share say so.
    """
    fixes = graph.fixes_of(visit.finding.id)
    if visit.direct:
        return fixes
    own = flags_of(graph.conditions_of(visit.finding.id))
    triggers = own - flags_of(graph.conditions_of(visit.matched.id))
    return tuple(fix for fix in fixes if not triggers & set(flag_names(fix.changes)))


def flags_of(conditions: Iterable[Condition]) -> set[str]:
    return {c.key[5:] for c in conditions if c.key.startswith("flag.")}


def leading_visit(fixes: Sequence[RankedFix], visits: Sequence[Visit]) -> Visit:
    """The visit behind the first fix (or the best visit when no fix helps)."""
    if fixes:
        first = fixes[0].finding.id
        return next((v for v in visits if v.finding.id == first), visits[0])
    return visits[0]


def visit_findings(
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
    *,
    plain: bool = False,
) -> list[Visit]:
    """Every finding reachable from the matches, each by its best path."""
    best: dict[int, Visit] = {}
    for candidate in candidates:
        if candidate.level is MatchLevel.NONE and not candidate.runner_up:
            continue
        start = _start(candidate, context, graph, vocabulary)
        _keep(best, start)
        if plain or candidate.runner_up:
            continue  # a runner-up's own fixes only: its cause's other symptoms add guesses
        cause = graph.cause_of(start.finding.id)
        for sibling_id in graph.findings_of_cause(cause):
            if sibling_id != start.finding.id:
                _keep(best, _sibling(start, graph.findings[sibling_id], context, graph, vocabulary))
    return sorted(best.values(), key=lambda v: (-v.score, v.finding.id))


def shown(visits: Sequence[Visit]) -> list[Visit]:
    """Findings reached from a match nearly as good as the best one.

    Judged on the match score before the context: a close match on a contradicted
    setup stays in view (below the ones that fit, and the verdict says so). A runner-up
    (`decisiontree.match.shortlist`) stays too, however far below: it is there to be
    listed after the first.
    """
    if not visits:
        return []
    floor = max(v.reach for v in visits) * tuning().relative_cutoff
    return [v for v in visits if v.reach >= floor or v.runner_up]


def _keep(best: dict[int, Visit], visit: Visit) -> None:
    held = best.get(visit.finding.id)
    if held is None or visit.score > held.score:
        best[visit.finding.id] = visit


def _start(
    candidate: Candidate, context: Context, graph: KnowledgeGraph, vocabulary: Vocabulary
) -> Visit:
    finding = graph.findings[candidate.finding_id]
    factor, conditions = condition_steps(graph.conditions_of(finding.id), context, vocabulary)
    steps = (
        WhyStep("signature", candidate.explain()),
        WhyStep("cause", spelled_text(finding.cause, context, finding)),
        *conditions,
    )
    path = (
        PathStep("signature", "the pasted error"),
        PathStep("finding", finding.title, finding.id),
    )
    return Visit(
        finding,
        finding,
        candidate.score * factor,
        candidate.score,
        steps,
        path,
        runner_up=candidate.runner_up,
        as_printed=candidate.layer in ("linked", "fingerprint"),
    )


def _sibling(
    start: Visit,
    sibling: FindingRecord,
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
) -> Visit:
    factor, conditions = condition_steps(graph.conditions_of(sibling.id), context, vocabulary)
    step = tuning().same_cause_step
    shared = WhyStep(
        "shared",
        f"same cause as finding {sibling.id} ({sibling.title}), another symptom of it (x{step:g})",
    )
    path = (
        *start.path,
        PathStep("cause", spelled_text(sibling.cause or start.finding.cause, context, sibling)),
        PathStep("finding", sibling.title, sibling.id),
    )
    steps = (*start.steps, shared, *conditions)
    score = start.score * step * factor
    return Visit(sibling, start.finding, score, start.reach, steps, path)


def condition_steps(
    conditions: Iterable[Condition], context: Context, vocabulary: Vocabulary
) -> tuple[float, tuple[WhyStep, ...]]:
    """The product of the condition factors, and a step of `why` per condition."""
    factor = 1.0
    steps: list[WhyStep] = []
    for condition in conditions:
        state = assess(condition, context, vocabulary)
        factor *= condition_factor(condition, state)
        steps.append(condition_step(condition, state, context, vocabulary))
    return factor, tuple(steps)


def condition_step(
    condition: Condition,
    state: State,
    context: Context,
    vocabulary: Vocabulary,
    here: str | None = None,
) -> WhyStep:
    detail = condition_detail(condition, state, context, vocabulary, here)
    return WhyStep("condition", detail, condition.key, shown_value(condition), state)


def condition_factor(condition: Condition, state: State) -> float:
    """A stated condition the setup contradicts says the fix is for another setup; a
    derived one only that the finding was seen on another (the verdict says both)."""
    if state is State.CONTRADICTED and condition.derived:
        return tuning().contradicted_derived
    return tuning().condition[state]


def shown_value(condition: Condition) -> str:
    return f"!={condition.value}" if condition.negate else condition.value


def condition_detail(
    condition: Condition,
    state: State,
    context: Context,
    vocabulary: Vocabulary,
    here: str | None = None,
) -> str:
    """`here`: what the setup has, where it is not the context's value (a flag left unset
    judged at its default)."""
    # A flag is named in the user's framework spelling (`--dsa-*` vs `--nsa-*`).
    needs = condition_in_words(condition, context.framework, context.spelling_version)
    where = f"applies when {needs}"
    if condition.derived:
        where = f"seen where {needs} (not stated as needed)"
    if here is not None:
        return f"{where}; here {here} ({state})"
    if state is State.UNKNOWN:
        return f"{where}; not known here"
    return f"{where}; here {context.get(condition.key)} ({state})"


# --- fixes ---------------------------------------------------------------------


def is_proposed(fix: FixRecord) -> bool:
    return fix.outcome is Outcome.PROPOSED


def unhelpful_reason(fix: FixRecord, evidence: Evidence, arch: str | None, visit: Visit) -> str:
    where = f"finding {visit.finding.id} ({visit.finding.title})"
    if not visit.direct:
        where += ", another symptom of the same cause"
    if not fix.outcome.helps and fix.outcome.tried:
        label = "made it worse" if fix.outcome is Outcome.WORSE else "did not help"
        return f"{label} in {where}"
    failed = _runs(evidence.validated_failed, arch)
    if arch and failed and not _runs(evidence.validated_passed, arch):
        return f"failed {failed} validation run(s) on {arch} and never passed there"
    return ""


def ranked(
    visit: Visit,
    fix: FixRecord,
    evidence: Evidence,
    context: Context,
    vocabulary: Vocabulary,
    values: Sequence[FlagValue] = (),
    for_other_setup: tuple[str, ...] | None = None,
) -> RankedFix:
    """`for_other_setup`: `other_setup` of the visit's finding, where already known."""
    factor, detail = evidence_factor(fix, evidence, context.arch)
    applied = already_applied(fix, context, vocabulary)
    if applied:
        detail += "; " + applied_where(fix, context)
    fits, withheld = fitted_changes(fix.changes, context, visit.finding)
    framework, version = spelling_release(context, visit.finding)
    stepped = with_steps(fits, fix.summary, context.flags, framework)
    fits, taken = with_values(fits, fix.summary, values, framework, stepped)
    summary = spelled_summary(fix, context, visit.finding)
    from_paste = tuple(
        WhyStep("value", respell(value.describe(), framework, version)) for value in taken
    )
    return RankedFix(
        rank=0,
        score=round(visit.score * factor, 4),
        fix=fix,
        # A flag named without a value to write ("raise --x") is said by the summary alone.
        command_changes=tuple(
            spell_change(c, framework, version) for c in fits if writable(c, framework)
        ),
        finding=visit.finding,
        why=(*visit.steps, WhyStep("fix", detail), *from_paste),
        already_applied=applied,
        changes=fits,
        summary=summary,
        withheld=withheld,
        spellings=older_spellings(flag_names(fits), framework, version),
        path=(*visit.path, PathStep("fix", summary, fix.id)),
        proposed=is_proposed(fix) and not has_evidence(fix, evidence),
        for_other_setup=(
            other_setup(visit.finding, context, vocabulary)
            if for_other_setup is None
            else for_other_setup
        ),
        runner_up=visit.runner_up,
        as_printed=visit.as_printed and visit.direct,
    )


def other_setup(
    finding: FindingRecord, context: Context, vocabulary: Vocabulary
) -> tuple[str, ...]:
    """The conditions `finding` states (not those read off where it was seen) that the
    user's setup contradicts, each with the user's value."""
    said = (
        f"{condition_in_words(c, context.framework, context.spelling_version)} "
        f"(yours: {context.get(c.key)})"
        for c in finding.conditions
        if not c.derived and assess(c, context, vocabulary) is State.CONTRADICTED
    )
    return tuple(dict.fromkeys(said))


def spelling_release(context: Context, finding: FindingRecord) -> tuple[str | None, str | None]:
    """The framework and release the answer spells flags for."""
    framework = context.framework or framework_of(finding.conditions)
    return framework, context.spelling_version if context.framework else None


def spelled_summary(fix: FixRecord, context: Context, finding: FindingRecord) -> str:
    """A fix's summary with its flags named as the rest of the answer names them."""
    return spelled_text(fix.summary, context, finding)


def spelled_text(text: str, context: Context, finding: FindingRecord) -> str:
    """A finding's words (its cause, a fix's summary) with the flags they name written as
    the rest of the answer writes them: one spelling per answer."""
    framework, version = spelling_release(context, finding)
    return respell(text, framework, version, source=framework_of(finding.conditions))


def fitted_changes(
    changes: Iterable[Change], context: Context, finding: FindingRecord
) -> tuple[tuple[Change, ...], tuple[WithheldChange, ...]]:
    """The changes that can go into the user's command, and those that cannot (with why)."""
    framework, version = spelling_release(context, finding)
    fits: list[Change] = []
    withheld: list[WithheldChange] = []
    for change in changes:
        verdict = applicability(change, context, framework_of(finding.conditions))
        if verdict.applies:
            fits.append(verdict.change)
        else:
            spelled = spell_change(verdict.change, framework, version)
            withheld.append(WithheldChange(verdict.change, spelled, verdict.reason))
    return tuple(fits), tuple(withheld)


def _not_helpful(
    fix: FixRecord, finding: FindingRecord, reason: str, context: Context
) -> NotHelpful:
    framework, version = spelling_release(context, finding)
    spelled = tuple(spell_change(c, framework, version) for c in fix.changes)
    return NotHelpful(fix, spelled, finding, reason, spelled_summary(fix, context, finding))


def has_evidence(fix: FixRecord, evidence: Evidence) -> bool:
    """Anything beyond a proposal: a report that it helped, a passed run, a vote."""
    reported = tuning().reported.get(str(fix.outcome), 0.0) > 0
    passed = any(count for _, count in evidence.validated_passed)
    return reported or passed or evidence.feedback_helped > 0


def evidence_factor(fix: FixRecord, evidence: Evidence, arch: str | None) -> tuple[float, str]:
    """Reported outcome + validated runs (same arch counts most) + user feedback."""
    knobs = tuning()
    points = knobs.reported.get(str(fix.outcome), 0.0)
    parts = [f"reported: {fix.outcome}"]
    validated, validated_note = _validation_points(evidence, arch)
    points += validated
    parts += validated_note
    helped = min(evidence.feedback_helped, knobs.max_votes)
    not_helped = min(evidence.feedback_not_helped, knobs.max_votes)
    points += knobs.per_vote * (helped - not_helped)
    if helped or not_helped:
        parts.append(
            f"feedback: {evidence.feedback_helped} helped, {evidence.feedback_not_helped} did not"
        )
    factor = max(knobs.min_evidence, points)
    return factor, "; ".join(parts) + f" (evidence x{factor:.2f})"


def _validation_points(evidence: Evidence, arch: str | None) -> tuple[float, list[str]]:
    knobs = tuning()
    cap = knobs.max_runs
    passed_here = min(_runs(evidence.validated_passed, arch), cap) if arch else 0
    failed_here = min(_runs(evidence.validated_failed, arch), cap) if arch else 0
    passed_all = sum(count for _, count in evidence.validated_passed)
    passed_elsewhere = min(passed_all - passed_here, cap)
    per_other = knobs.other_arch if arch else knobs.unknown_arch
    points = knobs.same_arch * (passed_here - failed_here) + per_other * passed_elsewhere
    notes = (
        [f"validated on {arch}: {passed_here} passed, {failed_here} failed"]
        if (passed_here or failed_here)
        else []
    )
    if passed_elsewhere:
        notes.append(f"validated elsewhere: {passed_all - passed_here} passed")
    return points, notes


def _runs(runs: Iterable[tuple[str, int]], arch: str | None) -> int:
    return sum(count for run_arch, count in runs if arch and run_arch.lower() == arch.lower())


def already_applied(fix: FixRecord, context: Context, vocabulary: Vocabulary) -> bool:
    """True when every change only sets a flag to the value the context already has."""
    if not fix.changes:
        return False
    return all(_change_in_place(change, context, vocabulary) for change in fix.changes)


def applied_where(fix: FixRecord, context: Context) -> str:
    """Where an applied fix's values come from: the launch typed, or what the paste shows
    the server ran with (a log's printout, an error's own repr of its settings)."""
    ran = ("log", "message")
    if any(context.sources.get(f"flag.{change.name}") in ran for change in fix.changes):
        return "the paste shows it already ran with this"
    return "already in your launch command"


def _change_in_place(change: Change, context: Context, vocabulary: Vocabulary) -> bool:
    if change.action is not ChangeAction.SET_FLAG:
        return False
    key = f"flag.{change.name}"
    have = normal_value(context.get(key), key, vocabulary)
    return bool(have) and have == normal_value(change.value or "true", key, vocabulary)


def order(fixes: Iterable[RankedFix], after: Set[int] = frozenset()) -> tuple[RankedFix, ...]:
    """Best first; a remedy reached by several paths keeps its best one. The fixes named
    in `after` (by fix id: those of a runner-up match) come after all others."""
    best: dict[tuple[object, ...], RankedFix] = {}

    def key_of(fix: RankedFix) -> tuple[object, ...]:
        return (fix.fix.id in after, *sort_key(fix))

    for fix in fixes:
        key = remedy_of(fix.fix)
        if key not in best or key_of(fix) < key_of(best[key]):
            best[key] = fix
    ordered = sorted(best.values(), key=key_of)
    return tuple(dataclasses.replace(fix, rank=i) for i, fix in enumerate(ordered, start=1))


def remedy_of(fix: FixRecord) -> tuple[object, ...]:
    """Fixes that make the same changes are one remedy; a fix told in words is its own."""
    return remedy_key(fix.changes) if fix.changes else ("fix", fix.id)


def sort_key(fix: RankedFix) -> tuple[bool, bool, bool, bool, float, bool, int, int]:
    # A fix already in place, or none of whose changes fits this setup, is no next step;
    # one whose finding states it is for another setup comes after every fix whose
    # finding fits (its evidence is from that setup); a proposal never outranks a fix
    # with evidence, whatever the scores. At scores equal to the four places an answer
    # shows, the finding that holds the error as printed (its fingerprint) comes first,
    # then the older finding.
    return (
        fix.already_applied,
        fix.fits_nothing,
        bool(fix.for_other_setup),
        fix.proposed,
        -fix.score,
        not fix.as_printed,
        fix.finding.id,
        fix.fix.id,
    )


def dedupe_not_helpful(entries: Iterable[NotHelpful]) -> tuple[NotHelpful, ...]:
    seen: dict[int, NotHelpful] = {}
    for entry in entries:
        seen.setdefault(entry.fix.id, entry)
    return tuple(seen.values())


__all__ = ["Tuning", "Visit", "Walk", "leading_visit", "tuning", "visit_findings", "walk"]
