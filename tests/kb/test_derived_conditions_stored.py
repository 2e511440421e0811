"""Conditions derived at ingest stay marked in the store, and the answer says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.models import Finding
from kb.services.diagnosis import diagnose
from tests.findings_md import publish
from tests.web.test_review_conditions import NVCC_ERROR

pytestmark = pytest.mark.django_db

# The nvcc error of the review-condition tests, raised on Hopper here.
PASTE = NVCC_ERROR.replace("compute_100a", "compute_90a")
ENTRY = (
    "# Team findings\n\n## FlashInfer JIT fails on H200 with an old nvcc\n"
    "- Hardware: 8x NVIDIA H200\n- Framework: sglang 0.5.9\n"
    "- Cause: the nvcc on the image is too old for the architecture\n"
    "- Fix: --attention-backend triton\n"
)


def ingested(tmp_path: Path, entry: str) -> Finding:
    publish(tmp_path / "FINDINGS.md", entry + "\n```\n" + PASTE + "```\n")
    return Finding.objects.get()


def gpu_step(gpu: str) -> str:
    (step,) = [
        step
        for fix in diagnose(PASTE, gpu=gpu).fixes
        for step in fix.why
        if step.step == "condition" and step.key == "gpu.arch"
    ]
    return step.detail


def test_where_a_finding_was_seen_is_stored_as_derived_and_read_back_so(
    vocabulary: None, tmp_path: Path
) -> None:
    finding = ingested(tmp_path, ENTRY)

    assert {"key": "gpu.arch", "value": "sm_90", "negate": False, "derived": True} in (
        finding.conditions
    )
    assert gpu_step("B200") == (
        "seen where GPU architecture is sm_90 (not stated as needed); here sm_100 (contradicted)"
    )
    assert diagnose(PASTE, gpu="B200").verdict == "different_setup"


def test_a_when_line_is_stored_as_stated(vocabulary: None, tmp_path: Path) -> None:
    finding = ingested(tmp_path, ENTRY + "- When: gpu.arch = sm_90\n")

    assert finding.conditions == [{"key": "gpu.arch", "value": "sm_90", "negate": False}]
    assert gpu_step("B200") == "applies when GPU architecture is sm_90; here sm_100 (contradicted)"


def test_a_condition_stored_before_the_mark_existed_reads_as_stated(
    vocabulary: None, tmp_path: Path
) -> None:
    finding = ingested(tmp_path, ENTRY)
    finding.conditions = [
        {k: v for k, v in condition.items() if k != "derived"} for condition in finding.conditions
    ]
    finding.save()

    assert gpu_step("B200") == "applies when GPU architecture is sm_90; here sm_100 (contradicted)"
