"""Outgoing webhooks: a finding published, a validation run finished.

The events are noticed from the knowledge base's own saves (kb never imports
api), turned into one delivery per subscribed webhook after the change commits,
and sent by a Celery task that retries with back-off.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import socket
import time
import urllib.request
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_save, pre_save
from django.utils import timezone

from api.models import Webhook, WebhookDelivery
from kb.models import Finding, ValidationRun
from kb.signals import findings_created

TIMEOUT_S = 10


class DeliveryFailed(Exception):
    """The receiver did not answer 2xx; the task retries."""


def sign(body: bytes, timestamp: str, secret: str) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def emit(event: str, payload: dict[str, Any]) -> list[WebhookDelivery]:
    """One pending delivery per active webhook subscribed to `event`, queued after commit."""
    deliveries = [
        WebhookDelivery.objects.create(webhook=hook, event=event, payload=payload)
        for hook in Webhook.objects.filter(active=True)
        if event in (hook.events or [])
    ]
    for delivery in deliveries:
        transaction.on_commit(lambda pk=delivery.pk: queue_delivery(pk))
    return deliveries


def queue_delivery(delivery_id: int) -> None:
    from api.tasks import deliver_webhook

    deliver_webhook.delay(delivery_id)


def deliver(delivery_id: int) -> WebhookDelivery:
    """POST one delivery, signed. Raises DeliveryFailed (to be retried) on anything but 2xx."""
    delivery = WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)
    if delivery.status == WebhookDelivery.Status.DELIVERED:
        return delivery
    body = json.dumps({"event": delivery.event, **delivery.payload}).encode()
    delivery.attempts += 1
    try:
        delivery.response_code = post(delivery.webhook.url, body, delivery)
    except (HTTPError, URLError, OSError) as exc:
        delivery.last_error = str(getattr(exc, "reason", exc))[:2000]
        delivery.response_code = getattr(exc, "code", None)
        delivery.save(update_fields=["attempts", "last_error", "response_code"])
        raise DeliveryFailed(delivery.last_error) from exc
    delivery.status = WebhookDelivery.Status.DELIVERED
    delivery.delivered_at = timezone.now()
    delivery.last_error = ""
    delivery.save()
    return delivery


def post(url: str, body: bytes, delivery: WebhookDelivery) -> int:
    if not url.startswith(("http://", "https://")):
        raise URLError(f"not an http(s) URL: {url}")
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "FixGraph-Webhook/1",
        "X-FixGraph-Event": delivery.event,
        "X-FixGraph-Delivery": str(delivery.pk),
        "X-FixGraph-Timestamp": timestamp,
    }
    secret = settings.FIXGRAPH_WEBHOOK_SECRET
    if secret:
        headers["X-FixGraph-Signature"] = sign(body, timestamp, secret)
    if settings.FIXGRAPH_WEBHOOK_BLOCK_PRIVATE:
        refuse_private_address(url)
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310
    with OPENER.open(request, timeout=TIMEOUT_S) as response:
        return int(response.status)


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """A webhook is delivered to its URL or not at all: a redirect (to an internal
    address, say) would carry the signed body and its headers somewhere else."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> None:  # fmt: skip
        raise HTTPError(req.full_url, code, f"redirect to {newurl} refused", headers, fp)


OPENER = urllib.request.build_opener(NoRedirects)


def refuse_private_address(url: str) -> None:
    """With FIXGRAPH_WEBHOOK_BLOCK_PRIVATE, refuse a URL whose host resolves to a
    loopback, private, link-local or reserved address (nothing inside our network)."""
    host = urlsplit(url).hostname or ""
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError as exc:
        raise URLError(f"cannot resolve {host}: {exc}") from exc
    for address in found:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if not ip.is_global or ip.is_multicast:
            raise URLError(f"{host} resolves to {ip}, a non-public address: refused")


def mark_failed(delivery_id: int, error: str) -> None:
    WebhookDelivery.objects.filter(pk=delivery_id).update(
        status=WebhookDelivery.Status.FAILED, last_error=error[:2000]
    )


# --- noticing the events -------------------------------------------------------------


def remember_previous_status(sender: type, instance: Any, **kwargs: Any) -> None:
    if instance.pk is None:
        instance._status_before_save = None
        return
    previous = sender.objects.filter(pk=instance.pk).values_list("status", flat=True).first()
    instance._status_before_save = previous


def finding_saved(sender: type, instance: Finding, **kwargs: Any) -> None:
    before = getattr(instance, "_status_before_save", None)
    if instance.status == Finding.Status.PUBLISHED and before != Finding.Status.PUBLISHED:
        emit(
            Webhook.Event.FINDING_PUBLISHED,
            {
                "finding": {
                    "id": instance.pk,
                    "title": instance.title,
                    "kind": instance.kind,
                    "url": f"{settings.SITE_URL}/findings/{instance.pk}/",
                }
            },
        )


def run_saved(sender: type, instance: ValidationRun, **kwargs: Any) -> None:
    before = getattr(instance, "_status_before_save", None)
    # Ended now: live before, or made ended (a benchmark imported by hand).
    if not instance.live and (before is None or before in ValidationRun.LIVE):
        emit(
            Webhook.Event.VALIDATION_FINISHED,
            {
                "run": {
                    "id": instance.pk,
                    "status": instance.status,
                    "error": instance.error,
                    "fix_id": instance.fix_id,
                    "finding_id": instance.fix.finding_id,
                    "host": instance.host.name,
                    "arch": instance.arch,
                    "metrics": instance.metrics,
                    "url": f"{settings.SITE_URL}/api/v1/validation-runs/{instance.pk}/",
                    "html_url": f"{settings.SITE_URL}/runs/{instance.pk}/",
                }
            },
        )


def findings_bulk_created(sender: type, findings: list[Finding], **kwargs: Any) -> None:
    """A bulk load's new findings: as if each was saved (one query when nobody listens)."""
    hooks = Webhook.objects.filter(active=True).values_list("events", flat=True)
    if not any(Webhook.Event.FINDING_PUBLISHED in (events or []) for events in hooks):
        return
    for finding in findings:
        finding._status_before_save = None
        finding_saved(sender, finding)


findings_created.connect(findings_bulk_created, dispatch_uid="hook-bulk-findings")
for model, handler in ((Finding, finding_saved), (ValidationRun, run_saved)):
    pre_save.connect(remember_previous_status, sender=model, dispatch_uid=f"hook-pre-{model}")
    post_save.connect(handler, sender=model, dispatch_uid=f"hook-post-{model}")
