"""A compiler's message that opens with a place in the source ("at 32:18:"), quotes the
source and says what failed last (Triton's CompilationError): what it says is what is
quoted and compared, not the place."""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.fingerprint import quoted_error, signatures_of
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, FindingRecord, FixRecord, Outcome
from decisiontree.traceback import parse

TRITON_FAILED = """Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py", line {frame}, in invoke_fused_moe_kernel
    fused_moe_kernel[grid](
  File "/usr/local/lib/python3.12/dist-packages/triton/compiler/compiler.py", line 300, in compile
    module = src.make_ir(options, codegen_fns, module_map, context)
triton.compiler.errors.CompilationError: at {at}:
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
                  ^
ValueError('Cannot broadcast, rank mismatch: [{rows}, 1], [128]')
"""
OTHER_TRITON_FAILED = TRITON_FAILED.replace(
    "ValueError('Cannot broadcast, rank mismatch: [{rows}, 1], [128]')",
    "AssertionError('int32 and float32 are not compatible for tl.dot')",
)
PIN_TRITON = FixRecord(
    1, "Pin triton 3.4.0", (Change(ChangeAction.PIN_VERSION, "triton", "3.4.0"),),
    Outcome.RESOLVES,
)  # fmt: skip
BROADCAST = FindingRecord(
    id=1,
    title="fused MoE kernel fails to compile",
    kind="crash",
    cause="",
    samples=(TRITON_FAILED.format(frame=1210, at="32:18", rows=64),),
    conditions=(),
    fixes=(PIN_TRITON,),
)
CAST_FIX = FixRecord(
    2, "Cast the scales to float32", (Change(ChangeAction.SET_FLAG, "dtype", "float32"),),
    Outcome.RESOLVES,
)  # fmt: skip
DOT_TYPES = FindingRecord(
    id=2,
    title="tl.dot operand types",
    kind="crash",
    cause="",
    samples=(OTHER_TRITON_FAILED.format(frame=1210, at="32:18", rows=64),),
    conditions=(),
    fixes=(CAST_FIX,),
)


def test_the_error_after_the_source_is_quoted_with_its_place() -> None:
    parsed = parse(TRITON_FAILED.format(frame=1187, at="29:16", rows=32))
    (signature, *_) = signatures_of(parsed)

    quoted = quoted_error(parsed, signature.exception_type).lines
    assert quoted == (
        "triton.compiler.errors.CompilationError: at 29:16: … "
        "ValueError('Cannot broadcast, rank mismatch: [32, 1], [128]')",
    )
    assert "Cannot broadcast" in (signature.message or "")


def test_the_same_failure_elsewhere_in_the_source_matches_its_finding_not_its_neighbour() -> None:
    paste = TRITON_FAILED.format(frame=1187, at="29:16", rows=32)

    result = diagnose(paste, build_context(), build_graph([DOT_TYPES, BROADCAST]))

    assert result.verdict == "known"
    assert [fix.fix.id for fix in result.fixes] == [PIN_TRITON.id]  # not the neighbour's


def test_a_message_that_only_starts_with_at_is_left_as_it_is() -> None:
    parsed = parse("RuntimeError: at 3 GPUs the pool is too small\nsee the log above")
    (signature, *_) = signatures_of(parsed)

    assert signature.message == "at <num> GPUs the pool is too small"
