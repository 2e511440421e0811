"""A live validation run's page follows the run: what the worker writes shows up without a
reload, and the page stops asking once the run has ended."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import Page, expect

from kb.models import Host, ValidationRun
from tests.web.browser.conftest import screenshot
from tests.web.browser.test_every_page import log_in
from tests.web.conftest import decode_finding

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_running_run_shows_its_verdict_without_a_reload(
    page: Page, live_server: Any, starter_kb: None, reviewer: User
) -> None:
    host = Host.objects.create(name="rtx-box-1", address="10.0.0.5", username="ci")
    fix = decode_finding().fixes.order_by("position", "id").first()
    run = ValidationRun.objects.create(
        fix=fix, host=host, status=ValidationRun.Status.RUNNING, started_at=timezone.now(),
        log="[10:00:01] connected\n[10:00:02] waiting for /health",
    )  # fmt: skip
    log_in(page, live_server)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    expect(page.locator("#run .badge")).to_have_text("Running")
    page.evaluate("window.notReloaded = true")

    # What the worker writes as the run goes on and ends.
    lines = "\n".join(f"[10:01:{i:02}] load request {i} done" for i in range(60))
    ValidationRun.objects.filter(pk=run.pk).update(log=f"{run.log}\n{lines}")
    expect(page.locator("#run .run-log")).to_contain_text("load request 59 done", timeout=10_000)
    at_end = "e => e.scrollTop + e.clientHeight >= e.scrollHeight - 4"
    assert page.locator("#run .run-log").evaluate(at_end), "the log shows its newest lines"
    ValidationRun.objects.filter(pk=run.pk).update(
        status=ValidationRun.Status.PASSED,
        metrics={"throughput_tok_s": 1432.0, "completed": 64},
        finished_at=timezone.now(),
    )

    expect(page.locator("#run .badge")).to_have_text("Passed", timeout=10_000)
    expect(page.locator("#run .metrics")).to_contain_text("1432 tok/s")
    assert page.evaluate("window.notReloaded") is True
    assert page.locator("#run[hx-trigger]").count() == 0  # nothing left to follow
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    screenshot(page, "validation-run-passed")
