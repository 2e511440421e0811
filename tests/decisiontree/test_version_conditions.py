"""Conditions on versions compare releases, and agree with the flag speller about them; a
GPU's compute capability compares as a version too."""

from __future__ import annotations

import pytest

from decisiontree.conditions import parse_line
from decisiontree.context import Context, build_context
from decisiontree.graph import build_graph
from decisiontree.launch_check import check_launch
from decisiontree.records import Condition, FindingRecord, FixRecord, Outcome
from decisiontree.setup import State, assess
from decisiontree.vocabulary import load


def at(release: str) -> Context:
    return Context(framework="sglang", framework_version=release)


def test_the_flag_speller_and_the_conditions_agree_about_a_post_release() -> None:
    """Bug: one parser read 0.5.9.post1 as 0.5.9, the other as 0.5.9.1."""
    for release in ("0.5.8", "0.5.9", "0.5.9.post1", "0.5.10"):
        old_spelling = (
            load().spell("dsa-decode-backend", "sglang", release) == "--nsa-decode-backend"
        )
        up_to = assess(Condition("framework.version", "<=0.5.9"), at(release), load()) is State.MET
        assert old_spelling == up_to, release


def test_a_framework_version_condition_is_met_by_a_local_build() -> None:
    """Bug: `version_satisfies("2.8.0+cu128", "==2.8.0")` was false."""
    context = at("2.8.0+cu128")
    condition = Condition("framework.version", "==2.8.0")
    assert assess(condition, context, load()) is State.MET


@pytest.mark.parametrize(
    ("torch", "wanted", "state"),
    [
        ("2.10.0+cu130", ">=2.9", State.MET),  # as text, "2.10" < "2.9"
        ("2.8.0", ">=2.9", State.CONTRADICTED),
        ("2.9.1+cu128", "2.9", State.MET),
    ],
)
def test_a_package_version_condition_compares_versions_not_text(
    torch: str, wanted: str, state: State
) -> None:
    """Bug: `version.*` conditions were compared as strings."""
    context = Context(versions={"torch": torch})
    assert assess(Condition("version.torch", wanted), context, load()) is state


@pytest.mark.parametrize(
    ("gpu", "written", "state"),
    [
        # Written as people write it: the key's short form, a bound or a major version.
        ("Tesla T4", "capability = <8.0", State.MET),  # 7.5
        ("V100", "gpu.capability = <7.5", State.MET),  # 7.0
        ("H100", "gpu.capability = <8.0", State.CONTRADICTED),  # 9.0
        ("RTX PRO 6000", "gpu.capability = >=10.0", State.MET),  # 12.0, not "12.0" < "9"
        ("L40S", "compute_capability = >=8.0,<9.0", State.MET),  # 8.9
        ("A100", "gpu.capability != <8.0", State.MET),
        ("", "gpu.capability = <8.0", State.UNKNOWN),  # no GPU: not a no
    ],
)
def test_a_compute_capability_condition_compares_the_gpus_capability_as_a_version(
    gpu: str, written: str, state: State
) -> None:
    context = build_context("", gpu=gpu or None)
    assert assess(parse_line(written), context, load()) is state


def test_a_finding_for_older_gpus_is_named_before_a_launch_on_one_and_not_on_a_newer() -> None:
    """gpt-oss is published in MXFP4, whose vLLM kernels need 8.0: on a T4 (7.5) the launch
    meets the finding; on an H100 (9.0) it is ruled out."""
    needs = ("framework = vllm", "model.quantization = mxfp4", "gpu.capability = <8.0")
    fix = FixRecord(1, "serve a 16-bit conversion in float16", (), Outcome.RESOLVES)
    finding = FindingRecord(
        id=1,
        title="vLLM: MXFP4 checkpoints need compute capability 8.0",
        kind="crash",
        cause="its kernels need compute capability 8.0",
        samples=(
            "ValueError: The quantization method mxfp4 is not supported for the current GPU.",
        ),
        conditions=tuple(parse_line(line) for line in needs),
        fixes=(fix,),
    )
    graph = build_graph([finding])

    def named(gpu: str) -> list[str]:
        context = build_context(launch_command="vllm serve openai/gpt-oss-20b", gpu=gpu)
        return [risk.finding.title for risk in check_launch(context, graph, load()).risks]

    assert named("Tesla T4") == [finding.title]
    assert named("H100") == []
