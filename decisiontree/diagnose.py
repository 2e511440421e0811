"""Diagnosis: from a pasted error and its context to ranked fixes, each with its path.

parse -> signatures -> candidate findings (exact, then similar) -> causes,
scored by how well the context meets their conditions -> fixes, ranked by
cause score x evidence. Fixes known not to help are listed apart; where an
unknown fact would change the first fix, a question says so.

Every score is a product of named factors, so the `why` list can show it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from decisiontree import versions
from decisiontree.conditions import framework_of, is_version_key
from decisiontree.context import Context
from decisiontree.fingerprint import Signature, signatures_of, text_terms
from decisiontree.flags import canonical_flag
from decisiontree.graph import KnowledgeGraph
from decisiontree.match import Candidate, MatchLevel, Query
from decisiontree.records import (
    Change,
    ChangeAction,
    Condition,
    Evidence,
    FindingRecord,
    FixRecord,
    Outcome,
)
from decisiontree.traceback import parse
from decisiontree.vocabulary import Vocabulary, load

# A weaker candidate is still shown if it comes this close to the best one.
RELATIVE_CUTOFF = 0.6
MAX_QUESTIONS = 3
OTHER_ANSWER = "other"

# --- scoring constants: each is a step in `why` -------------------------------


class State(StrEnum):
    MET = "met"
    UNKNOWN = "unknown"
    CONTRADICTED = "contradicted"


CONDITION_FACTOR = {State.MET: 1.25, State.UNKNOWN: 1.0, State.CONTRADICTED: 0.2}
# A proposal has no evidence yet: it ranks below anything reported to help (above nothing).
REPORTED = {Outcome.RESOLVES: 1.0, Outcome.PARTIAL: 0.5, Outcome.PROPOSED: 0.2}
VALIDATED_SAME_ARCH = 1.0  # per passed run on the user's architecture (at most 3 count)
VALIDATED_ANY_ARCH = 0.5  # per passed run when the user's architecture is unknown
VALIDATED_OTHER_ARCH = 0.25  # per passed run on another architecture
FEEDBACK = 0.1  # per user who said it helped / did not (at most 5 count)
MIN_EVIDENCE = 0.1

# Values that mean "the framework decides": not evidence either way.
UNDECIDED_VALUES = frozenset({"auto", "default", ""})
VALUE_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32"}

# SGLang reports the sparse-attention kernels it picked; the picked ones are what ran.
BACKEND_CHOICE = re.compile(
    r"Set (?:NSA|DSA) backends for (?P<kv>\w+) KV Cache:\s*prefill=(?P<prefill>\w+),"
    r"\s*decode=(?P<decode>\w+)"
)
KV_DTYPE_CHOICE = re.compile(r"Setting KV cache dtype to (?P<kv>\w+)")


# --- results ------------------------------------------------------------------


@dataclass(frozen=True)
class WhyStep:
    step: str  # "signature" | "cause" | "condition" | "fix"
    detail: str
    key: str | None = None
    value: str | None = None
    state: State | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"step": self.step, "detail": self.detail}
        if self.key is not None:
            data.update(key=self.key, value=self.value, state=str(self.state))
        return data


@dataclass(frozen=True)
class RankedFix:
    rank: int
    score: float
    fix: FixRecord
    command_changes: tuple[str, ...]
    finding: FindingRecord
    why: tuple[WhyStep, ...]
    already_applied: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "score": self.score,
            "already_applied": self.already_applied,
            "fix": _fix_dict(self.fix, self.command_changes),
            "finding": _finding_dict(self.finding),
            "why": [step.to_dict() for step in self.why],
        }


@dataclass(frozen=True)
class NotHelpful:
    fix: FixRecord
    command_changes: tuple[str, ...]
    finding: FindingRecord
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "fix": _fix_dict(self.fix, self.command_changes),
            "finding": _finding_dict(self.finding),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Question:
    key: str
    text: str
    answers: tuple[str, ...]
    first_fix_by_answer: tuple[tuple[str, str], ...]  # (answer, summary of the first fix)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "text": self.text,
            "answers": list(self.answers),
            "first_fix_by_answer": [{"answer": a, "fix": f} for a, f in self.first_fix_by_answer],
        }


@dataclass(frozen=True)
class Diagnosis:
    match: MatchLevel
    signature: Signature | None
    fixes: tuple[RankedFix, ...]
    not_helpful: tuple[NotHelpful, ...]
    questions: tuple[Question, ...]
    context: Context
    candidates: tuple[Candidate, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON the REST API returns verbatim."""
        return {
            "match": str(self.match),
            "signature": _signature_dict(self.signature),
            "fixes": [fix.to_dict() for fix in self.fixes],
            "not_helpful": [entry.to_dict() for entry in self.not_helpful],
            "questions": [question.to_dict() for question in self.questions],
            "context": _context_dict(self.context),
            "matches": [_candidate_dict(c) for c in self.candidates],
        }


# --- the pipeline ---------------------------------------------------------------


def diagnose(
    text: str,
    context: Context,
    graph: KnowledgeGraph,
    *,
    vocabulary: Vocabulary | None = None,
) -> Diagnosis:
    """Ranked fixes for a pasted error. `InputRejected` propagates: callers show it."""
    vocabulary = vocabulary or load()
    parsed = parse(text)
    signatures = signatures_of(parsed)
    context = with_log_evidence(context, parsed.warnings, vocabulary)
    candidates = shortlist(graph.index.lookup(queries_for(signatures, text)))
    signature = signatures[0] if signatures else None
    if not candidates:
        return Diagnosis(MatchLevel.NONE, signature, (), (), (), context)
    fixes, not_helpful = rank_fixes(candidates, context, graph, vocabulary)
    questions = ask_questions(candidates, context, graph, vocabulary, fixes)
    return Diagnosis(
        candidates[0].level, signature, fixes, not_helpful, questions, context, candidates
    )


def queries_for(signatures: Sequence[Signature], text: str) -> list[Query]:
    if signatures:
        return [Query.of(signature) for signature in signatures]
    # Nothing error-shaped: the words alone may still be specific enough.
    return [Query(terms=text_terms(text))]


def shortlist(candidates: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """Candidates worth showing: above the lower threshold and close to the best."""
    if not candidates or candidates[0].level is MatchLevel.NONE:
        return ()
    floor = candidates[0].score * RELATIVE_CUTOFF
    return tuple(c for c in candidates if c.level is not MatchLevel.NONE and c.score >= floor)


# --- the context, plus what the log says the server really ran with -------------


def with_log_evidence(context: Context, warnings: Iterable[str], vocabulary: Vocabulary) -> Context:
    """Fold flag values revealed by log lines into the context (launch values win)."""
    found = log_flags(warnings, vocabulary, context.framework)
    flags = dict(context.flags)
    sources = dict(context.sources)
    for name, value in found.items():
        if _normal_value(flags.get(name)) in UNDECIDED_VALUES:
            flags[name] = value
            sources[f"flag.{name}"] = "log"
    if flags == dict(context.flags):
        return context
    return dataclasses.replace(context, flags=flags, sources=sources)


def log_flags(
    warnings: Iterable[str], vocabulary: Vocabulary, framework: str | None
) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in warnings:
        for name, value in vocabulary.flags_in_text(line, framework):
            if value:
                found[name] = value
        found.update(_backend_choice(line, vocabulary))
    return found


def _backend_choice(line: str, vocabulary: Vocabulary) -> dict[str, str]:
    chosen: dict[str, str] = {}
    if (kv := KV_DTYPE_CHOICE.search(line)) is not None:
        chosen["kv-cache-dtype"] = kv["kv"]
    if (picked := BACKEND_CHOICE.search(line)) is not None:
        chosen["kv-cache-dtype"] = picked["kv"]
        for phase in ("prefill", "decode"):
            name = canonical_flag(f"nsa-{phase}-backend", "sglang")
            chosen[name] = picked[phase]
    return chosen


# --- conditions -----------------------------------------------------------------


def assess(condition: Condition, context: Context, vocabulary: Vocabulary) -> State:
    """Does the context meet the condition? Unknown is not a no."""
    actual = _normal_value(context.get(condition.key), condition.key, vocabulary)
    if actual in UNDECIDED_VALUES and _normal_value(condition.value) not in UNDECIDED_VALUES:
        return State.UNKNOWN
    equal = _same_value(condition.key, condition.value, actual, vocabulary)
    return State.MET if equal != condition.negate else State.CONTRADICTED


def _same_value(key: str, wanted: str, actual: str, vocabulary: Vocabulary) -> bool:
    if is_version_key(key):
        return versions.satisfies(actual, wanted)
    return _normal_value(wanted, key, vocabulary) == actual


def _normal_value(value: str | None, key: str = "", vocabulary: Vocabulary | None = None) -> str:
    if value is None:
        return ""
    text = value.strip().strip("'\"").lower()
    if key == "gpu.arch" and vocabulary is not None:
        return vocabulary.arch_of(text) or text
    return VALUE_ALIASES.get(text, text)


# --- ranking --------------------------------------------------------------------


@dataclass(frozen=True)
class _CauseScore:
    candidate: Candidate
    finding: FindingRecord
    score: float
    steps: tuple[WhyStep, ...]


def rank_fixes(
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
) -> tuple[tuple[RankedFix, ...], tuple[NotHelpful, ...]]:
    """Fixes that help, best first (already applied ones last), and those that do not."""
    helpful: list[RankedFix] = []
    useless: list[NotHelpful] = []
    for cause in (score_cause(c, context, graph, vocabulary) for c in candidates):
        for fix in graph.fixes_of(cause.finding.id):
            spelled = spell_changes(fix.changes, context, cause.finding, vocabulary)
            verdict = _unhelpful_reason(fix, context.arch, cause.finding)
            if verdict:
                useless.append(NotHelpful(fix, spelled, cause.finding, verdict))
            else:
                helpful.append(_ranked(cause, fix, spelled, context, vocabulary))
    return _order(helpful), _dedupe_not_helpful(useless)


def score_cause(
    candidate: Candidate, context: Context, graph: KnowledgeGraph, vocabulary: Vocabulary
) -> _CauseScore:
    finding = graph.findings[candidate.finding_id]
    steps = [WhyStep("signature", candidate.explain()), WhyStep("cause", finding.cause)]
    score = candidate.score
    for condition in graph.conditions_of(finding.id):
        state = assess(condition, context, vocabulary)
        score *= CONDITION_FACTOR[state]
        steps.append(
            WhyStep(
                "condition",
                _condition_detail(condition, state, context),
                condition.key,
                _shown_value(condition),
                state,
            )
        )
    return _CauseScore(candidate, finding, score, tuple(steps))


def _shown_value(condition: Condition) -> str:
    return f"!={condition.value}" if condition.negate else condition.value


def _condition_detail(condition: Condition, state: State, context: Context) -> str:
    actual = context.get(condition.key)
    if state is State.UNKNOWN:
        return f"needs {condition.describe()}; not known here"
    return f"needs {condition.describe()}; here {condition.key} = {actual} ({state})"


def _unhelpful_reason(fix: FixRecord, arch: str | None, finding: FindingRecord) -> str:
    if not fix.outcome.helps and fix.outcome.tried:
        label = "made it worse" if fix.outcome is Outcome.WORSE else "did not help"
        return f"{label} in finding {finding.id} ({finding.title})"
    failed = _runs(fix.evidence.validated_failed, arch)
    if arch and failed and not _runs(fix.evidence.validated_passed, arch):
        return f"failed {failed} validation run(s) on {arch} and never passed there"
    return ""


def _ranked(
    cause: _CauseScore,
    fix: FixRecord,
    spelled: tuple[str, ...],
    context: Context,
    vocabulary: Vocabulary,
) -> RankedFix:
    factor, detail = evidence_factor(fix, context.arch)
    applied = already_applied(fix, context, vocabulary)
    if applied:
        detail += "; already in your launch command"
    score = round(cause.score * factor, 4)
    why = (*cause.steps, WhyStep("fix", detail))
    return RankedFix(0, score, fix, spelled, cause.finding, why, applied)


def evidence_factor(fix: FixRecord, arch: str | None) -> tuple[float, str]:
    """Reported outcome + validated runs (same arch counts most) + user feedback."""
    evidence = fix.evidence
    points = REPORTED.get(fix.outcome, 0.0)
    parts = [f"reported: {fix.outcome}"]
    validated, validated_note = _validation_points(evidence, arch)
    points += validated
    parts += validated_note
    helped, not_helped = min(evidence.feedback_helped, 5), min(evidence.feedback_not_helped, 5)
    points += FEEDBACK * (helped - not_helped)
    if helped or not_helped:
        parts.append(
            f"feedback: {evidence.feedback_helped} helped, {evidence.feedback_not_helped} did not"
        )
    factor = max(MIN_EVIDENCE, points)
    return factor, "; ".join(parts) + f" (evidence x{factor:.2f})"


def _validation_points(evidence: Evidence, arch: str | None) -> tuple[float, list[str]]:
    passed_here = min(_runs(evidence.validated_passed, arch), 3) if arch else 0
    failed_here = min(_runs(evidence.validated_failed, arch), 3) if arch else 0
    passed_all = sum(count for _, count in evidence.validated_passed)
    passed_elsewhere = min(passed_all - passed_here, 3)
    per_other = VALIDATED_OTHER_ARCH if arch else VALIDATED_ANY_ARCH
    points = VALIDATED_SAME_ARCH * (passed_here - failed_here) + per_other * passed_elsewhere
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


def _change_in_place(change: Change, context: Context, vocabulary: Vocabulary) -> bool:
    if change.action is not ChangeAction.SET_FLAG:
        return False
    key = f"flag.{change.name}"
    have = _normal_value(context.get(key), key, vocabulary)
    return bool(have) and have == _normal_value(change.value or "true", key, vocabulary)


def _order(fixes: Iterable[RankedFix]) -> tuple[RankedFix, ...]:
    best: dict[tuple[Change, ...], RankedFix] = {}
    for fix in fixes:  # the same change set reported by two findings: keep the stronger
        key = tuple(sorted(fix.fix.changes, key=repr))
        if key not in best or _sort_key(fix) < _sort_key(best[key]):
            best[key] = fix
    ordered = sorted(best.values(), key=_sort_key)
    return tuple(dataclasses.replace(fix, rank=i) for i, fix in enumerate(ordered, start=1))


def _sort_key(fix: RankedFix) -> tuple[bool, float, int, int]:
    return (fix.already_applied, -fix.score, fix.finding.id, fix.fix.id)


def _dedupe_not_helpful(entries: Iterable[NotHelpful]) -> tuple[NotHelpful, ...]:
    seen: dict[int, NotHelpful] = {}
    for entry in entries:
        seen.setdefault(entry.fix.id, entry)
    return tuple(seen.values())


# --- spelling fixes for the user's framework release -----------------------------


def spell_changes(
    changes: Iterable[Change], context: Context, finding: FindingRecord, vocabulary: Vocabulary
) -> tuple[str, ...]:
    framework = context.framework or framework_of(finding.conditions)
    return tuple(spell_change(c, framework, context.framework_version, vocabulary) for c in changes)


def spell_change(
    change: Change, framework: str | None, version: str | None, vocabulary: Vocabulary
) -> str:
    if change.action not in (ChangeAction.SET_FLAG, ChangeAction.REMOVE_FLAG):
        return change.describe()
    flag = _spelled_flag(change.name, framework, version, vocabulary)
    if change.action is ChangeAction.REMOVE_FLAG:
        return f"remove {flag}"
    return flag if change.value in (None, "true") else f"{flag} {change.value}"


def _spelled_flag(
    name: str, framework: str | None, version: str | None, vocabulary: Vocabulary
) -> str:
    spelled = vocabulary.spell(name, framework, version) if framework else name
    return "--" + spelled.lstrip("-")


# --- questions ------------------------------------------------------------------


QUESTION_ORDER = (
    "gpu.arch",
    "gpu.name",
    "framework",
    "framework.version",
    "model.arch",
    "model.name",
    "model.quantization",
)


def ask_questions(
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
    fixes: Sequence[RankedFix],
) -> tuple[Question, ...]:
    """Unknown facts whose answer would change the first fix, most decisive first."""
    current = _first_fix(fixes)
    current_id = current.fix.id if current else None
    asked: list[tuple[int, Question]] = []
    for key, values in unknown_keys(candidates, context, graph, vocabulary).items():
        firsts = _first_fix_by_answer(key, values, candidates, context, graph, vocabulary)
        distinct = {fix.fix.id for fix in firsts.values() if fix is not None}
        if len(distinct) > 1 or (distinct and distinct != {current_id}):
            asked.append((len(distinct), _question(key, firsts, current, context, vocabulary)))
    asked.sort(key=lambda item: (-item[0], _key_order(item[1].key), item[1].key))
    return tuple(question for _, question in asked[:MAX_QUESTIONS])


def unknown_keys(
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
) -> dict[str, tuple[str, ...]]:
    """Condition keys the context cannot answer, with the answers that matter."""
    values: dict[str, set[str]] = {}
    for candidate in candidates:
        for condition in graph.conditions_of(candidate.finding_id):
            if assess(condition, context, vocabulary) is State.UNKNOWN:
                values.setdefault(condition.key, set()).add(condition.value)
    return {key: (*sorted(found), OTHER_ANSWER) for key, found in sorted(values.items())}


def _first_fix_by_answer(
    key: str,
    answers: Iterable[str],
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
) -> dict[str, RankedFix | None]:
    firsts: dict[str, RankedFix | None] = {}
    for answer in answers:
        answered = context.with_answer(key, answer)
        fixes, _ = rank_fixes(candidates, answered, graph, vocabulary)
        firsts[answer] = _first_fix(fixes)
    return firsts


def _first_fix(fixes: Sequence[RankedFix]) -> RankedFix | None:
    return fixes[0] if fixes and not fixes[0].already_applied else None


def _question(
    key: str,
    firsts: Mapping[str, RankedFix | None],
    current: RankedFix | None,
    context: Context,
    vocabulary: Vocabulary,
) -> Question:
    current_id = current.fix.id if current else None
    changing = [a for a, f in firsts.items() if f is not None and f.fix.id != current_id]
    pivot = next((a for a in changing if a != OTHER_ANSWER), changing[0] if changing else "")
    text = f"{_ask(key, context, vocabulary)} On {_answer_label(key, pivot)} the first fix differs."
    by_answer = tuple((a, f.fix.summary if f else "none") for a, f in firsts.items())
    return Question(key, text, tuple(firsts), by_answer)


def _ask(key: str, context: Context, vocabulary: Vocabulary) -> str:
    if key.startswith("flag."):
        flag = _spelled_flag(
            key.removeprefix("flag."), context.framework, context.framework_version, vocabulary
        )
        return f"What is {flag} set to (in the launch command or the server_args log line)?"
    return {
        "gpu.arch": "Which GPU?",
        "gpu.name": "Which GPU?",
        "framework": "Which serving framework?",
        "framework.version": "Which release of the framework?",
        "model.arch": "Which model?",
        "model.name": "Which model?",
        "model.quantization": "Which quantization?",
    }.get(key, f"What is {key}?")


def _answer_label(key: str, answer: str) -> str:
    if answer == OTHER_ANSWER:
        return f"any other {key}"
    return answer if not key.startswith("flag.") else f"{key.removeprefix('flag.')}={answer}"


def _key_order(key: str) -> int:
    return QUESTION_ORDER.index(key) if key in QUESTION_ORDER else len(QUESTION_ORDER)


# --- JSON -----------------------------------------------------------------------


def _fix_dict(fix: FixRecord, command_changes: Sequence[str]) -> dict[str, Any]:
    return {
        "id": fix.id,
        "summary": fix.summary,
        "outcome": str(fix.outcome),
        "changes": [
            {"action": str(c.action), "name": c.name, "value": c.value} for c in fix.changes
        ],
        "command_changes": list(command_changes),
    }


def _finding_dict(finding: FindingRecord) -> dict[str, Any]:
    return {
        "id": finding.id,
        "title": finding.title,
        "sources": [{"id": s.id, "title": s.title} for s in finding.sources],
    }


def _signature_dict(signature: Signature | None) -> dict[str, Any] | None:
    if signature is None:
        return None
    return {
        "exception_type": signature.exception_type,
        "template": signature.template,
        "key_frames": list(signature.key_frames),
        "fingerprint": signature.fingerprint,
        "template_key": signature.template_key,
    }


def _candidate_dict(candidate: Candidate) -> dict[str, Any]:
    return {
        "finding_id": candidate.finding_id,
        "score": candidate.score,
        "level": str(candidate.level),
        "layer": candidate.layer,
        "detail": candidate.explain(),
    }


def _context_dict(context: Context) -> dict[str, Any]:
    return {f.name: _plain(getattr(context, f.name)) for f in dataclasses.fields(context)}


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


# --- plain text for the CLI -----------------------------------------------------


def render_text(diagnosis: Diagnosis) -> str:
    lines = [_headline(diagnosis)]
    for fix in diagnosis.fixes:
        lines += _render_fix(fix)
    if diagnosis.not_helpful:
        lines.append("")
        lines.append("Known NOT to help:")
        lines += [
            f"  - {e.fix.summary} [{' '.join(e.command_changes)}]: {e.reason}"
            for e in diagnosis.not_helpful
        ]
    for question in diagnosis.questions:
        lines.append("")
        lines.append(f"? {question.text} (answers: {', '.join(question.answers)})")
    return "\n".join(lines) + "\n"


def _headline(diagnosis: Diagnosis) -> str:
    signature = diagnosis.signature
    error = f"{signature.exception_type}: {signature.template}" if signature else "no error found"
    if diagnosis.match is MatchLevel.NONE:
        return f"No known match for {error}"
    label = "Known issue" if diagnosis.match is MatchLevel.KNOWN else "Similar to a known issue"
    return f"{label}: {error}"


def _render_fix(fix: RankedFix) -> list[str]:
    note = " (already applied)" if fix.already_applied else ""
    lines = ["", f"{fix.rank}. {fix.fix.summary}{note}  [score {fix.score:.3f}]"]
    lines += [f"     {change}" for change in fix.command_changes]
    lines.append(f"   finding {fix.finding.id}: {fix.finding.title}")
    lines += [f"   - {step.step}: {step.detail}" for step in fix.why]
    return lines
