"""Webhooks go to their URL and nowhere else: no redirects; private ranges optionally refused."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import override_settings

from api import webhooks
from api.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db


class Server:
    """A real HTTP server on loopback: records POSTs, answers `status` (and `location`)."""

    def __init__(self, status: int = 200, location: str = "") -> None:
        self.seen: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.seen.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/hook"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    made: list[Server] = []
    yield made
    for server in made:
        server.http.shutdown()


def delivery_to(url: str) -> WebhookDelivery:
    hook = Webhook.objects.create(name="chatops", url=url, events=["finding.published"])
    return WebhookDelivery.objects.create(webhook=hook, event="finding.published", payload={})


@override_settings(FIXGRAPH_WEBHOOK_SECRET="s3cret")
def test_a_webhook_never_follows_a_redirect(servers: list[Server]) -> None:
    internal = Server()
    servers.append(internal)
    redirecting = Server(status=307, location=internal.url)
    servers.append(redirecting)
    delivery = delivery_to(redirecting.url)
    with pytest.raises(webhooks.DeliveryFailed, match="redirect"):
        webhooks.deliver(delivery.pk)
    assert len(redirecting.seen) == 1
    assert internal.seen == []  # the signed body never reached the redirect's target
    delivery.refresh_from_db()
    assert delivery.status == WebhookDelivery.Status.PENDING and delivery.response_code == 307


@override_settings(FIXGRAPH_WEBHOOK_BLOCK_PRIVATE=True)
def test_private_addresses_are_refused_when_the_setting_asks(servers: list[Server]) -> None:
    local = Server()
    servers.append(local)
    delivery = delivery_to(local.url.replace("127.0.0.1", "localhost"))
    with pytest.raises(webhooks.DeliveryFailed, match="non-public address"):
        webhooks.deliver(delivery.pk)
    assert local.seen == []


def test_loopback_receivers_work_by_default(servers: list[Server]) -> None:
    local = Server()
    servers.append(local)
    assert webhooks.deliver(delivery_to(local.url).pk).status == WebhookDelivery.Status.DELIVERED
