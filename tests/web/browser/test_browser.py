"""A user in a real browser: search, paste a traceback, answer, open, publish, export."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from kb.models import Finding, FixFeedback
from tests.web.browser.conftest import screenshot
from tests.web.conftest import RTX_LAUNCH, fixture_text

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_searches_and_filters_known_issues(
    page: Page, live_server: Any, starter_kb: None
) -> None:
    page.goto(live_server.url + "/")
    page.get_by_label("Error text, flag or model").fill("nsa_kv_cache_store_fp8")
    page.get_by_role("button", name="Search").click()

    first = page.locator(".finding .title").first
    expect(first).to_contain_text("Triton attention backend asserts")
    expect(page.locator(".snippet mark").first).to_be_visible()
    page.get_by_label("Architecture").select_option("sm_120")
    expect(page.locator(".count")).to_contain_text("arch = sm_120")
    assert "arch=sm_120" in page.url  # the filtered search can be bookmarked
    screenshot(page, "search")


def test_it_reads_a_misspelt_identifier_and_says_so(
    page: Page, live_server: Any, starter_kb: None
) -> None:
    page.goto(live_server.url + "/")
    page.get_by_label("Error text, flag or model").fill("flashmla_kvv decod")
    page.get_by_role("button", name="Search").click()

    expect(page.locator(".finding .title").first).to_contain_text("First decode request")
    expect(page.locator(".reading")).to_contain_text("searched for flashmlakv instead")
    screenshot(page, "search-misspelt")


def paste(page: Page, live_server: Any, **fields: str) -> None:
    page.goto(live_server.url + "/diagnose/")
    page.get_by_label("Traceback or error line").fill(fixture_text("decode_crash_rtx6000.txt"))
    if "launch" in fields:
        page.get_by_label("Launch command (optional)").fill(fields["launch"])
    if "gpu" in fields:
        page.get_by_label("GPU (optional)").fill(fields["gpu"])
    page.get_by_role("button", name="Diagnose").click()


def log_in(page: Page, live_server: Any, then: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/?next={then}")
    page.get_by_label("Username").fill("rev")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()


def test_it_puts_the_right_fix_first_for_a_pasted_decode_crash(
    page: Page, live_server: Any, starter_kb: None, reviewer: User
) -> None:
    log_in(page, live_server, then="/diagnose/")  # feedback counts once per person
    paste(page, live_server, launch=RTX_LAUNCH, gpu="RTX PRO 6000")

    first = page.locator("ol.fixes > li.fix").first
    expect(first.locator(".flag-change").first).to_have_text("--kv-cache-dtype bf16")
    expect(first.locator(".changes")).to_contain_text("decode-backend trtllm")
    expect(first.locator("pre")).to_contain_text("--kv-cache-dtype bf16")
    expect(page.locator(".path-tree")).to_be_visible()
    expect(page.get_by_role("heading", name="Known not to help")).to_be_visible()
    screenshot(page, "diagnose")

    first.locator("button.copy").click()
    expect(first.locator("button.copy")).to_have_attribute("data-copied", "true")
    first.get_by_role("button", name="Fixed it").click()
    expect(first.locator(".thanks")).to_contain_text("fixed it")
    assert FixFeedback.objects.filter(helped=True, channel="web").count() == 1
    first.get_by_role("button", name="Undo").click()
    expect(first.locator(".thanks")).to_contain_text("Taken back")
    assert not FixFeedback.objects.exists()


def test_it_reranks_when_a_question_is_answered(
    page: Page, live_server: Any, hopper_variant: Finding
) -> None:
    paste(page, live_server)
    expect(page.locator(".question legend").first).to_contain_text("Which GPU?")
    first_link = page.url

    page.locator(".question").get_by_role("button", name="sm_90").click()

    first = page.locator("ol.fixes > li.fix").first
    expect(first.locator("h3")).to_have_text("Upgrade FlashInfer")
    expect(page.locator(".answered")).to_contain_text("gpu.arch = sm_90")
    assert page.url != first_link  # the answered diagnosis has a link of its own
    assert re.search(r"/diagnose/[\w-]{22,}/#diagnosis$", page.url)
    screenshot(page, "diagnose-answered")


def test_it_answers_a_question_without_javascript(
    no_js_page: Page, live_server: Any, hopper_variant: Finding
) -> None:
    paste(no_js_page, live_server)
    no_js_page.locator(".question").get_by_role("button", name="sm_120").click()

    first = no_js_page.locator("ol.fixes > li.fix").first
    expect(first.locator(".flag-change").first).to_have_text("--kv-cache-dtype bf16")


def test_it_shows_a_clear_message_for_a_binary_paste(
    page: Page, live_server: Any, starter_kb: None
) -> None:
    page.goto(live_server.url + "/diagnose/")
    page.get_by_label("Traceback or error line").fill("\x7fELF\x02\x01\x00\x00garbage")
    page.get_by_role("button", name="Diagnose").click()

    expect(page.get_by_role("alert")).to_contain_text("binary file")


def test_it_opens_a_finding_from_the_results(
    page: Page, live_server: Any, starter_kb: None
) -> None:
    page.goto(live_server.url + "/?q=flashmla_kv")
    page.get_by_role("link", name=re.compile("^First decode request kills")).click()

    expect(page.get_by_role("heading", level=1)).to_contain_text("First decode request")
    expect(page.get_by_role("link", name="sm_120")).to_be_visible()
    page.get_by_role("link", name="GLM-5-NVFP4").first.click()
    expect(page.locator(".count")).to_contain_text("model = GLM-5-NVFP4")
    page.go_back()
    screenshot(page, "finding")


def test_it_publishes_a_draft_after_logging_in(
    page: Page, live_server: Any, draft: Finding, reviewer: User
) -> None:
    page.goto(live_server.url + "/review/")
    page.get_by_label("Username").fill("rev")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()

    page.get_by_role("link", name=draft.title).click()
    expect(page.locator(".review-source pre")).to_contain_text("compute_100a")
    screenshot(page, "review")
    page.get_by_label("Outcome of fix 1").select_option("resolves")
    page.get_by_role("button", name="Save and publish").click()

    expect(page.get_by_role("status")).to_contain_text("Published")
    draft.refresh_from_db()
    assert draft.status == "published"
    assert draft.fixes.get().outcome == "resolves"
    screenshot(page, "review-queue")


def test_it_exports_the_runbook(page: Page, live_server: Any, starter_kb: None) -> None:
    page.goto(live_server.url + "/runbook/")
    expect(page.get_by_role("heading", level=2).first).to_contain_text("GLM-5-NVFP4 on 8x")
    screenshot(page, "runbook")

    with page.expect_download() as download_info:
        page.get_by_role("link", name="Export as Markdown").click()
    download = download_info.value

    assert download.suggested_filename == "fixgraph-runbook.md"
    text = Path(download.path()).read_text(encoding="utf-8")
    assert text.startswith("# FixGraph runbook")
    assert "Pitfalls" in text


def test_it_is_usable_on_a_phone_sized_screen(
    page: Page, live_server: Any, starter_kb: None
) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    paste(page, live_server, launch=RTX_LAUNCH, gpu="RTX PRO 6000")

    expect(page.locator("ol.fixes > li.fix").first).to_be_visible()
    screenshot(page, "diagnose-mobile")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400, f"the page scrolls sideways: {width}px wide"


def test_it_diagnoses_a_whole_server_log_attached_as_a_file(
    page: Page, live_server: Any, starter_kb: None, reviewer: User, tmp_path: Path
) -> None:
    log = tmp_path / "sglang-server.log"
    request_line = b"[2026-03-02 11:00:00 TP0] Decode batch. #running-req: 3, #token: 1841\n"
    with log.open("wb") as out:  # 12 MB of requests: far past what a paste holds
        out.write(request_line * (12_000_000 // len(request_line)))
        out.write(fixture_text("decode_crash_rtx6000.txt").encode())
    log_in(page, live_server, then="/diagnose/")

    page.get_by_label("Or attach the whole server log").set_input_files(str(log))
    page.get_by_label("GPU (optional)").fill("RTX PRO 6000")
    page.locator("main form button[type=submit]").click()

    expect(page.locator(".read-from")).to_contain_text(
        "From an attached log: sglang-server.log is 12.0 MB: read its first 250 KB (the launch)"
    )
    first = page.locator("ol.fixes > li.fix").first
    expect(first.locator(".flag-change").first).to_have_text("--kv-cache-dtype bf16")
    screenshot(page, "diagnose-log")
