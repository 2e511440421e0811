"""Errors as real libraries print them, captured on an H200 (torch 2.11 with CUDA 13.0,
Triton 3.6, NCCL 2.28; tests/decisiontree/fixtures/captured/README.md says how).

Each failure was provoked twice, the second time another way: another size, another
call site, another rank or port. A finding written from the first run must answer the
second; a failure of another kind that prints some of the same words must not be
answered as "known".
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from decisiontree.context import Context, build_context
from decisiontree.diagnose import diagnose
from decisiontree.fingerprint import signatures_of
from decisiontree.graph import KnowledgeGraph, build_graph
from decisiontree.records import Change, ChangeAction, FindingRecord, FixRecord, Outcome
from decisiontree.traceback import parse

CAPTURED = Path(__file__).resolve().parent / "fixtures" / "captured"
# Failures captured twice: the first run is a finding, the second a paste.
MET_TWICE = (
    "embedding_index_past_vocab",
    "multinomial_nan_probabilities",
    "kernel_built_for_another_arch",
    "nccl_socket_ifname_missing",
    "nccl_port_in_use",
)


def captured(name: str) -> str:
    return (CAPTURED / f"h200_{name}.txt").read_text()


def finding_of(number: int, name: str) -> FindingRecord:
    fix = FixRecord(
        number,
        f"What fixed {name.replace('_', ' ')}",
        (Change(ChangeAction.SET_ENV, "FIXGRAPH_TEST_FIX", str(number)),),
        Outcome.RESOLVES,
    )
    return FindingRecord(
        id=number,
        title=name.replace("_", " "),
        kind="crash",
        cause="",
        samples=(captured(name),),
        conditions=(),
        fixes=(fix,),
    )


@pytest.fixture(scope="module")
def graph() -> KnowledgeGraph:
    return build_graph([finding_of(number, name) for number, name in enumerate(MET_TWICE, 1)])


def on_h200() -> Context:
    return build_context(gpu="NVIDIA H200")


@pytest.mark.parametrize(
    "name, exception_type, words",
    [
        ("torch_cuda_oom", "OutOfMemoryError", "CUDA out of memory."),
        ("embedding_index_past_vocab", "AcceleratorError", "srcIndex < srcSelectDimSize"),
        ("multinomial_nan_probabilities", "AcceleratorError", "probability tensor contains"),
        ("kernel_built_for_another_arch", "AcceleratorError", "no kernel image is available"),
        ("triton_illegal_address", "AcceleratorError", "an illegal memory access"),
        ("triton_shared_memory_out_of_resources", "OutOfResources", "shared memory, Required"),
        ("nccl_socket_ifname_missing", "DistBackendError", "invalid usage"),
        ("nccl_port_in_use", "DistNetworkError", "EADDRINUSE"),
        ("sdpa_flash_backend_head_dim", "RuntimeError", "No available kernel."),
        ("fp8_scaled_mm_layout", "RuntimeError", "row-major and column-major"),
    ],
)
def test_the_raised_error_is_read_from_real_output(
    name: str, exception_type: str, words: str
) -> None:
    [first, *_] = signatures_of(parse(captured(name)))

    assert first.exception_type == exception_type
    assert words in first.template


@pytest.mark.parametrize("name", MET_TWICE)
def test_a_failure_met_again_another_way_is_known_by_the_finding_of_the_first(
    name: str, graph: KnowledgeGraph
) -> None:
    result = diagnose(captured(f"{name}_again"), on_h200(), graph)

    assert result.verdict == "known"
    assert result.fixes[0].fix.summary == f"What fixed {name.replace('_', ' ')}"


def test_the_device_side_asserts_of_two_bugs_are_told_apart(graph: KnowledgeGraph) -> None:
    # Both raise "CUDA error: device-side assert triggered"; the kernel's assertion differs.
    result = diagnose(captured("embedding_index_past_vocab_again"), on_h200(), graph)

    assert [fix.finding.title for fix in result.fixes] == ["embedding index past vocab"]


def test_the_same_words_in_another_order_are_not_a_known_issue(graph: KnowledgeGraph) -> None:
    # SDPA found no attention kernel for this head size: "No available kernel. Aborting
    # execution." The finding is a build for another GPU: "no kernel image is available
    # for execution on the device". The words are shared, no phrase is.
    result = diagnose(captured("sdpa_flash_backend_head_dim"), on_h200(), graph)

    assert result.verdict == "similar" and result.fixes
    for suggested in result.fixes:  # each suggestion says why it is only similar
        [matched] = [step for step in suggested.why if step.step == "signature"]
        assert matched.detail.endswith("no phrase of its message, so not a known issue")


def test_the_same_message_from_other_code_is_named_as_the_same_message() -> None:
    # Triton's shared-memory limit, hit by two different kernels: the message is the same,
    # and ordinary output prints it for many causes, so it is no known match; the nearest
    # finding must say the message is the same, not "another message".
    graph = build_graph([finding_of(1, "triton_shared_memory_out_of_resources")])

    result = diagnose(captured("triton_shared_memory_out_of_resources_again"), on_h200(), graph)

    assert result.verdict == "none"
    [near] = result.nearest
    assert near.why_not.startswith("same error message (OutOfResources), raised from other code")


def launcher_alone(text: str) -> str:
    """A capture cut to the frames of the library that raised (Triton's launcher): what a
    finding about the message itself holds as its sample, with no caller's code."""
    lines = text.splitlines()
    kept, keep = [lines[0]], False
    for line in lines[1:-1]:  # a frame's line, then its code: kept with the frame
        if line.startswith("  File "):
            keep = "/triton/" in line
        if keep:
            kept.append(line)
    return "\n".join([*kept, lines[-1]]) + "\n"


def test_a_finding_about_the_message_a_library_raises_is_like_any_call_of_it() -> None:
    # The finding's sample shows Triton refusing the launch with no caller's frame: it is
    # about the message, whatever kernel was too large. Another kernel's paste, which
    # ordinary output would explain away as above, is like it (not known: its frames differ).
    about_the_message = dataclasses.replace(
        finding_of(1, "triton_shared_memory_out_of_resources"),
        samples=(launcher_alone(captured("triton_shared_memory_out_of_resources")),),
    )
    graph = build_graph([about_the_message])

    result = diagnose(captured("triton_shared_memory_out_of_resources_again"), on_h200(), graph)

    assert result.verdict == "similar"
    assert result.ordinary_message_elsewhere
    assert [fix.finding.id for fix in result.fixes] == [1]
