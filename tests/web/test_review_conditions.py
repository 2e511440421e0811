"""A reviewer's condition is stored as the diagnosis reads it, so it can be met."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from kb.models import ErrorSample, Finding
from kb.services.diagnosis import diagnose
from tests.web.test_pages import review_data

pytestmark = pytest.mark.django_db

NVCC_ERROR = """\
Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/flashinfer/jit/core.py", line 123, in build_and_load
    run_ninja(workdir, ninja_file, verbose)
  File "/opt/venv/lib/python3.12/site-packages/flashinfer/jit/cpp_ext.py", line 240, in run_ninja
    raise RuntimeError(msg)
RuntimeError: Ninja build failed: nvcc fatal   : Unsupported gpu architecture 'compute_100a'
"""


def publish_with_conditions(client: Client, draft: Finding, conditions: str) -> None:
    data = review_data(draft, conditions=conditions, publish="1")
    data["fixes-0-outcome"] = "resolves"
    response = client.post(f"/review/{draft.pk}/", data)
    assert response.status_code == 302, response.content.decode()[:2000]


def test_a_short_key_written_by_a_reviewer_is_met(
    client: Client, draft: Finding, reviewer: User
) -> None:
    """Bug: `arch = sm_100` was stored with the key `arch`, which nothing reads."""
    ErrorSample.objects.create(finding=draft, text=NVCC_ERROR)
    client.force_login(reviewer)

    publish_with_conditions(client, draft, "arch = sm100")

    draft.refresh_from_db()
    assert draft.conditions == [{"key": "gpu.arch", "value": "sm_100", "negate": False}]
    (ranked,) = [
        fix for fix in diagnose(NVCC_ERROR, gpu="B200").fixes if fix.finding.id == draft.pk
    ]
    states = [(step.key, str(step.state)) for step in ranked.why if step.step == "condition"]
    assert states == [("gpu.arch", "met")]


def test_it_explains_a_key_nothing_reads(client: Client, draft: Finding, reviewer: User) -> None:
    client.force_login(reviewer)

    response = client.post(f"/review/{draft.pk}/", review_data(draft, conditions="colour = blue"))

    assert response.status_code == 400
    assert "is not a condition key" in response.content.decode()
    draft.refresh_from_db()
    assert draft.status == "draft" and draft.conditions == []


def test_a_derived_condition_is_shown_as_seen_and_a_reviewer_can_state_it(
    client: Client, draft: Finding, reviewer: User
) -> None:
    draft.conditions = [{"key": "gpu.arch", "value": "sm_100", "negate": False, "derived": True}]
    draft.save()
    client.force_login(reviewer)

    form = client.get(f"/review/{draft.pk}/").content.decode()
    assert "gpu.arch = sm_100 (seen)" in form

    publish_with_conditions(client, draft, "gpu.arch = sm_100 (seen)")
    draft.refresh_from_db()
    assert draft.conditions == [
        {"key": "gpu.arch", "value": "sm_100", "negate": False, "derived": True}
    ]
    page = client.get(f"/findings/{draft.pk}/").content.decode()
    assert "Seen with" in page and "Applies when" not in page

    publish_with_conditions(client, draft, "gpu.arch = sm_100")
    draft.refresh_from_db()
    assert draft.conditions == [{"key": "gpu.arch", "value": "sm_100", "negate": False}]
    page = client.get(f"/findings/{draft.pk}/").content.decode()
    assert "Applies when" in page and "Seen with" not in page
