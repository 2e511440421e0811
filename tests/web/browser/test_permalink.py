"""A diagnosis has a link: whoever opens it sees the same answer, with the first fix in view."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from kb.models import StoredDiagnosis
from tests.web.browser.conftest import SIZES, screenshot
from tests.web.conftest import RTX_LAUNCH, fixture_text

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def in_view(page: Page, target: Locator) -> bool:
    box = target.bounding_box()
    viewport = page.viewport_size
    assert box is not None and viewport is not None
    return box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"]


def paste_decode_crash(page: Page, live_server: Any) -> None:
    page.goto(live_server.url + "/diagnose/")
    page.get_by_label("Traceback or error line").fill(fixture_text("decode_crash_rtx6000.txt"))
    page.get_by_label("Launch command (optional)").fill(RTX_LAUNCH)
    page.get_by_label("GPU (optional)").fill("RTX PRO 6000")
    page.get_by_role("button", name="Diagnose").click()
    page.wait_for_url(re.compile(r"/diagnose/[\w-]{22,}/#diagnosis$"))


@pytest.mark.parametrize("size", SIZES, ids=lambda size: size.name)
def test_it_opens_the_link_of_a_diagnosis_in_a_new_browser(
    browser: Browser, live_server: Any, starter_kb: None, size: Any
) -> None:
    asker = browser.new_context(viewport=size.viewport)
    page = asker.new_page()
    paste_decode_crash(page, live_server)
    first_fix = page.locator("ol.fixes > li.fix").first
    expect(first_fix).to_be_visible()
    assert in_view(page, page.locator(".verdict h2")), "the verdict is scrolled out of view"
    assert in_view(page, first_fix.locator(".fix-head")), "fix 1 is below the fold"
    screenshot(page, f"diagnosis-after-submit-{size.name}", full_page=False)
    # A flag never splits after one of its hyphens: every flag is one box on one line.
    split_flags = page.locator("#diagnosis .w").evaluate_all(
        "spans => spans.filter(s => s.getClientRects().length > 1).map(s => s.textContent)"
    )
    assert not split_flags, f"flags broken across lines: {split_flags}"
    asked_command = first_fix.locator("pre").inner_text()
    link = page.locator("#permalink").inner_text()
    asker.close()

    # Someone else, not logged in, opens the link from a chat message.
    reader = browser.new_context(viewport=size.viewport)
    shared = reader.new_page()
    shared.goto(link)

    first_fix = shared.locator("ol.fixes > li.fix").first
    expect(first_fix.locator(".flag-change").first).to_have_text("--kv-cache-dtype bf16")
    screenshot(shared, f"diagnosis-permalink-{size.name}", full_page=False)
    assert first_fix.locator("pre").inner_text() == asked_command
    assert in_view(shared, shared.locator(".verdict h2")), "the verdict is scrolled out of view"
    assert in_view(shared, first_fix.locator(".fix-head")), "fix 1 is below the fold"
    expect(shared.locator(".asked")).to_contain_text("by anonymous")
    reader.close()
    assert StoredDiagnosis.objects.count() == 1  # opening a link diagnoses nothing again
