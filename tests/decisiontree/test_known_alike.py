"""Two causes that print the same error: a paste of that error alone is known, but not
which of the two it is; the answer names the other one and says where to look."""

from __future__ import annotations

from decisiontree.answer import KNOWN_ALIKE
from decisiontree.context import build_context
from decisiontree.diagnose import ranked_answer
from decisiontree.graph import build_graph
from decisiontree.match import Candidate, known_threshold, similar_threshold
from decisiontree.records import Condition, FindingRecord, FixRecord, Outcome
from decisiontree.vocabulary import load

FAILED_BUILD = (
    "subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpq3z1x8vw/main.c', "
    "'-O3', '-shared', '-fPIC', '-lcuda']' returned non-zero exit status 1."
)


def finding(number: int, title: str, *conditions: Condition) -> FindingRecord:
    return FindingRecord(
        id=number,
        title=title,
        kind="crash",
        cause=f"{title}, so gcc fails on Triton's launcher",
        samples=(FAILED_BUILD,),
        conditions=conditions,
        fixes=(FixRecord(number, f"fix {number}", (), Outcome.RESOLVES),),
    )


HEADERS = finding(1, "no Python.h in the image")
LIBCUDA = finding(2, "no libcuda.so where the linker looks")
HOPPER_ONLY = finding(3, "a Hopper-only build", Condition("gpu.arch", "sm_90"))
# Another report of the first one's cause (the same words): one cause, not two to tell apart.
HEADERS_AGAIN = FindingRecord(
    id=4,
    title="Triton's launcher does not build in a slim image",
    kind="crash",
    cause=HEADERS.cause,
    samples=(FAILED_BUILD,),
    conditions=(),
    fixes=(FixRecord(4, "fix 4", (), Outcome.RESOLVES),),
)
GRAPH = build_graph([HEADERS, LIBCUDA, HOPPER_ONLY, HEADERS_AGAIN])


def answer(*candidates: Candidate, gpu: str | None = None):
    return ranked_answer(candidates, None, build_context(gpu=gpu), GRAPH, load(), plain=False)


def on_words(finding_id: int, score: float) -> Candidate:
    return Candidate(finding_id, score, "terms", ("gcc",), None)


def test_a_finding_of_another_cause_matched_as_known_too_is_named_with_where_to_look() -> None:
    result = answer(on_words(1, 0.76), on_words(2, 0.75))

    assert result.verdict == "known"
    assert {1, 2} <= {fix.finding.id for fix in result.fixes}
    assert [f.id for f in result.known_alike] == [2]
    assert result.verdict_label == (
        f"Known issue, one of 2 it matches ({KNOWN_ALIKE}; the other: {LIBCUDA.title})"
    )


def test_one_known_answer_is_just_known() -> None:
    below = (known_threshold() + similar_threshold()) / 2 - 0.001

    result = answer(on_words(1, 0.76), on_words(2, below))

    assert result.verdict == "known"
    assert result.known_alike == ()
    assert result.verdict_label == "Known issue"


def test_another_report_of_the_same_cause_is_not_a_second_cause() -> None:
    result = answer(Candidate(1, 0.99, "fingerprint", (), None), on_words(4, 0.9))

    assert result.verdict == "known"
    assert result.known_alike == ()


def test_a_finding_whose_setup_differs_here_is_not_named() -> None:
    """On a Blackwell GPU, the Hopper-only finding is not one of the causes to tell apart."""
    result = answer(on_words(1, 0.76), on_words(3, 0.75), gpu="RTX PRO 6000")

    assert result.verdict == "known"
    assert result.known_alike == ()
