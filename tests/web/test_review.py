"""The review queue can say no: reject a draft, edit its fix rows, move an attempt to the
finding it was tried against, merge a draft into the finding it repeats, and see where in
the source each field was read.

The drafts come from ingesting our own write-ups of the GLM-5 Blackwell incidents
(tests/fixtures/incidents) with the real `ingest` command.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from kb.models import Finding, Fix

pytestmark = pytest.mark.django_db

INCIDENTS = Path(__file__).resolve().parents[1] / "fixtures" / "incidents"


def ingest(name: str) -> list[Finding]:
    call_command("ingest", str(INCIDENTS / name), verbosity=0)
    return list(Finding.objects.filter(origin__path__endswith=name).order_by("pk"))


def oom_draft(findings: list[Finding]) -> Finding:
    return next(f for f in findings if f.kind == "oom")


def text_of(response) -> str:  # type: ignore[no-untyped-def]
    return html.unescape(response.content.decode())


def form_data(finding: Finding, **overrides: str) -> dict[str, str]:
    """What the review form posts as rendered: fields, every fix row, and one blank row."""
    fixes = list(finding.fixes.order_by("position", "id"))
    data = {
        "title": finding.title,
        "kind": finding.kind,
        "summary": finding.summary,
        "cause": finding.cause,
        "conditions": "",
        "fixes-TOTAL_FORMS": str(len(fixes) + 1),
        "fixes-INITIAL_FORMS": str(len(fixes)),
        "fixes-MIN_NUM_FORMS": "0",
        "fixes-MAX_NUM_FORMS": "1000",
    }
    for i, fix in enumerate(fixes):
        lines = "\n".join(
            "--" + c["name"] + (f" {c['value']}" if c["value"] else "")
            if c["action"] == "set_flag"
            else str(c["value"] or c["name"])
            for c in fix.changes
        )
        data |= {
            f"fixes-{i}-id": str(fix.pk),
            f"fixes-{i}-summary": fix.summary,
            f"fixes-{i}-changes": lines,
            f"fixes-{i}-outcome": fix.outcome,
            f"fixes-{i}-ORDER": str(i + 1),
        }
    return data | overrides


@pytest.fixture
def reviewer(db: None) -> User:
    return User.objects.create_superuser("rev", "rev@example.com", "correct horse battery")


@pytest.fixture
def signed_in(client: Client, reviewer: User) -> Client:
    client.force_login(reviewer)
    return client


@pytest.fixture
def drafts(db: None) -> list[Finding]:
    call_command("load_vocabulary", verbosity=0)
    return ingest("glm5-blackwell-fp8-kv-assert.txt")


# --- reject ---------------------------------------------------------------------------------


def test_it_rejects_a_draft_which_then_leaves_the_queue(
    signed_in: Client, drafts: list[Finding], reviewer: User
) -> None:
    draft = drafts[0]

    response = signed_in.post(f"/review/{draft.pk}/reject/", {"reason": "a retelling, no news"})

    assert response.status_code == 302
    assert response["Location"] == "/review/"
    draft.refresh_from_db()
    assert draft.status == "retired"
    assert draft.extra["rejected"] == "a retelling, no news"
    assert draft.history.first().history_user == reviewer
    queue = text_of(signed_in.get("/review/"))
    assert f'href="/review/{draft.pk}/"' not in queue
    assert f'href="/review/{drafts[1].pk}/"' in queue


def test_it_refuses_to_reject_a_published_finding(signed_in: Client, drafts: list[Finding]) -> None:
    published = drafts[0]
    published.status = Finding.Status.PUBLISHED
    published.save()

    response = signed_in.post(f"/review/{published.pk}/reject/", {"reason": ""}, follow=True)

    refusal = f"Not rejected: finding #{published.pk} is published, not a draft"
    assert refusal in text_of(response)
    published.refresh_from_db()
    assert published.status == "published"


def test_only_a_reviewer_may_reject(client: Client, drafts: list[Finding]) -> None:
    draft = drafts[0]
    anonymous = client.post(f"/review/{draft.pk}/reject/", {"reason": "spam"})
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/accounts/login/")

    client.force_login(User.objects.create_user("visitor", password="pw-visitor-1"))
    assert client.post(f"/review/{draft.pk}/reject/", {"reason": "spam"}).status_code == 403
    draft.refresh_from_db()
    assert draft.status == "draft"


# --- fix rows -------------------------------------------------------------------------------


def test_it_adds_a_fix_row_and_writes_its_summary_from_the_change(
    signed_in: Client, drafts: list[Finding]
) -> None:
    assertion = next(f for f in drafts if f.samples.filter(text__contains="nsa_kv_cache").exists())
    before = assertion.fixes.count()
    new = before  # the blank row the page ends with
    data = form_data(assertion)
    data |= {f"fixes-{new}-changes": "--kv-cache-dtype bf16", f"fixes-{new}-outcome": "proposed"}

    response = signed_in.post(f"/review/{assertion.pk}/", data)

    assert response.status_code == 302
    added = assertion.fixes.order_by("-pk").first()
    assert assertion.fixes.count() == before + 1
    assert added.summary == "Set `--kv-cache-dtype` to bf16"
    assert added.changes == [{"action": "set_flag", "name": "kv-cache-dtype", "value": "bf16"}]
    assert added.outcome == "proposed"
    page = text_of(signed_in.get(f"/review/{assertion.pk}/"))
    assert "Proposed, not confirmed — validate it" in page


def test_it_drops_and_reorders_fix_rows(signed_in: Client, drafts: list[Finding]) -> None:
    decode = next(f for f in drafts if f.fixes.count() >= 2 and f.kind == "crash")
    first, second, *rest = decode.fixes.order_by("position", "id")
    data = form_data(decode)
    data |= {"fixes-0-DELETE": "on", "fixes-1-ORDER": "9"}
    data |= {f"fixes-{i + 2}-ORDER": str(i + 2) for i in range(len(rest))}

    assert signed_in.post(f"/review/{decode.pk}/", data).status_code == 302

    assert not Fix.objects.filter(pk=first.pk).exists()
    assert list(decode.fixes.order_by("position").values_list("pk", flat=True)) == [
        *(fix.pk for fix in rest),
        second.pk,
    ]


def test_it_changes_an_outcome(signed_in: Client, drafts: list[Finding]) -> None:
    oom = oom_draft(drafts)
    data = form_data(oom) | {"fixes-0-outcome": "partial"}

    assert signed_in.post(f"/review/{oom.pk}/", data).status_code == 302

    assert oom.fixes.get().outcome == "partial"


def test_it_moves_an_attempt_to_the_finding_of_its_symptom(
    signed_in: Client, drafts: list[Finding]
) -> None:
    oom = oom_draft(drafts)
    other = next(f for f in drafts if f.kind != "oom")
    fix = oom.fixes.get()

    response = signed_in.post(f"/review/{oom.pk}/", form_data(oom) | {"fixes-0-move_to": other.pk})

    assert response.status_code == 302
    fix.refresh_from_db()
    assert fix.finding_id == other.pk
    assert fix.position == max(other.fixes.values_list("position", flat=True))
    assert not oom.fixes.exists()


def test_it_says_which_finding_does_not_exist_and_keeps_the_fix(
    signed_in: Client, drafts: list[Finding]
) -> None:
    oom = oom_draft(drafts)

    response = signed_in.post(f"/review/{oom.pk}/", form_data(oom) | {"fixes-0-move_to": "99999"})

    assert response.status_code == 400
    assert "There is no finding #99999." in text_of(response)
    assert oom.fixes.count() == 1


def test_it_refuses_an_environment_change_that_is_no_serving_knob(
    signed_in: Client, drafts: list[Finding]
) -> None:
    oom = oom_draft(drafts)
    data = form_data(oom) | {"fixes-0-changes": "LD_PRELOAD=/tmp/evil.so"}

    response = signed_in.post(f"/review/{oom.pk}/", data)

    assert response.status_code == 400
    assert "LD_PRELOAD" in text_of(response)
    assert oom.fixes.get().changes[0]["name"] == "mem-fraction-static"


def test_a_save_without_the_changes_field_keeps_the_changes(
    signed_in: Client, drafts: list[Finding]
) -> None:
    """An older form (or a client) that posts only summary and outcome loses nothing."""
    oom = oom_draft(drafts)
    data = form_data(oom)
    del data["fixes-0-changes"]

    assert signed_in.post(f"/review/{oom.pk}/", data).status_code == 302

    assert oom.fixes.get().changes[0]["name"] == "mem-fraction-static"


# --- where the fields were read -------------------------------------------------------------


def test_it_marks_in_the_source_the_passage_each_fix_was_read_from(
    signed_in: Client, drafts: list[Finding]
) -> None:
    oom = oom_draft(drafts)
    fix = oom.fixes.get()

    page = text_of(signed_in.get(f"/review/{oom.pk}/"))

    marked = re.search(rf'<mark id="passage-fix-{fix.pk}"[^>]*>(.*?)</mark>', page, re.S)
    assert marked is not None
    assert "--mem-fraction-static from 0.95 to 0.88" in marked.group(1)
    assert f'href="#passage-fix-{fix.pk}"' in page


# --- merge ----------------------------------------------------------------------------------


@pytest.fixture
def published_oom(db: None) -> Finding:
    """The OOM of the backend-override write-up, ingested and published by a reviewer first."""
    call_command("load_vocabulary", verbosity=0)
    finding = oom_draft(ingest("glm5-blackwell-backend-override.txt"))
    finding.status = Finding.Status.PUBLISHED
    finding.save()
    return finding


def test_a_draft_that_repeats_a_published_finding_merges_in_one_click(
    signed_in: Client, published_oom: Finding
) -> None:
    repeat = oom_draft(ingest("glm5-blackwell-fp8-kv-assert.txt"))
    assert repeat.status == "draft"

    queue = text_of(signed_in.get("/review/"))
    assert f"looks like finding #{published_oom.pk}" in queue
    response = signed_in.post(f"/review/{repeat.pk}/merge/", {"target": published_oom.pk})

    assert response.status_code == 302
    repeat.refresh_from_db()
    assert repeat.status == "retired"
    assert repeat.extra["merged_into"] == published_oom.pk
    assert published_oom.status == "published"
    assert published_oom.sources.count() == 2
    assert published_oom.fixes.count() == 2  # the cure, told by both documents
    assert not repeat.fixes.exists()


def test_it_will_not_merge_a_finding_into_itself(signed_in: Client, published_oom: Finding) -> None:
    repeat = oom_draft(ingest("glm5-blackwell-fp8-kv-assert.txt"))

    response = signed_in.post(f"/review/{repeat.pk}/merge/", {"target": repeat.pk}, follow=True)

    assert f"Not merged: finding #{repeat.pk} is this finding" in text_of(response)
    repeat.refresh_from_db()
    assert repeat.status == "draft"
