"""Slack's replies, done outside the 3 s a slash command may take."""

from __future__ import annotations

from typing import Any
from urllib.error import URLError

from celery import shared_task

from api.slack import escape, post_answer, post_to_slack


@shared_task(
    name="api.slack_diagnose", autoretry_for=(URLError,), retry_backoff=True, max_retries=3
)
def slack_diagnose(
    text: str, response_url: str, *, channel: str = "", team: str = "", user: str = ""
) -> None:
    """Diagnose a slash command's paste; the verdict to the channel, the fixes in a thread."""
    from decisiontree.traceback import InputRejected
    from kb.models import StoredDiagnosis
    from kb.services.stored_diagnoses import diagnose_and_store

    try:
        record = diagnose_and_store(
            text, channel=StoredDiagnosis.Channel.SLACK, requester=f"slack:{team}:{user}"
        )
    except InputRejected as rejected:
        post_to_slack(response_url, {"response_type": "ephemeral", "text": escape(rejected)})
        return
    post_answer(record.answer, channel=channel, response_url=response_url)


@shared_task(name="api.slack_post", autoretry_for=(URLError,), retry_backoff=True, max_retries=3)
def slack_post(response_url: str, payload: dict[str, Any]) -> None:
    post_to_slack(response_url, payload)


@shared_task(
    name="api.deliver_webhook",
    bind=True,
    max_retries=8,
    acks_late=True,
)
def deliver_webhook(self: Any, delivery_id: int) -> None:
    """Send one webhook delivery; on failure retry with exponential back-off, then give up."""
    from api import webhooks

    try:
        webhooks.deliver(delivery_id)
    except webhooks.DeliveryFailed as failed:
        if self.request.retries >= self.max_retries:
            webhooks.mark_failed(delivery_id, str(failed))
            return
        raise self.retry(exc=failed, countdown=min(2**self.request.retries * 5, 3600)) from failed
