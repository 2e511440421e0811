"""A knowledge base for the page tests: the starter findings plus a few made with the ORM."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from kb.models import (
    ErrorSample,
    Finding,
    FindingGpu,
    Fix,
    Hardware,
    Host,
    SourceDocument,
    ValidationRun,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
RTX_LAUNCH = (
    "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8 "
    "--quantization modelopt_fp4 --kv-cache-dtype fp8_e4m3 --mem-fraction-static 0.88"
)


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()


def decode_finding() -> Finding:
    return Finding.objects.get(title__startswith="First decode request kills the server")


@pytest.fixture
def hopper_variant(starter_kb: None) -> Finding:
    """The same sampler assert, caused on Hopper by something else: makes the GPU matter."""
    hopper = Hardware.objects.get(name="NVIDIA H100 80GB HBM3")
    finding = Finding.objects.create(
        title="Sampler probability assert on Hopper from a stale FlashInfer wheel",
        status=Finding.Status.PUBLISHED,
        cause="An old FlashInfer build miscomputes the top-p renormalisation on sm_90.",
        conditions=[{"key": "gpu.arch", "value": "sm_90"}, {"key": "framework", "value": "sglang"}],
    )
    FindingGpu.objects.create(finding=finding, hardware=hopper, count=8)
    ErrorSample.objects.create(finding=finding, text=fixture_text("decode_crash_rtx6000.txt"))
    Fix.objects.create(
        finding=finding,
        summary="Upgrade FlashInfer",
        outcome="resolves",
        changes=[{"action": "pin_version", "name": "flashinfer-python", "value": "0.6.3"}],
    )
    return finding


@pytest.fixture
def validated_run(starter_kb: None) -> ValidationRun:
    host = Host.objects.create(name="rtx-box-1", address="10.0.0.5", username="ci")
    fix = decode_finding().fixes.order_by("position", "id").first()
    assert fix is not None
    return ValidationRun.objects.create(
        fix=fix,
        host=host,
        status=ValidationRun.Status.PASSED,
        arch="sm_120",
        metrics={"throughput_tok_s": 1234.5, "ttft_ms": 210.0},
        finished_at=timezone.now(),
    )


DRAFT_SOURCE = """\
# B200 bring-up: FlashInfer JIT fails with an old nvcc

The server died while compiling kernels: `nvcc fatal : Unsupported gpu architecture 'compute_100a'`.
Upgrading the CUDA toolkit to 12.8 fixed it.
"""


@pytest.fixture
def draft(db: None) -> Finding:
    source = SourceDocument.objects.create(
        title="B200 bring-up notes",
        path="notes/b200.md",
        format="writeup",
        content=DRAFT_SOURCE,
        content_hash="b200-notes",
    )
    finding = Finding.objects.create(
        title="FlashInfer JIT fails on B200 with an old nvcc",
        status=Finding.Status.DRAFT,
        cause="nvcc older than 12.8 cannot target compute_100a.",
        origin=source,
        problems=["No launch command found in the write-up."],
    )
    finding.sources.add(source)
    Fix.objects.create(
        finding=finding,
        summary="Upgrade the CUDA toolkit to 12.8",
        outcome="partial",
        changes=[{"action": "other", "name": "cuda-toolkit", "value": "12.8"}],
    )
    return finding


@pytest.fixture
def reviewer(db: None) -> User:
    return User.objects.create_superuser("rev", "rev@example.com", "correct horse battery")
