"""Questions: the unknown facts whose answer would change which fix comes first.

A question is a condition node of the graph that splits the fixes the walk
reaches: one finding on the way needs `gpu.arch = sm_120`, another `sm_90`, and
the user's context says neither. Each possible answer is walked again; where
the first fix differs between answers, the question is asked (most decisive
first), and answering it (`Context.with_answer`) re-ranks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from decisiontree.answer import Question, RankedFix, first_fix
from decisiontree.context import Context
from decisiontree.graph import KnowledgeGraph
from decisiontree.match import Candidate
from decisiontree.setup import State, assess
from decisiontree.spelling import spell_flag
from decisiontree.vocabulary import Vocabulary
from decisiontree.walk import remedy_of, visit_findings, walk

MAX_QUESTIONS = 3
OTHER_ANSWER = "other"
QUESTION_ORDER = (
    "gpu.arch",
    "gpu.name",
    "framework",
    "framework.version",
    "model.arch",
    "model.name",
    "model.quantization",
)
ASK = {
    "gpu.arch": "Which GPU?",
    "gpu.name": "Which GPU?",
    "framework": "Which serving framework?",
    "framework.version": "Which release of the framework?",
    "model.arch": "Which model?",
    "model.name": "Which model?",
    "model.quantization": "Which quantization?",
}


def ask_questions(
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
    fixes: Sequence[RankedFix],
    *,
    plain: bool = False,
) -> tuple[Question, ...]:
    """Unknown facts whose answer would change the first fix, most decisive first."""
    current = first_fix(fixes)
    current_remedy = remedy_of(current.fix) if current else None
    asked: list[tuple[int, Question]] = []
    for key, answers in unknown_keys(candidates, context, graph, vocabulary, plain=plain).items():
        firsts = first_fix_by_answer(key, answers, candidates, context, graph, vocabulary, plain)
        if firsts is None:
            continue  # a key the context cannot take an answer for
        distinct = {remedy_of(f.fix) for f in firsts.values() if f is not None}
        if len(distinct) > 1 or (distinct and distinct != {current_remedy}):
            asked.append((len(distinct), _question(key, firsts, current, context, vocabulary)))
    asked.sort(key=lambda item: (-item[0], _key_order(item[1].key), item[1].key))
    return tuple(question for _, question in asked[:MAX_QUESTIONS])


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
    return {key: (*sorted(found), OTHER_ANSWER) for key, found in sorted(values.items())}


def first_fix_by_answer(
    key: str,
    answers: Iterable[str],
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
    plain: bool = False,
) -> dict[str, RankedFix | None] | None:
    firsts: dict[str, RankedFix | None] = {}
    for answer in answers:
        try:
            answered = context.with_answer(key, answer)
        except KeyError:
            return None
        fixes = walk(candidates, answered, graph, vocabulary, plain=plain).fixes
        firsts[answer] = first_fix(fixes)
    return firsts


def _question(
    key: str,
    firsts: Mapping[str, RankedFix | None],
    current: RankedFix | None,
    context: Context,
    vocabulary: Vocabulary,
) -> Question:
    current_remedy = remedy_of(current.fix) if current else None
    changing = [
        a for a, f in firsts.items() if f is not None and remedy_of(f.fix) != current_remedy
    ]
    pivot = next((a for a in changing if a != OTHER_ANSWER), changing[0] if changing else "")
    text = f"{ask(key, context)} On {_answer_label(key, pivot)} the first fix differs."
    by_answer = tuple((a, (f.summary or f.fix.summary) if f else "none") for a, f in firsts.items())
    return Question(key, text, tuple(firsts), by_answer)


def ask(key: str, context: Context) -> str:
    if key.startswith("flag."):
        flag = spell_flag(key[5:], context.framework, context.framework_version)
        return f"What is {flag} set to (in the launch command or the server_args log line)?"
    return ASK.get(key, f"What is {key}?")


def _answer_label(key: str, answer: str) -> str:
    if answer == OTHER_ANSWER:
        return f"any other {key}"
    return answer if not key.startswith("flag.") else f"{key.removeprefix('flag.')}={answer}"


def _key_order(key: str) -> int:
    return QUESTION_ORDER.index(key) if key in QUESTION_ORDER else len(QUESTION_ORDER)


__all__ = ["MAX_QUESTIONS", "OTHER_ANSWER", "ask_questions", "unknown_keys"]
