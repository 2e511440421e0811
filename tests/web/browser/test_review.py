"""A reviewer in a real browser says no to a draft, adds a fix row, and merges a draft into
the published finding it repeats; the review pages read on a phone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from playwright.sync_api import Page, expect

from kb.models import Finding
from tests.web.browser.conftest import MOBILE, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

INCIDENTS = Path(__file__).resolve().parents[2] / "fixtures" / "incidents"


def ingest(name: str) -> list[Finding]:
    call_command("ingest", str(INCIDENTS / name), verbosity=0)
    return list(Finding.objects.filter(origin__path__endswith=name).order_by("pk"))


@pytest.fixture
def reviewer(db: None) -> User:
    return User.objects.create_superuser("rev", "rev@example.com", "correct horse battery")


def log_in(page: Page, live_server: Any, path: str) -> None:
    page.goto(live_server.url + path)
    page.get_by_label("Username").fill("rev")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()


def test_a_reviewer_rejects_a_draft_adds_a_fix_row_and_merges_a_repeat(
    page: Page, live_server: Any, reviewer: User
) -> None:
    call_command("load_vocabulary", verbosity=0)
    first = ingest("glm5-blackwell-backend-override.txt")
    published = next(f for f in first if f.kind == "oom")
    published.status = Finding.Status.PUBLISHED
    published.save()
    drafts = ingest("glm5-blackwell-fp8-kv-assert.txt")
    repeat = next(f for f in drafts if f.kind == "oom")
    assertion = next(f for f in drafts if f.samples.filter(text__contains="nsa_kv").exists())
    doomed = next(f for f in first if f.pk != published.pk)
    log_in(page, live_server, "/review/")

    # Reject: a draft the reviewer does not want leaves the queue.
    page.get_by_role("link", name=doomed.title).click()
    page.get_by_text("Reject this draft").click()
    page.get_by_label("Why (optional)").fill("told better by the other write-up")
    page.get_by_role("button", name="Reject draft").click()
    expect(page.get_by_role("status")).to_contain_text("Rejected")
    expect(page.get_by_role("link", name=doomed.title)).to_have_count(0)

    # Add a fix row: the proposal the write-up names, written as a change.
    page.get_by_role("link", name=assertion.title).click()
    expect(page.locator("mark.passage").first).to_be_visible()
    page.get_by_role("button", name="Add a fix row").click()
    rows = assertion.fixes.count()
    page.get_by_label(f"Changes of new fix {rows + 2}").fill("--kv-cache-dtype bf16")
    page.get_by_label(f"Outcome of new fix {rows + 2}").select_option("proposed")
    page.get_by_role("button", name="Save draft").click()
    expect(page.get_by_role("status")).to_contain_text("Saved")
    expect(page.get_by_text("Proposed, not confirmed — validate it").first).to_be_visible()
    assert assertion.fixes.filter(summary="Set `--kv-cache-dtype` to bf16").exists()
    screenshot(page, "review-draft")

    # Merge: the OOM told again joins the published finding in one click.
    page.get_by_role("link", name="Review queue").first.click()
    row = page.get_by_role("row").filter(has_text=repeat.title)
    expect(row).to_contain_text(f"looks like finding #{published.pk}")
    screenshot(page, "review-queue-looks-like")
    row.get_by_role("button", name=f"Merge into #{published.pk}").click()
    expect(page.get_by_role("status")).to_contain_text(f"into #{published.pk}")
    repeat.refresh_from_db()
    assert repeat.status == "retired"
    assert published.sources.count() == 2


def test_the_review_pages_read_on_a_phone(page: Page, live_server: Any, reviewer: User) -> None:
    call_command("load_vocabulary", verbosity=0)
    draft = ingest("glm5-blackwell-fp8-kv-assert.txt")[0]
    page.set_viewport_size(MOBILE.viewport)
    log_in(page, live_server, f"/review/{draft.pk}/")

    expect(page.get_by_role("heading", name="Review a draft")).to_be_visible()
    screenshot(page, "review-draft-mobile")
    for path in (f"/review/{draft.pk}/", "/review/"):
        page.goto(live_server.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= MOBILE.width + 10, f"{path} scrolls sideways: {width}px wide"
