"""A validation run's page: why a run ended, what it measured, what it launched and its
log, behind login; reviewers cancel a live run from it."""

from __future__ import annotations

import re
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
        framework_version="0.5.9",
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
    assert "sm_120" in page and "<dd>sglang 0.5.9" in page and "by rev" in page
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


H200_FACTS = {
    "gpu_count": 8,
    "gpu_name": "NVIDIA H200",
    "arch": "sm_90",
    "compute_capability": "9.0",
    "memory_mib": 143771,
    "driver": "580.159.04",
    "cuda": "13.0",
    "python": "3.12.3",
    "packages": {"sglang": "0.5.9", "vllm": None, "torch": "2.9.1"},
}


def test_the_validation_page_shows_each_host_and_what_holds_it(
    client: Client, starter_kb: None, reviewer: User
) -> None:
    now = timezone.now()
    busy = Host.objects.create(
        name="h200-a", address="10.0.0.7", username="ci", labels=["lab-a"], facts=H200_FACTS,
        facts_at=now,
    )  # fmt: skip
    stale = Host.objects.create(name="h200-b", address="10.0.0.8", username="ci")
    live = a_run(busy, status=ValidationRun.Status.RUNNING, started_at=now)
    ended = a_run(stale, status=ValidationRun.Status.TIMED_OUT, finished_at=now)
    Host.objects.filter(pk=busy.pk).update(
        locked_by=live, lease_expires_at=now + timedelta(seconds=60)
    )
    # h200-b's worker died: its lease ran out before the sweeper freed it.
    Host.objects.filter(pk=stale.pk).update(
        locked_by=ended, lease_expires_at=now - timedelta(seconds=1)
    )
    assert client.get("/runs/").status_code == 302  # behind login
    client.force_login(reviewer)

    page = text_of(client.get("/runs/"))

    rows = page.split('<h2 id="runs">')[0].split("<tr>")[2:]
    assert "h200-a" in rows[0] and "h200-b" in rows[1]
    assert "8× NVIDIA H200" in rows[0] and "sm_90, 140 GiB" in rows[0]
    assert "580.159.04 · 13.0" in rows[0] and "sglang 0.5.9" in rows[0] and "vllm" not in rows[0]
    assert f"busy with run {live.pk}" in rows[0] and "lab-a" in rows[0]
    assert "free" in rows[1] and "not read" in rows[1] and "hosts facts h200-b" in rows[1]
    assert f'href="/runs/{ended.pk}/">run {ended.pk}</a>' in rows[1] and "Timed out" in rows[1]


def test_runs_are_listed_newest_first_and_filtered_by_status(
    client: Client, starter_kb: None, host: Host, reviewer: User
) -> None:
    failed = a_run(host, status=ValidationRun.Status.FAILED)
    queued = a_run(host)
    passed = a_run(host, status=ValidationRun.Status.PASSED, metrics={"throughput_tok_s": 990.0})
    client.force_login(reviewer)

    def listed(query: str) -> list[int]:
        page = text_of(client.get(f"/runs/{query}")).split('<h2 id="runs">')[1]
        return [int(pk) for pk in re.findall(r'<td data-label="Run"><a href="/runs/(\d+)/', page)]

    assert listed("") == [passed.pk, queued.pk, failed.pk]
    assert listed("?status=live") == [queued.pk]
    assert listed("?status=failed") == [failed.pk]
    assert listed("?status=nonsense") == [passed.pk, queued.pk, failed.pk]
    assert "990.0 tok/s" in text_of(client.get("/runs/"))


def test_the_menu_has_validation_for_people_logged_in(
    client: Client, starter_kb: None, reviewer: User
) -> None:
    assert 'href="/runs/"' not in text_of(client.get("/"))
    client.force_login(reviewer)
    assert 'href="/runs/"' in text_of(client.get("/"))


def test_a_reviewer_runs_an_ended_run_again_with_its_recipe(
    client: Client, failed_run: ValidationRun, reviewer: User
) -> None:
    failed_run.recipe = {"load": {"requests": 8}, "startup_timeout_s": 1800}
    failed_run.save()
    client.force_login(reviewer)
    assert "Run again" in text_of(client.get(f"/runs/{failed_run.pk}/"))

    response = client.post(f"/runs/{failed_run.pk}/again/", follow=True)

    again = ValidationRun.objects.exclude(pk=failed_run.pk).get()
    assert (again.fix, again.host, again.status) == (failed_run.fix, failed_run.host, "queued")
    assert again.recipe == failed_run.recipe and again.created_by == reviewer
    assert response.redirect_chain[-1][0] == f"/runs/{again.pk}/"
    assert f"Queued run {again.pk}: run {failed_run.pk} again on rtx-box-1." in text_of(response)


def test_a_benchmark_imported_by_hand_runs_again_for_real(
    client: Client, starter_kb: None, host: Host, reviewer: User
) -> None:
    imported = a_run(host, status=ValidationRun.Status.PASSED, recipe={"imported": "guidellm"})
    client.force_login(reviewer)

    client.post(f"/runs/{imported.pk}/again/")

    again = ValidationRun.objects.exclude(pk=imported.pk).get()
    assert again.recipe == {} and again.command  # a launch of its own, not "imported"


def test_running_again_needs_the_permission_to_run(
    client: Client, failed_run: ValidationRun
) -> None:
    client.force_login(User.objects.create_user("visitor", password="pw-visitor-1"))

    assert "Run again" not in text_of(client.get(f"/runs/{failed_run.pk}/"))
    assert client.post(f"/runs/{failed_run.pk}/again/").status_code == 403
    assert ValidationRun.objects.count() == 1


def test_a_page_left_open_past_its_session_sends_its_poll_to_the_login_page(
    client: Client, starter_kb: None, host: Host
) -> None:
    run = a_run(host, status=ValidationRun.Status.RUNNING)

    poll = client.get(f"/runs/{run.pk}/", HTTP_HX_REQUEST="true")

    # Not the login form swapped into the run's part: htmx loads the login page instead.
    assert poll.status_code == 200 and poll.content == b""
    assert poll["HX-Redirect"] == f"/accounts/login/?next=%2Fruns%2F{run.pk}%2F"


def test_a_run_lists_the_earlier_runs_of_its_fix_on_its_host(
    client: Client, starter_kb: None, host: Host, reviewer: User
) -> None:
    before = a_run(host, status=ValidationRun.Status.PASSED, metrics={"throughput_tok_s": 1500.0},
                   framework_version="0.5.8")  # fmt: skip
    elsewhere = a_run(Host.objects.create(name="other-box", address="10.0.0.9", username="ci"))
    now = a_run(host, status=ValidationRun.Status.PASSED, metrics={"throughput_tok_s": 900.0})
    client.force_login(reviewer)

    page = text_of(client.get(f"/runs/{now.pk}/"))

    earlier = page.split("Earlier runs of this fix on rtx-box-1</h2>", 1)[1].split("</table>")[0]
    assert f'href="/runs/{before.pk}/"' in earlier and "1500.0 tok/s" in earlier
    assert "0.5.8" in earlier and f'href="/runs/{elsewhere.pk}/"' not in earlier
    assert "Earlier runs" not in text_of(client.get(f"/runs/{before.pk}/"))  # none before it


def test_the_runs_list_follows_its_live_runs_and_stops_when_none_is_left(
    client: Client, starter_kb: None, host: Host, reviewer: User
) -> None:
    live = a_run(host, status=ValidationRun.Status.RUNNING)
    client.force_login(reviewer)

    page = text_of(client.get("/runs/?status=live"))

    polled = re.search(r'<section id="runs-section"([^>]*)>', page)
    assert polled is not None
    assert 'hx-get="/runs/?status=live"' in polled.group(1)
    assert 'hx-select="#runs-section"' in polled.group(1) and "every 3s" in polled.group(1)
    live.status = ValidationRun.Status.PASSED
    live.save()
    assert "hx-trigger" not in text_of(client.get("/runs/?status=live"))
    client.logout()
    poll = client.get("/runs/?status=live", HTTP_HX_REQUEST="true")
    assert poll["HX-Redirect"] == "/accounts/login/?next=%2Fruns%2F%3Fstatus%3Dlive"
