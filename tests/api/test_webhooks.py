"""Outgoing webhooks: signed POSTs on a finding published and a validation run finished."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from api import webhooks
from api.models import Webhook, WebhookDelivery
from api.tasks import deliver_webhook
from kb.models import Finding, Fix, Host, ValidationRun

SECRET = "webhook-test-secret"  # noqa: S105


class Receiver:
    """A real HTTP server on loopback that records what it is sent."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.server.shutdown()


def subscribe(url: str, *events: str) -> Webhook:
    return Webhook.objects.create(name="chatops", url=url, events=list(events))


@pytest.mark.django_db
@override_settings(FIXGRAPH_WEBHOOK_SECRET=SECRET)
def test_it_posts_a_signed_event_when_a_finding_is_published(receiver: Receiver) -> None:
    subscribe(receiver.url, "finding.published")
    finding = Finding.objects.create(title="Decode crash on sm_120")
    assert not WebhookDelivery.objects.exists(), "a draft is not an event"

    finding.status = Finding.Status.PUBLISHED
    finding.save()
    delivery = WebhookDelivery.objects.get()
    webhooks.deliver(delivery.pk)

    headers, body = receiver.requests[0]
    payload = json.loads(body)
    assert payload["event"] == "finding.published"
    assert payload["finding"]["title"] == "Decode crash on sm_120"
    expected = hmac.new(
        SECRET.encode(), f"{headers['x-fixgraph-timestamp']}.".encode() + body, hashlib.sha256
    ).hexdigest()
    assert headers["x-fixgraph-signature"] == f"sha256={expected}"
    assert headers["x-fixgraph-event"] == "finding.published"
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 1


@pytest.mark.django_db
def test_saving_a_published_finding_again_is_not_a_new_event(receiver: Receiver) -> None:
    subscribe(receiver.url, "finding.published")
    finding = Finding.objects.create(title="x", status=Finding.Status.PUBLISHED)
    finding.summary = "edited"
    finding.save()
    assert WebhookDelivery.objects.count() == 1


@pytest.mark.django_db
def test_it_posts_when_a_validation_run_finishes(receiver: Receiver) -> None:
    subscribe(receiver.url, "validation.finished")
    finding = Finding.objects.create(title="OOM")
    fix = Fix.objects.create(
        finding=finding, summary="--mem-fraction-static 0.88", outcome="resolves"
    )
    host = Host.objects.create(name="gpu-07", address="127.0.0.1", username="u")
    run = ValidationRun.objects.create(fix=fix, host=host)
    run.status = ValidationRun.Status.RUNNING
    run.save()
    assert not WebhookDelivery.objects.exists()

    run.status = ValidationRun.Status.PASSED
    run.metrics = {"throughput_tok_s": 812.0}
    run.save()
    webhooks.deliver(WebhookDelivery.objects.get().pk)

    payload = json.loads(receiver.requests[0][1])
    assert payload["run"]["status"] == "passed"
    assert payload["run"]["metrics"]["throughput_tok_s"] == 812.0
    assert payload["run"]["finding_id"] == finding.pk and payload["run"]["error"] == ""
    assert payload["run"]["html_url"].endswith(f"/runs/{run.pk}/")


@pytest.mark.django_db
def test_a_run_that_ends_without_starting_is_told_once_with_why(receiver: Receiver) -> None:
    subscribe(receiver.url, "validation.finished")
    finding = Finding.objects.create(title="OOM")
    fix = Fix.objects.create(finding=finding, summary="--mem-fraction-static 0.88")
    host = Host.objects.create(name="gpu-07", address="127.0.0.1", username="u")
    run = ValidationRun.objects.create(fix=fix, host=host)

    run.status, run.error = ValidationRun.Status.ERROR, "gave up after retries: host busy"
    run.save()
    run.save()  # saved again once ended: not a second event

    [delivery] = WebhookDelivery.objects.all()
    assert delivery.payload["run"]["status"] == "error"
    assert delivery.payload["run"]["error"] == "gave up after retries: host busy"


@pytest.mark.django_db
def test_a_failing_receiver_is_retried_with_back_off_then_marked_failed() -> None:
    failing = Receiver(status=503)
    try:
        subscribe(failing.url, "finding.published")
        Finding.objects.create(title="x", status=Finding.Status.PUBLISHED)
        delivery = WebhookDelivery.objects.get()

        with pytest.raises(webhooks.DeliveryFailed):
            webhooks.deliver(delivery.pk)
        delivery.refresh_from_db()
        assert delivery.status == "pending" and delivery.response_code == 503

        # The task asks Celery to retry later, longer each time, and gives up at the end.
        from celery.exceptions import Retry

        with pytest.raises(Retry) as retry:
            deliver_webhook.apply(args=[delivery.pk], throw=True)
        assert retry.value.when == 5
        deliver_webhook.push_request(retries=deliver_webhook.max_retries)
        try:
            deliver_webhook.run(delivery.pk)
        finally:
            deliver_webhook.pop_request()
        delivery.refresh_from_db()
        assert delivery.status == "failed"
        assert len(failing.requests) == 3
    finally:
        failing.server.shutdown()


@pytest.mark.django_db
def test_an_inactive_or_unsubscribed_webhook_gets_nothing(receiver: Receiver) -> None:
    Webhook.objects.create(name="off", url=receiver.url, events=["finding.published"], active=False)
    subscribe(receiver.url, "validation.finished")
    Finding.objects.create(title="x", status=Finding.Status.PUBLISHED)
    assert not WebhookDelivery.objects.exists()


def docs_signature_check() -> Any:
    """The `genuine` function of docs/api.md's Webhooks section, as written there."""
    api_md = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    section = api_md.split("## Webhooks", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None, "docs/api.md's Webhooks section has no Python block"
    namespace: dict[str, Any] = {}
    exec(found.group(1), namespace)  # noqa: S102 - our own docs
    return namespace["genuine"]


@pytest.mark.django_db
@override_settings(FIXGRAPH_WEBHOOK_SECRET=SECRET)
def test_the_signature_check_in_the_docs_accepts_a_delivery_and_nothing_else(
    receiver: Receiver,
) -> None:
    genuine = docs_signature_check()
    subscribe(receiver.url, "finding.published")
    Finding.objects.create(title="x", status=Finding.Status.PUBLISHED)
    webhooks.deliver(WebhookDelivery.objects.get().pk)
    [(seen, body)] = receiver.requests
    headers = {
        "X-FixGraph-Timestamp": seen["x-fixgraph-timestamp"],
        "X-FixGraph-Signature": seen["x-fixgraph-signature"],
    }

    assert genuine(body, headers, SECRET)
    assert not genuine(body.replace(b'"x"', b'"y"'), headers, SECRET)
    assert not genuine(body, headers, "another-secret")
    stale = {**headers, "X-FixGraph-Timestamp": str(int(headers["X-FixGraph-Timestamp"]) - 600)}
    assert not genuine(body, stale, SECRET)
