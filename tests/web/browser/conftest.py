"""Headless Chromium from the system packages, driven by Playwright, against live_server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop; the ORM in fixtures is still synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402


@dataclass(frozen=True)
class Size:
    name: str
    width: int
    height: int

    @property
    def viewport(self) -> dict[str, int]:
        return {"width": self.width, "height": self.height}


# A laptop and a phone: every page must read well at both.
DESKTOP = Size("desktop", 1440, 900)
MOBILE = Size("mobile", 390, 844)
SIZES = (DESKTOP, MOBILE)

SCREENSHOTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"),
            args=CHROMIUM_ARGS,
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


@pytest.fixture
def no_js_page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, java_script_enabled=False
    )
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def screenshot(page: Page, name: str, *, full_page: bool = True) -> None:
    """Saved under test-artifacts/screenshots/ for a person to look at."""
    path = SCREENSHOTS / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=full_page)
