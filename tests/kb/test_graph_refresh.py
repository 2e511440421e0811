"""What moves the decision graph: votes and runs refresh its evidence, drafts leave it be.

A rebuild reads and indexes every published finding (seconds at 100k); a vote or a
draft made from a paste must not cost every process one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from kb.models import Finding, Fix
from kb.services.diagnosis import diagnose, knowledge_graph, start_finding_from_paste
from kb.services.feedback import Voter, vote
from kb.services.records import link_samples
from tests.findings_md import publish

pytestmark = pytest.mark.django_db

KNOWN = "RuntimeError: Failed to allocate the radix cache pool on every rank"
UNKNOWN = "ValueError: expert router topk_ids out of range for the fused moe kernel"
FINDINGS = f"""# Findings

## Radix cache pool fails at start-up
- Framework: sglang
- Fix: lower --page-size to 16
- Status: resolved

```
{KNOWN}
```
"""


@pytest.fixture
def published(tmp_path: Path) -> Finding:
    call_command("load_vocabulary", verbosity=0)
    publish(tmp_path / "FINDINGS.md", FINDINGS)
    return Finding.objects.get()


def feedback_line(answer: object) -> str:
    return str(answer.fixes[0].why[-1].detail)  # type: ignore[attr-defined]


def test_a_vote_reaches_the_next_answer_without_a_rebuild(published: Finding) -> None:
    before = knowledge_graph()
    assert "feedback" not in feedback_line(diagnose(KNOWN))
    user = get_user_model().objects.create_user("oncall")

    vote(Fix.objects.get(finding=published), Voter.for_user(user), helped=True)

    after = knowledge_graph()
    assert after is not before
    assert after.index is before.index  # the same parsed and indexed findings
    assert "feedback: 1 helped, 0 did not" in feedback_line(diagnose(KNOWN))


def test_a_draft_from_a_paste_leaves_the_graph_until_it_is_published(published: Finding) -> None:
    before = knowledge_graph()
    user = get_user_model().objects.create_user("oncall")

    draft = start_finding_from_paste(UNKNOWN, user=user)
    Fix.objects.create(
        finding=draft, summary="Pin the fused moe kernel config", outcome=Fix.Outcome.RESOLVES
    )
    draft.cause = "the router's top-k ids index past the expert count"
    draft.save()

    assert knowledge_graph() is before
    assert diagnose(UNKNOWN).match == "none"

    draft.status = Finding.Status.PUBLISHED
    draft.save()

    assert knowledge_graph() is not before
    assert diagnose(UNKNOWN).fixes[0].finding.id == draft.pk


def test_a_sample_added_to_a_published_finding_is_matched_next(published: Finding) -> None:
    before = knowledge_graph()
    assert diagnose(UNKNOWN).match == "none"

    link_samples(published, (UNKNOWN,), new=False)

    assert knowledge_graph() is not before
    assert diagnose(UNKNOWN).fixes[0].finding.id == published.pk


def test_unpublishing_a_finding_takes_it_out_of_the_answers(published: Finding) -> None:
    assert diagnose(KNOWN).match == "known"

    finding = Finding.objects.get(pk=published.pk)
    finding.status = Finding.Status.DRAFT
    finding.save()

    assert diagnose(KNOWN).match == "none"
