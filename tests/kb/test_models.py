"""The records keep their invariants in the database, not only in forms."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from kb.models import (
    ErrorSignature,
    Finding,
    FindingGpu,
    Fix,
    Flag,
    FlagSetting,
    FrameworkRelease,
    Hardware,
    Host,
    SourceDocument,
)

pytestmark = pytest.mark.django_db


def make_gpu(name: str = "NVIDIA RTX PRO 6000 Blackwell Server Edition") -> Hardware:
    return Hardware.objects.create(name=name, arch="sm_120", compute_capability="12.0")


def assert_rejected(create) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(IntegrityError), transaction.atomic():
        create()


def test_it_refuses_two_gpus_with_the_same_name() -> None:
    make_gpu()
    assert_rejected(make_gpu)


def test_it_refuses_a_duplicate_fingerprint() -> None:
    def create() -> ErrorSignature:
        return ErrorSignature.objects.create(
            fingerprint="ab" * 20,
            template_key="cd" * 20,
            exception_type="AssertionError",
            template="assert not self.nsa_kv_cache_store_fp8",
        )

    create()
    assert_rejected(create)


def test_it_allows_the_same_flag_name_in_two_frameworks_but_not_twice_in_one() -> None:
    Flag.objects.create(framework="sglang", name="kv-cache-dtype")
    Flag.objects.create(framework="vllm", name="kv-cache-dtype")
    assert_rejected(lambda: Flag.objects.create(framework="vllm", name="kv-cache-dtype"))


def test_it_refuses_a_duplicate_framework_release() -> None:
    FrameworkRelease.objects.create(name="sglang", version="0.5.9")
    assert_rejected(lambda: FrameworkRelease.objects.create(name="sglang", version="0.5.9"))


def test_it_refuses_a_gpu_count_of_zero() -> None:
    finding = Finding.objects.create(title="OOM at capture")
    assert_rejected(
        lambda: FindingGpu.objects.create(finding=finding, hardware=make_gpu(), count=0)
    )


def test_it_refuses_the_same_flag_twice_in_one_finding() -> None:
    finding = Finding.objects.create(title="Decode crash")
    FlagSetting.objects.create(finding=finding, name="kv-cache-dtype", value="fp8_e4m3")
    assert_rejected(
        lambda: FlagSetting.objects.create(finding=finding, name="kv-cache-dtype", value="bf16")
    )


def test_it_refuses_a_host_port_out_of_range() -> None:
    assert_rejected(
        lambda: Host.objects.create(name="gpu-07", address="10.0.0.7", port=70000, username="u")
    )


def test_it_keeps_one_finding_per_entry_of_a_source_document() -> None:
    doc = SourceDocument.objects.create(
        title="FINDINGS.md", format="findings_md", content="x", content_hash="0" * 64
    )
    Finding.objects.create(title="A", origin=doc, origin_key="a")
    assert_rejected(lambda: Finding.objects.create(title="A again", origin=doc, origin_key="a"))


def test_it_refuses_two_documents_with_the_same_content() -> None:
    def create() -> SourceDocument:
        return SourceDocument.objects.create(
            title="w", format="writeup", content="same", content_hash="1" * 64
        )

    create()
    assert_rejected(create)


def test_it_records_who_changed_a_finding_and_a_fix() -> None:
    alice = User.objects.create_user("alice")
    finding = Finding.objects.create(title="Decode crash", status=Finding.Status.DRAFT)
    fix = Fix.objects.create(finding=finding, summary="--kv-cache-dtype bf16", outcome="resolves")

    finding.status = Finding.Status.PUBLISHED
    finding._history_user = alice
    finding.save()
    fix.outcome = Fix.Outcome.PARTIAL
    fix._history_user = alice
    fix.save()

    latest = finding.history.first()
    assert [h.status for h in finding.history.all()] == ["published", "draft"]
    assert latest.history_user == alice
    assert latest.history_type == "~"
    assert fix.history.first().outcome == "partial"
    assert fix.history.first().history_user == alice
