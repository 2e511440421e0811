"""Questions: the unknown facts whose answer would change the answer.

A question is a condition node of the graph that splits what the walk reaches:
one finding on the way needs `gpu.arch = sm_120`, another `sm_90`, and the user's
context says neither. Each possible answer is walked again; where the first fix
differs between answers (or, less decisive, what of it goes into the command), the
question is asked, and answering
it (`Context.with_answer`) re-ranks.

Why questions never appeared before the walk: conditions belong to a finding, so
every fix of one finding rises and falls together, and only a change of the first
fix counted. A paste matching one finding, the usual case, could never be asked
anything, however much an unknown GPU or model decided whether its fix applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from decisiontree.answer import Question, RankedFix, first_fix
from decisiontree.context import Context
from decisiontree.graph import KnowledgeGraph
from decisiontree.match import Candidate
from decisiontree.records import Change
from decisiontree.setup import State, assess, capability_answers
from decisiontree.spelling import spell_flag
from decisiontree.vocabulary import Vocabulary
from decisiontree.walk import remedy_of, visit_findings, walk

MAX_QUESTIONS = 3
OTHER_ANSWER = "other"
QUESTION_ORDER = (
    "gpu.arch",
    "gpu.name",
    "gpu.capability",
    "framework",
    "framework.version",
    "model.arch",
    "model.name",
    "model.quantization",
)
ASK = {
    "gpu.arch": "Which GPU?",
    "gpu.name": "Which GPU?",
    "gpu.capability": (
        "Which compute capability has the GPU (nvidia-smi --query-gpu=compute_cap --format=csv)?"
    ),
    "framework": "Which serving framework?",
    "framework.version": "Which release of the framework?",
    "model.arch": "Which model architecture (model_type in its config.json)?",
    "model.name": "Which model?",
    "model.quantization": "Which quantization?",
}


@dataclass(frozen=True)
class Answered:
    """What the answer would be, were the fact known to be one value."""

    first: RankedFix | None  # the fix to try first
    command: tuple[Change, ...]  # what of it goes into the user's command

    @property
    def remedy(self) -> tuple[object, ...] | None:
        return remedy_of(self.first.fix) if self.first else None


def ask_questions(
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
    *,
    plain: bool = False,
    fixes: Sequence[RankedFix] | None = None,
) -> tuple[Question, ...]:
    """Unknown facts whose answer would change the answer, most decisive first.

    `fixes`: the fixes a walk in this context already ranked (walked again if not given).

    Most decisive: the first fix changes; then what of it goes into the command (a
    flag that only acts on some models). A fact that would only turn the verdict to
    "different setup" is not asked: on the shared real reports that asked "Which
    serving framework?" of half the pastes, to no use (in-process run, 2026-12-01).
    """
    if fixes is None:
        current = answered(candidates, context, graph, vocabulary, plain)
    else:
        current = answer_of(fixes)
    asked: list[tuple[int, Question]] = []
    for key, answers in unknown_keys(candidates, context, graph, vocabulary, plain=plain).items():
        by_answer = outcomes(key, answers, candidates, context, graph, vocabulary, plain)
        if by_answer is None:
            continue  # a key the context cannot take an answer for
        weight = decisiveness(current, by_answer)
        if weight:
            asked.append((weight, _question(key, weight, current, by_answer, context)))
    asked.sort(key=lambda item: (-item[0], _key_order(item[1].key), item[1].key))
    return tuple(question for _, question in asked[:MAX_QUESTIONS])


FIRST_FIX, COMMAND = 2, 1


def decisiveness(current: Answered, by_answer: Mapping[str, Answered]) -> int:
    """How much an answer would change: 0 (nothing) .. FIRST_FIX."""
    outcomes_ = list(by_answer.values())
    remedies = {o.remedy for o in outcomes_ if o.first is not None}
    if len(remedies) > 1 or (remedies and remedies != {current.remedy}):
        return FIRST_FIX
    if len({o.command for o in outcomes_ if o.first is not None}) > 1:
        return COMMAND
    return 0


def answered(
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
    plain: bool,
) -> Answered:
    return answer_of(walk(candidates, context, graph, vocabulary, plain=plain).fixes)


def answer_of(fixes: Sequence[RankedFix]) -> Answered:
    first = first_fix(fixes)
    return Answered(first, first.changes if first else ())


def unknown_keys(
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
    *,
    plain: bool = False,
) -> dict[str, tuple[str, ...]]:
    """Condition keys of the findings the walk reaches that the context cannot answer."""
    values: dict[str, set[str]] = {}
    for visit in visit_findings(candidates, context, graph, vocabulary, plain=plain):
        for condition in graph.conditions_of(visit.finding.id):
            if assess(condition, context, vocabulary) is State.UNKNOWN:
                values.setdefault(condition.key, set()).add(condition.value)
    asked = {key: (*sorted(found), OTHER_ANSWER) for key, found in sorted(values.items())}
    if "gpu.capability" in values:  # ranges that cover every GPU: no "other" to answer
        asked["gpu.capability"] = capability_answers(values["gpu.capability"], vocabulary)
    return {key: answers for key, answers in asked.items() if answers}


def outcomes(
    key: str,
    answers: Iterable[str],
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
    plain: bool = False,
) -> dict[str, Answered] | None:
    found: dict[str, Answered] = {}
    for answer in answers:
        try:
            with_answer = context.with_answer(key, answer)
        except KeyError:
            return None
        found[answer] = answered(candidates, with_answer, graph, vocabulary, plain)
    return found


def _question(
    key: str,
    weight: int,
    current: Answered,
    by_answer: Mapping[str, Answered],
    context: Context,
) -> Question:
    if weight == FIRST_FIX:
        pivot = _pivot([a for a, o in by_answer.items() if o.first and o.remedy != current.remedy])
        then = f"On {_answer_label(key, pivot, context)} the first fix differs."
    else:
        pivot = _pivot([a for a, o in by_answer.items() if o.command != current.command])
        then = f"On {_answer_label(key, pivot, context)} the corrected command differs."
    by_fix = tuple(
        (a, (o.first.summary or o.first.fix.summary) if o.first else "none")
        for a, o in by_answer.items()
    )
    return Question(key, f"{ask(key, context)} {then}", tuple(by_answer), by_fix)


def _pivot(answers: list[str]) -> str:
    """The answer to name: a real value rather than "other" when there is one."""
    return next((a for a in answers if a != OTHER_ANSWER), answers[0] if answers else "")


def ask(key: str, context: Context) -> str:
    if key.startswith("flag."):
        flag = spell_flag(key[5:], context.framework, context.spelling_version)
        return f"What is {flag} set to (in the launch command or the server_args log line)?"
    return ASK.get(key, f"What is {key}?")


NOUNS = {
    "gpu.arch": "GPU",
    "gpu.name": "GPU",
    "gpu.capability": "compute capability",
    "framework": "framework",
    "framework.version": "release",
    "model.arch": "model",
    "model.name": "model",
    "model.quantization": "quantization",
}


def _answer_label(key: str, answer: str, context: Context) -> str:
    """The answer as the question names it; a flag spelled as the user's release does,
    like the question before it."""
    if key.startswith("flag."):
        flag = spell_flag(key.removeprefix("flag."), context.framework, context.spelling_version)
        return f"another value of {flag}" if answer == OTHER_ANSWER else f"{flag}={answer}"
    if answer == OTHER_ANSWER:
        return f"another {NOUNS.get(key, key)}"
    return f"compute capability {answer}" if key == "gpu.capability" else answer


def _key_order(key: str) -> int:
    return QUESTION_ORDER.index(key) if key in QUESTION_ORDER else len(QUESTION_ORDER)


__all__ = ["MAX_QUESTIONS", "OTHER_ANSWER", "ask_questions", "unknown_keys"]
