"""A live validation run's page follows the run: what the worker writes shows up without a
reload, and the page stops asking once the run has ended."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import Page, expect

from kb.models import Fix, Host, ValidationRun
from kb.services.validation import queue_for
from tests.validation.conftest import (  # noqa: F401 (fixtures)
    celery_worker,
    fake_gpu_dir,
    make_fix,
    make_host,
    ssh_target,
)
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


def test_a_fix_queued_from_its_finding_runs_on_a_host_while_its_page_follows(
    page: Page,
    live_server: Any,
    reviewer: User,
    make_fix: Callable[..., Fix],  # noqa: F811
    make_host: Callable[..., Host],  # noqa: F811
    celery_worker: Callable[[str], int],  # noqa: F811
) -> None:
    # The whole path: the finding page's button, a real Celery worker, the test GPU host
    # over SSH (a fixture server that streams fast), and the run's page polling.
    fix = make_fix()
    host = make_host(FAKE_GPU_TOKENS_PER_S="50000", FAKE_GPU_TTFT_MS="1")
    celery_worker(queue_for(host))
    log_in(page, live_server)
    page.goto(f"{live_server.url}/findings/{fix.finding_id}/")

    page.get_by_label(f"Host to validate fix {fix.pk} on").select_option(label=host.name)
    page.get_by_role("button", name="Validate on…").click()

    run = ValidationRun.objects.get()
    expect(page).to_have_url(f"{live_server.url}/runs/{run.pk}/")
    page.evaluate("window.notReloaded = true")
    expect(page.locator("#run .badge")).to_have_text("Passed", timeout=120_000)
    expect(page.locator("#run .metrics")).to_contain_text("Output throughput")
    expect(page.locator("#run .run-log")).to_contain_text("server stopped")
    expect(page.locator("#run-cmd")).to_contain_text("--kv-cache-dtype bf16")
    assert page.evaluate("window.notReloaded") is True
    screenshot(page, "validation-run-on-a-host")


def test_the_runs_list_shows_a_run_ending_without_a_reload(
    page: Page, live_server: Any, starter_kb: None, reviewer: User
) -> None:
    host = Host.objects.create(name="rtx-box-1", address="10.0.0.5", username="ci")
    fix = decode_finding().fixes.order_by("position", "id").first()
    run = ValidationRun.objects.create(fix=fix, host=host, status=ValidationRun.Status.RUNNING)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/runs/")
    row = page.locator("#runs-section tr").filter(
        has=page.get_by_role("link", name=str(run.pk), exact=True)
    )
    expect(row.locator(".badge")).to_have_text("Running")
    page.evaluate("window.notReloaded = true")

    ValidationRun.objects.filter(pk=run.pk).update(
        status=ValidationRun.Status.PASSED, metrics={"throughput_tok_s": 980.0}
    )

    expect(row.locator(".badge")).to_have_text("Passed", timeout=10_000)
    expect(row).to_contain_text("980.0 tok/s")
    assert page.evaluate("window.notReloaded") is True
    assert page.locator("#runs-section[hx-trigger]").count() == 0
