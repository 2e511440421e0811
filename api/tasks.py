"""Slack's replies, done outside the 3 s a slash command may take."""

from __future__ import annotations

from typing import Any
from urllib.error import URLError

from celery import shared_task

from api.slack import (
    code,
    context,
    diagnosis_blocks,
    escape,
    post_answer,
    post_launch_check,
    post_to_slack,
)


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


@shared_task(
    name="api.slack_check_launch", autoretry_for=(URLError,), retry_backoff=True, max_retries=3
)
def slack_check_launch(setup: str, command: str, response_url: str, *, channel: str = "") -> None:
    """`/fixgraph check <setup words> <launch>`: the known issues the launch meets."""
    from api.serializers import LaunchCheckSerializer
    from decisiontree.context import release_in_words
    from kb.services.diagnosis import check_launch

    framework, version = release_in_words(setup)
    check = check_launch(command, framework=framework, framework_version=version, setup=setup)
    answer = LaunchCheckSerializer(check, context={"launch_command": command}).data
    post_launch_check(answer, channel=channel, response_url=response_url)


@shared_task(name="api.slack_answer", autoretry_for=(URLError,), retry_backoff=True, max_retries=3)
def slack_answer(slug: str, key: str, answer: str, response_url: str, *, requester: str) -> None:
    """A question answered with a button: the paste diagnosed again with that answer, and
    the re-ranked answer in place of the message that asked."""
    from kb.models import StoredDiagnosis
    from kb.services.stored_diagnoses import NotAsked, refine, stored

    record = stored(slug)
    if record is None:
        text = "That diagnosis is no longer in FixGraph: run `/fixgraph` again."
        post_to_slack(response_url, {"response_type": "ephemeral", "text": text})
        return
    try:
        refined = refine(
            record, key, answer, channel=StoredDiagnosis.Channel.SLACK, requester=requester
        )
    except NotAsked as refused:
        post_to_slack(response_url, {"response_type": "ephemeral", "text": escape(refused)})
        return
    message = diagnosis_blocks(refined.answer)
    message["blocks"].insert(1, context(f"Re-ranked for the answer {code(key)} = {code(answer)}"))
    post_to_slack(response_url, {**message, "replace_original": True})


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
