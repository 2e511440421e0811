"""The loop the product exists for, in a real browser, with errors as NCCL printed them on
a real H200 (tests/decisiontree/fixtures/captured/): a paste nobody has seen gets "no known
match"; its user starts a finding from it; a reviewer writes the cause and the fix and
publishes it; the next report of the same failure, printed another way, is a known issue
with that fix first."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from kb.models import Finding
from tests.decisiontree.test_captured_errors import captured
from tests.web.browser.conftest import screenshot
from tests.web.browser.test_every_page import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def diagnose(page: Page, live_server: Any, paste: str) -> None:
    page.goto(live_server.url + "/diagnose/")
    page.get_by_label("Traceback or error line").fill(paste)
    page.get_by_label("GPU (optional)").fill("NVIDIA H200")
    page.get_by_role("button", name="Diagnose").click()


def test_a_miss_becomes_a_finding_that_answers_the_next_report(
    page: Page, live_server: Any, starter_kb: None, reviewer: User
) -> None:
    log_in(page, live_server)
    diagnose(page, live_server, captured("nccl_socket_ifname_missing"))
    expect(page.locator(".verdict h2")).to_have_text("No known match")

    page.get_by_role("button", name="Start a finding from this paste").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Review")
    page.get_by_label("Cause").fill(
        "NCCL_SOCKET_IFNAME names an interface this host does not have, so NCCL's bootstrap "
        "finds no socket interface at all."
    )
    page.get_by_label("New fix 1", exact=True).fill("Point NCCL at an interface the host has")
    page.get_by_label("Changes of new fix 1").fill("NCCL_SOCKET_IFNAME=eth0")
    page.get_by_label("Outcome of new fix 1").select_option("resolves")
    page.get_by_role("button", name="Save and publish").click()
    expect(page.get_by_role("status")).to_contain_text("ublished")
    finding = Finding.objects.get(status=Finding.Status.PUBLISHED, cause__startswith="NCCL_SOCKET")

    # The same failure met again: another interface name, the error raised at the first
    # all-reduce instead of at init, each line prefixed with the rank.
    diagnose(page, live_server, captured("nccl_socket_ifname_missing_again"))

    expect(page.locator(".verdict h2")).to_have_text("Known issue")
    first = page.locator("li.fix").first
    expect(first).to_contain_text("NCCL_SOCKET_IFNAME=eth0")
    expect(first.get_by_role("link", name=finding.title)).to_be_visible()
    screenshot(page, "learning-loop-known")
