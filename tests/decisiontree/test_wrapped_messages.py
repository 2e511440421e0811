"""A message printed as one sentence wrapped over several lines is compared whole: the
words of its second line are as much the error as those of its first."""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.fingerprint import signatures_of
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, FindingRecord, FixRecord, Outcome
from decisiontree.traceback import parse

# A fixture written for this test: a library that wraps its messages at 80 columns.
WRAPPED = """Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/adapterkit/loader.py", line 88, in attach
    raise RuntimeError(
RuntimeError:
An adapter was attached while the engine was still compiling its graphs; wait for
the warm-up to finish before attaching adapters to a running engine.

    Adapters change the shapes the graphs were captured with.
"""
ATTACH_LATER = FixRecord(
    1, "Attach adapters once the warm-up is over",
    (Change(ChangeAction.SET_FLAG, "enforce-eager", "true"),), Outcome.RESOLVES,
)  # fmt: skip
ATTACHED_DURING_WARM_UP = FindingRecord(
    id=1,
    title="An adapter attached while the engine starts",
    kind="crash",
    cause="attaching races the graph compile",
    samples=(WRAPPED,),
    conditions=(),
    fixes=(ATTACH_LATER,),
)
LOWER_BATCH = FixRecord(
    2, "Lower --max-num-seqs", (Change(ChangeAction.SET_FLAG, "max-num-seqs", "32"),),
    Outcome.RESOLVES,
)  # fmt: skip
OUT_OF_MEMORY = FindingRecord(
    id=2,
    title="Out of memory at start-up",
    kind="crash",
    cause="too many sequences",
    samples=("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",),
    conditions=(),
    fixes=(LOWER_BATCH,),
)


def test_the_compared_message_is_the_whole_wrapped_sentence() -> None:
    signature, *_ = signatures_of(parse(WRAPPED))

    assert signature.message == (
        "An adapter was attached while the engine was still compiling its graphs; wait for "
        "the warm-up to finish before attaching adapters to a running engine."
    )
    # The template, and so the fingerprint, stays the first line as printed.
    assert "warm-up" not in signature.template


def test_a_short_line_without_a_stop_is_not_taken_for_a_wrapped_one() -> None:
    (signature,) = signatures_of(parse("RuntimeError: the pool is too small\nsee above"))

    assert signature.message == "the pool is too small"


def test_a_report_quoting_the_wrapped_half_finds_the_finding() -> None:
    # An issue title that names what the second printed line says, the way people retell it.
    paste = (
        "[Bug]: RuntimeError: wait for the warm-up to finish before attaching adapters to a "
        "running engine"
    )

    result = diagnose(paste, build_context(), build_graph([ATTACHED_DURING_WARM_UP, OUT_OF_MEMORY]))

    # Matched on the first printed line alone it was only "similar" (0.55).
    assert result.verdict == "known"
    assert [fix.fix.id for fix in result.fixes][:1] == [ATTACH_LATER.id]
