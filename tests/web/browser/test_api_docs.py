"""The API docs load everything from FixGraph's own host: a browser records every request.

The server is reached under a name that is not localhost (Swagger UI treats localhost
specially), mapped to the live server by Chromium's own resolver rules; any request to
another host fails and is recorded all the same.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.web.browser.conftest import CHROMIUM_ARGS, screenshot

HOST = "fixgraph-docs.test"


@pytest.fixture
def docs_host(live_server: Any, settings) -> str:
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, HOST]
    return f"http://{HOST}:{urlsplit(live_server.url).port}"


def requests_made(base: str, path: str, ready: str) -> list[str]:
    """Every URL the page asked for, after it rendered `ready`; and anything its Content
    Security Policy refused (Chromium says so on the console) as `refused: …`."""
    seen: list[str] = []
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"),
            args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {HOST} 127.0.0.1"],
        )
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        page.on("request", lambda request: seen.append(request.url))
        page.on("requestfailed", lambda request: seen.append(request.url))
        page.on(
            "console",
            lambda m: (
                seen.append("refused: " + m.text) if "Content Security Policy" in m.text else None
            ),
        )
        page.goto(base + path)
        expect(page.locator(ready).first).to_be_visible(timeout=20_000)
        page.wait_for_load_state("networkidle")
        screenshot(page, "api-" + path.strip("/").replace("/", "-"))
        chromium.close()
    return seen


def outside(base: str, urls: list[str]) -> list[str]:
    """Neither our host nor made in the page itself (data:, and blob: of our origin), and
    every refusal of the page's own policy."""
    own = (base + "/", "blob:" + base + "/", "data:")
    return [url for url in urls if not url.startswith(own)]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_swagger_ui_asks_no_other_host(docs_host: str) -> None:
    urls = requests_made(docs_host, "/api/v1/docs/", "text=/api/v1/diagnose/")
    assert any("/api/v1/schema/" in url for url in urls)
    assert outside(docs_host, urls) == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_redoc_asks_no_other_host_and_shows_the_typed_answer(docs_host: str) -> None:
    # A field of the diagnosis's answer alone: the launch check, listed first, nests its
    # corrected commands in a collapsed sample.
    urls = requests_made(docs_host, "/api/v1/redoc/", "text=memory_readings")
    assert any("/api/v1/schema/" in url for url in urls)
    assert outside(docs_host, urls) == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_every_page_links_the_api_docs(live_server: Any, page: Any) -> None:
    page.goto(live_server.url + "/diagnose/")
    page.get_by_role("link", name="API docs").click()
    expect(page.locator("text=/api/v1/diagnose/").first).to_be_visible(timeout=20_000)
    assert page.url == live_server.url + "/api/v1/docs/"
