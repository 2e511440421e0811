"""A validation run's page: why a run ended, what it measured, what it launched and its
log, behind login; reviewers cancel a live run from it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from kb.models import Finding, Host, ValidationRun
from tests.web.conftest import decode_finding

pytestmark = pytest.mark.django_db

SERVER_LOG = """\
[10:01:02] connected to ci@10.0.0.5:22
---- server log (last lines) ----
RuntimeError: CUDA error: an illegal memory access was encountered <script>alert(1)</script>
"""


def text_of(response) -> str:  # type: ignore[no-untyped-def]
    return response.content.decode()


@pytest.fixture
def host(db: None) -> Host:
    return Host.objects.create(name="rtx-box-1", address="10.0.0.5", username="ci")


def a_run(host: Host, **fields: object) -> ValidationRun:
    fix = decode_finding().fixes.order_by("position", "id").first()
    assert fix is not None
    return ValidationRun.objects.create(fix=fix, host=host, **fields)


@pytest.fixture
def failed_run(starter_kb: None, host: Host, reviewer: User) -> ValidationRun:
    now = timezone.now()
    return a_run(
        host,
        status=ValidationRun.Status.FAILED,
        command="python3 -m sglang.launch_server --model-path zai-org/GLM-5 --tp-size 8",
        arch="sm_120",
        framework_version="sglang 0.5.9",
        error="the server exited with status 1 before it answered /health",
        log=SERVER_LOG,
        metrics={"tool": "fixgraph", "throughput_tok_s": 812.345, "ttft_ms": 95.5, "failed": 3},
        created_by=reviewer,
        started_at=now - timedelta(minutes=4),
        finished_at=now,
    )


def test_the_page_needs_a_login(client: Client, failed_run: ValidationRun) -> None:
    response = client.get(f"/runs/{failed_run.pk}/")

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_it_says_why_a_run_ended_and_shows_what_it_measured_and_ran(
    client: Client, failed_run: ValidationRun, reviewer: User
) -> None:
    client.force_login(reviewer)

    page = text_of(client.get(f"/runs/{failed_run.pk}/"))

    assert "<h1>Validation run" in page and "Failed</span>" in page
    assert "exited with status 1 before it answered /health" in page
    assert "812.35 tok/s" in page and "95.50 ms" in page
    assert "Requests failed" in page and "Requests completed" not in page  # not measured
    assert "--model-path" in page and "zai-org/GLM-5" in page
    assert "sm_120" in page and "sglang 0.5.9" in page and "by rev" in page
    assert "Took</dt><dd>4 min 0 s</dd>" in page
    # The log is the host's output: shown as text, never as markup.
    assert "illegal memory access" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert "Cancel run" not in page  # it has ended
    assert "hx-trigger" not in page  # nothing left to follow


def test_a_finding_links_its_runs_for_people_logged_in(
    client: Client, failed_run: ValidationRun, reviewer: User
) -> None:
    finding = failed_run.fix.finding
    link = f'href="/runs/{failed_run.pk}/"'
    assert link not in text_of(client.get(f"/findings/{finding.pk}/"))

    client.force_login(reviewer)

    assert link in text_of(client.get(f"/findings/{finding.pk}/"))


def test_a_live_run_page_polls_for_its_own_part(
    client: Client, starter_kb: None, host: Host, reviewer: User
) -> None:
    run = a_run(host, status=ValidationRun.Status.RUNNING, log="[10:00:01] connected")
    client.force_login(reviewer)

    page = text_of(client.get(f"/runs/{run.pk}/"))
    part = text_of(client.get(f"/runs/{run.pk}/", HTTP_HX_REQUEST="true"))

    assert f'hx-get="/runs/{run.pk}/"' in page and 'hx-trigger="every 3s"' in page
    assert part.lstrip().startswith("<section") and "<h1>" not in part and "<html" not in part
    assert "Running</span>" in part and "connected" in part
    run.status, run.metrics = ValidationRun.Status.PASSED, {"throughput_tok_s": 1500.0}
    run.save()
    ended = text_of(client.get(f"/runs/{run.pk}/", HTTP_HX_REQUEST="true"))
    assert "Passed</span>" in ended and "1500 tok/s" in ended and "hx-trigger" not in ended


def test_a_reviewer_cancels_a_queued_run_once(
    client: Client, starter_kb: None, host: Host, reviewer: User
) -> None:
    run = a_run(host)
    client.force_login(reviewer)
    assert "Cancel run" in text_of(client.get(f"/runs/{run.pk}/"))

    response = client.post(f"/runs/{run.pk}/cancel/", follow=True)

    run.refresh_from_db()
    assert run.status == ValidationRun.Status.CANCELLED and run.finished_at
    assert f"Run {run.pk} cancelled" in text_of(response)
    again = client.post(f"/runs/{run.pk}/cancel/", follow=True)
    assert "had already ended (Cancelled)" in text_of(again)


def test_cancelling_needs_the_permission_to_run(
    client: Client, starter_kb: None, host: Host
) -> None:
    run = a_run(host)
    client.force_login(User.objects.create_user("visitor", password="pw-visitor-1"))

    assert "Cancel run" not in text_of(client.get(f"/runs/{run.pk}/"))
    assert client.post(f"/runs/{run.pk}/cancel/").status_code == 403
    run.refresh_from_db()
    assert run.status == ValidationRun.Status.QUEUED


def test_an_imported_run_says_where_its_figures_came_from(
    client: Client, starter_kb: None, host: Host, reviewer: User
) -> None:
    run = a_run(
        host,
        status=ValidationRun.Status.PASSED,
        metrics={"tool": "vllm bench serve", "throughput_tok_s": 2048.0, "completed": 200},
        recipe={"imported": "vllm bench serve"},
    )
    client.force_login(reviewer)

    page = text_of(client.get(f"/runs/{run.pk}/"))

    assert "Imported from vllm bench serve" in page and "2048 tok/s" in page
    assert "figures come from a benchmark made by hand" in page


def test_queueing_from_a_finding_leads_to_the_run(
    client: Client, starter_kb: None, host: Host, reviewer: User
) -> None:
    finding: Finding = decode_finding()
    fix = finding.fixes.order_by("position", "id").first()
    assert fix is not None
    client.force_login(reviewer)

    response = client.post(
        f"/findings/{finding.pk}/fixes/{fix.pk}/validate/", {"host": host.pk}, follow=True
    )

    run = ValidationRun.objects.get()
    assert response.redirect_chain[-1][0] == f"/runs/{run.pk}/"
    assert "Queued</span>" in text_of(response) and "sglang.launch_server" in text_of(response)
