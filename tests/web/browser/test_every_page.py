"""Every page at a laptop's and a phone's width: nothing scrolls sideways, and a screenshot
of each is kept for a person to look at (test-artifacts/screenshots/pages/)."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.text import slugify
from playwright.sync_api import Browser, Page, expect

from decisiontree.launch import parse_launch_command
from kb.models import Finding, Host, ValidationRun
from kb.services.stored_diagnoses import diagnose_and_store
from tests.web.browser.conftest import MOBILE, SIZES, Size, screenshot
from tests.web.conftest import RTX_LAUNCH, fixture_text
from tests.web.test_run_page import H200_FACTS
from tests.web.test_runbook import add_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page: Page, live_server: Any) -> None:
    page.goto(live_server.url + "/accounts/login/")
    page.get_by_label("Username").fill("rev")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".account")).to_contain_text("rev")


def pages_to_visit(draft: Finding) -> list[tuple[str, str]]:
    """(name, path) of every kind of page, each finding's included."""
    record = diagnose_and_store(
        fixture_text("decode_crash_rtx6000.txt"), launch_command=RTX_LAUNCH, gpu="RTX PRO 6000"
    )
    visits = [
        ("known-issues", "/"),
        ("search", "/?q=nsa_kv_cache_store_fp8"),
        ("search-by-last-seen", "/?ordering=last_seen"),
        ("paste", "/diagnose/"),
        ("diagnosis", record.get_absolute_url()),
        ("runbook", "/runbook/"),
        ("validation", "/runs/"),
        ("review-queue", "/review/"),
        ("review-draft", f"/review/{draft.pk}/"),
        ("not-found", "/no/such/page/"),
    ]
    for finding in Finding.objects.order_by("pk"):
        visits.append((f"finding-{slugify(finding.title)[:60]}", f"/findings/{finding.pk}/"))
    for run in ValidationRun.objects.order_by("pk"):
        visits.append((f"validation-run-{run.status}", f"/runs/{run.pk}/"))
    return visits


@pytest.mark.parametrize("size", SIZES, ids=lambda size: size.name)
def test_no_page_scrolls_sideways(
    browser: Browser,
    live_server: Any,
    starter_kb: None,
    draft: Finding,
    reviewer: User,
    validated_run: ValidationRun,
    size: Size,
) -> None:
    Host.objects.create(
        name="h200-lab", address="10.0.0.9", username="ci", labels=["lab-a"], facts=H200_FACTS,
        facts_at=timezone.now(),
    )  # fmt: skip
    # A second, earlier run: the runbook's throughput table has two rows and draws its chart.
    add_run(validated_run.fix.finding, validated_run, days_ago=9, tok_s=1105.0)
    failed_run(validated_run)
    context = browser.new_context(viewport=size.viewport)
    page = context.new_page()
    screenshot_login(page, live_server, size)
    log_in(page, live_server)  # a reviewer sees the most: drafts, review forms, Validate on…

    too_wide = []
    for name, path in pages_to_visit(draft):
        page.goto(live_server.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        screenshot(page, f"pages/{size.name}/{name}")
        if width > size.width:
            too_wide.append(f"{path}: {width}px")
    # The 500 page as Django serves it on a crash (rendered without a request), on our CSS.
    page.goto(live_server.url + "/")
    page.set_content(render_to_string("500.html"), wait_until="load")
    expect(page.locator("h1")).to_have_text("Something broke on our side")
    screenshot(page, f"pages/{size.name}/server-error")
    if page.evaluate("document.documentElement.scrollWidth") > size.width:
        too_wide.append("500 page")
    context.close()
    assert not too_wide, f"pages wider than {size.width}px: {too_wide}"


def failed_run(like: ValidationRun) -> ValidationRun:
    """A run that failed the way they do: a long launch line, a log of long lines."""
    log = "\n".join(
        [f"[10:0{i}:00] waiting for /health (attempt {i})" for i in range(5)]
        + ["---- server log (last lines) ----", fixture_text("decode_crash_rtx6000.txt")]
    )
    return ValidationRun.objects.create(
        fix=like.fix,
        host=like.host,
        status=ValidationRun.Status.FAILED,
        command=RTX_LAUNCH,
        arch="sm_120",
        framework_version="0.5.9",
        error="the server exited with status 1 before it answered /health",
        log=log,
        started_at=like.finished_at,
        finished_at=like.finished_at,
    )


def screenshot_login(page: Page, live_server: Any, size: Size) -> None:
    page.goto(live_server.url + "/accounts/login/")
    assert page.evaluate("document.documentElement.scrollWidth") <= size.width
    screenshot(page, f"pages/{size.name}/login")


def test_occurrence_counts_move_after_two_diagnoses(
    page: Page, live_server: Any, starter_kb: None
) -> None:
    finding = Finding.objects.get(title__startswith="First decode request kills the server")
    page.goto(f"{live_server.url}/findings/{finding.pk}/")
    expect(page.locator(".occurrences .seen")).to_have_text(re.compile(r"^\s*0\s+times pasted"))

    for gpu in ("RTX PRO 6000", ""):
        page.goto(live_server.url + "/diagnose/")
        page.get_by_label("Traceback or error line").fill(fixture_text("decode_crash_rtx6000.txt"))
        page.get_by_label("GPU (optional)").fill(gpu)
        page.get_by_role("button", name="Diagnose").click()
        expect(page.locator(".verdict h2")).to_have_text("Known issue")

    page.goto(f"{live_server.url}/findings/{finding.pk}/")
    expect(page.locator(".occurrences .seen")).to_have_text(re.compile(r"^\s*2\s+times pasted"))
    expect(page.locator(".occurrences .shares").first).to_contain_text("RTX PRO 6000")
    screenshot(page, "occurrences-finding")
    page.goto(live_server.url + "/?ordering=last_seen")
    first = page.locator("li.finding").first
    expect(first.locator(".title")).to_contain_text("First decode request kills the server")
    expect(first.locator(".figures")).to_contain_text("seen 2 times")
    screenshot(page, "occurrences-list")


def test_the_runbook_copy_button_gives_a_whole_launch_line(
    browser: Browser, live_server: Any, starter_kb: None
) -> None:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    page.goto(live_server.url + "/runbook/")
    entry = page.locator("section.runbook-entry").filter(has_text="GLM-5-NVFP4 on 8x")

    entry.get_by_role("button", name=re.compile("Copy the launch command")).click()

    copied = page.evaluate("navigator.clipboard.readText()")
    context.close()
    assert re.match(r"^python3? -m sglang\.launch_server --model-path \S+ ", copied), copied
    assert "\n" not in copied
    launched = parse_launch_command(copied)
    works = Finding.objects.get(kind="works")
    assert launched.model == "GLM-5-NVFP4"
    assert launched.flags["tp-size"] == "8"
    recorded = parse_launch_command(works.works_command).flags
    assert all(launched.flags.get(name) == value for name, value in recorded.items())
    assert shlex.split(copied)  # quotes balance: it pastes into a shell as one command


def test_on_a_phone_the_first_known_issue_shows_on_the_first_screen(
    browser: Browser, live_server: Any, starter_kb: None
) -> None:
    context = browser.new_context(viewport=MOBILE.viewport)
    page = context.new_page()
    page.goto(live_server.url + "/")
    title = page.locator("li.finding .title").first
    box = title.bounding_box()
    screenshot(page, "known-issues-first-screen-mobile", full_page=False)
    context.close()
    assert box is not None and box["y"] + box["height"] <= MOBILE.height, box
