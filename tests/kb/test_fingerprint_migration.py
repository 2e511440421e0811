"""A reviewer's link survives a fingerprint-version bump, and is stored anew on first use."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from api.serializers import DiagnosisSerializer
from decisiontree.fingerprint import FINGERPRINT_VERSION, signature_of
from decisiontree.traceback import parse
from kb.models import Finding, SignatureDecision
from kb.services.diagnosis import decide_signature, diagnose
from tests.findings_md import publish

pytestmark = pytest.mark.django_db


def answer_to(paste: str) -> dict:
    """The JSON object `diagnose --json` and the API return for `paste`."""
    return DiagnosisSerializer(diagnose(paste), context={"launch_command": ""}).data


# A paste nobody has filed: the reviewer linked it to the finding below by hand.
PASTE = """\
Traceback (most recent call last):
  File "/opt/conda/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 2210, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)
  File "/opt/conda/lib/python3.11/site-packages/sglang/srt/model_executor/model_runner.py", line 412, in init_memory_pool
    raise RuntimeError(f"Not enough memory for KV cache: page_size={page_size} tokens={n}")
RuntimeError: Not enough memory for KV cache: page_size=64 tokens=1200
"""
STORED_UNDER_VERSION_2 = "d85859eba9fa96bab4c0bb82de4c1b34"  # what 029593a computed for PASTE

FINDINGS = """\
# Findings

## KV cache pool too small after raising the page size
- Framework: sglang
- Symptom: the scheduler dies while building the KV pool
- Fix: lower --page-size back to 16
- Status: resolved

```
RuntimeError: Failed to allocate the radix cache pool on every rank
```
"""


@pytest.fixture
def finding(tmp_path: Path) -> Finding:
    call_command("load_vocabulary", verbosity=0)
    publish(tmp_path / "FINDINGS.md", FINDINGS)
    return Finding.objects.get(title__startswith="KV cache pool")


def test_a_link_stored_under_version_2_links_after_the_bump_and_is_stored_under_3(
    finding: Finding,
) -> None:
    SignatureDecision.objects.create(
        fingerprint=STORED_UNDER_VERSION_2,
        fingerprint_version=2,
        finding=finding,
        decision=SignatureDecision.Decision.LINK,
    )

    first = answer_to(PASTE)
    second = answer_to(PASTE)

    current = signature_of(parse(PASTE))
    assert current is not None and current.fingerprint != STORED_UNDER_VERSION_2
    for answer in (first, second):
        assert answer["fixes"][0]["finding"]["id"] == finding.pk
        assert answer["matches"][0]["layer"] == "linked"
    carried = SignatureDecision.objects.get(fingerprint=current.fingerprint, finding=finding)
    assert (carried.decision, carried.fingerprint_version) == ("link", FINGERPRINT_VERSION)
    # The old row stays while version 2 is the previous version.
    assert SignatureDecision.objects.filter(fingerprint=STORED_UNDER_VERSION_2).count() == 1


def test_a_new_decision_is_stored_with_the_current_version(finding: Finding) -> None:
    current = signature_of(parse(PASTE))
    assert current is not None

    row = decide_signature(current.fingerprint, finding, decision="link")

    assert row.fingerprint_version == FINGERPRINT_VERSION
    assert answer_to(PASTE)["matches"][0]["layer"] == "linked"
