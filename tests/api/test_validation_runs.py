"""Queueing a validation run: scope `validate`, 202 with the run's URL, idempotent by key."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from kb.models import Finding, Host, ValidationRun
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

RUNS = "/api/v1/validation-runs/"


class SentTasks(list):
    def send_task(self, name: str, args: list[Any], **options: Any) -> Any:
        self.append((name, args))
        return type("Result", (), {"id": f"task-{len(self)}"})()


@pytest.fixture
def sent(monkeypatch) -> SentTasks:
    from config.celery import app

    tasks = SentTasks()
    monkeypatch.setattr(app, "send_task", tasks.send_task)
    return tasks


@pytest.fixture
def host(db: None) -> Host:
    return Host.objects.create(
        name="rtx-box-1", address="10.0.0.5", username="gpu", key_path="/secret/key"
    )


def queue(client: APIClient, body: dict, key: str = ""):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return client.post(RUNS, body, format="json", **headers)


def test_it_queues_a_run_and_answers_202_with_its_url(
    validator: APIClient,
    dsa_finding: Finding,
    host: Host,
    sent: SentTasks,
    django_capture_on_commit_callbacks,
) -> None:
    fix = dsa_finding.fixes.first()
    with django_capture_on_commit_callbacks(execute=True):
        response = queue(validator, {"fix_id": fix.pk, "host": "rtx-box-1"})
    assert response.status_code == 202, response.content
    run = ValidationRun.objects.get()
    assert (run.fix, run.host, run.status) == (fix, host, ValidationRun.Status.QUEUED)
    assert sent == [("kb.run_validation", [run.pk])]
    assert response["Location"].endswith(f"{RUNS}{run.pk}/")
    assert validator.get(response["Location"]).json()["status"] == "queued"
    run.refresh_from_db()
    assert run.task_id == "task-1"


def test_the_same_idempotency_key_queues_once(
    validator: APIClient,
    dsa_finding: Finding,
    host: Host,
    sent: SentTasks,
    django_capture_on_commit_callbacks,
) -> None:
    body = {"fix_id": dsa_finding.fixes.first().pk, "host": "rtx-box-1"}
    with django_capture_on_commit_callbacks(execute=True):
        first = queue(validator, body, key="retry-1")
        again = queue(validator, body, key="retry-1")
    assert (first.status_code, again.status_code) == (202, 202)
    assert again.json() == first.json() and again["Idempotent-Replay"] == "true"
    assert ValidationRun.objects.count() == 1 and len(sent) == 1
    assert_error(queue(validator, {**body, "host": "other"}, key="retry-1"), 409, "conflict")


def test_queueing_needs_the_validate_scope(
    reader: APIClient, dsa_finding: Finding, host: Host, sent: SentTasks
) -> None:
    body = {"fix_id": dsa_finding.fixes.first().pk, "host": "rtx-box-1"}
    assert_error(queue(reader, body), 403)
    assert not ValidationRun.objects.exists() and not sent


@pytest.mark.parametrize(
    "body",
    [
        {"fix_id": 999999, "host": "rtx-box-1"},
        {"host": "rtx-box-1"},
        {"fix_id": 1},
        {"fix_id": 1, "host": "no-such-host"},
        {"fix_id": [1], "host": "rtx-box-1"},
    ],
)
def test_it_explains_a_bad_run_request(
    validator: APIClient, body: dict, host: Host, dsa_finding: Finding, sent: SentTasks
) -> None:
    assert_error(queue(validator, body), 400, "invalid")
    assert not sent


def test_hosts_are_listed_without_their_secrets(reader: APIClient, host: Host) -> None:
    Host.objects.filter(pk=host.pk).update(allowed_flags=["trust-remote-code"])
    row = reader.get("/api/v1/hosts/").json()["results"][0]
    assert row["name"] == "rtx-box-1" and "key_path" not in row and "username" not in row
    # A bot picks the host that lets a fix's refused flag run.
    assert row["allowed_flags"] == ["trust-remote-code"]
    assert reader.get(f"/api/v1/hosts/{host.pk}/").status_code == 200


def test_a_run_is_cancelled_once_with_the_validate_scope(
    validator: APIClient, reader: APIClient, dsa_finding: Finding, host: Host
) -> None:
    run = ValidationRun.objects.create(fix=dsa_finding.fixes.first(), host=host)
    cancel = f"{RUNS}{run.pk}/cancel/"

    assert_error(reader.post(cancel), 403)
    run.refresh_from_db()
    assert run.status == ValidationRun.Status.QUEUED

    response = validator.post(cancel)
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "cancelled" and response.json()["finished_at"]
    again = assert_error(validator.post(cancel), 409, "conflict")
    assert "already ended: Cancelled" in again["message"]


def test_a_run_links_to_its_page_for_people(
    reader: APIClient, dsa_finding: Finding, host: Host
) -> None:
    run = ValidationRun.objects.create(fix=dsa_finding.fixes.first(), host=host)

    row = reader.get(f"{RUNS}{run.pk}/").json()

    assert row["html_url"].endswith(f"/runs/{run.pk}/")


def test_runs_are_listed_by_status_fix_finding_and_host(
    reader: APIClient, dsa_finding: Finding, oom_finding: Finding, host: Host
) -> None:
    other_host = Host.objects.create(name="h200-b", address="10.0.0.6", username="gpu")
    dsa_fix, oom_fix = dsa_finding.fixes.first(), oom_finding.fixes.first()
    queued = ValidationRun.objects.create(fix=dsa_fix, host=host)
    passed = ValidationRun.objects.create(fix=dsa_fix, host=other_host, status="passed")
    failed = ValidationRun.objects.create(fix=oom_fix, host=host, status="failed")

    def listed(query: str) -> set[int]:
        response = reader.get(f"{RUNS}?{query}")
        assert response.status_code == 200, response.content
        return {row["id"] for row in response.json()["results"]}

    assert listed("status=live") == {queued.pk}
    assert listed("status=failed") == {failed.pk}
    assert listed(f"fix_id={dsa_fix.pk}") == {queued.pk, passed.pk}
    assert listed(f"finding_id={oom_finding.pk}") == {failed.pk}
    assert listed("host=h200-b") == {passed.pk}
    assert_error(reader.get(f"{RUNS}?status=finished"), 400)


def test_an_id_no_row_can_have_is_refused_by_name_not_a_server_error(
    reader: APIClient, dsa_finding: Finding, host: Host
) -> None:
    """SQLite (`make run`'s database) cannot even bind a number past 64 bits: it was a 500."""
    ValidationRun.objects.create(fix=dsa_finding.fixes.first(), host=host)

    for query in ("finding_id=99999999999999999999", "fix_id=-1", "fix_id=1.5"):
        error = assert_error(reader.get(f"{RUNS}?{query}"), 400)
        assert set(error["fields"]) == {query.split("=")[0]}
    assert ValidationRun.objects.count() == 1
