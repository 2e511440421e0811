"""Every page passes its own Content Security Policy in a real browser: no script, style
or image the policy refuses (Chromium reports each refusal on the console)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from kb.models import Finding
from tests.web.browser.conftest import screenshot
from tests.web.conftest import RTX_LAUNCH, fixture_text

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def refusals(page: Page) -> list[str]:
    """Where and what the browser refused, as it says on the console."""
    seen: list[str] = []

    def note(message: Any) -> None:
        if "Content Security Policy" in message.text:
            seen.append(f"{page.url}: {message.text[:160]}")

    page.on("console", note)
    return seen


def log_in(page: Page, live_server: Any) -> None:
    User.objects.create_superuser("reviewer", "r@example.org", "a-long-password-123")
    page.goto(live_server.url + "/admin/login/")
    page.get_by_label("Username").fill("reviewer")
    page.get_by_label("Password").fill("a-long-password-123")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_text("Site administration")).to_be_visible()


def test_no_page_breaks_the_content_security_policy(
    page: Page, live_server: Any, starter_kb: None
) -> None:
    seen = refusals(page)
    finding = Finding.objects.filter(status=Finding.Status.PUBLISHED).first()
    assert finding is not None
    public = ["/", "/?q=kv+cache", "/diagnose/", f"/findings/{finding.pk}/", "/runbook/",
              "/accounts/login/", "/admin/login/", "/api/v1/docs/"]  # fmt: skip
    for path in public:
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
    # A diagnosis through the form (htmx, the copy button, the answer page).
    page.goto(live_server.url + "/diagnose/")
    page.get_by_label("Traceback or error line").fill(fixture_text("decode_crash_rtx6000.txt"))
    page.get_by_label("Launch command (optional)").fill(RTX_LAUNCH)
    page.get_by_role("button", name="Diagnose").click()
    expect(page.locator("ol.fixes > li.fix").first).to_be_visible()
    page.locator("ol.fixes > li.fix").first.locator("button.copy").click()
    screenshot(page, "csp-diagnose")
    log_in(page, live_server)
    for path in ["/review/", "/admin/", "/admin/kb/finding/", f"/admin/kb/finding/{finding.pk}/change/",
                 "/admin/kb/host/add/", "/admin/api/apitoken/add/"]:  # fmt: skip
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
    assert seen == []
