"""Slack's replies, done outside the 3 s a slash command may take."""

from __future__ import annotations

from typing import Any
from urllib.error import URLError

from celery import shared_task

from api.slack import diagnosis_blocks, post_to_slack


@shared_task(
    name="api.slack_diagnose", autoretry_for=(URLError,), retry_backoff=True, max_retries=3
)
def slack_diagnose(text: str, response_url: str, slack_user: str = "") -> None:
    from decisiontree.traceback import InputRejected
    from kb.services.diagnosis import diagnose

    try:
        payload = diagnosis_blocks(diagnose(text).to_dict())
    except InputRejected as rejected:
        payload = {"response_type": "ephemeral", "text": str(rejected)}
    post_to_slack(response_url, payload)


@shared_task(name="api.slack_post", autoretry_for=(URLError,), retry_backoff=True, max_retries=3)
def slack_post(response_url: str, payload: dict[str, Any]) -> None:
    post_to_slack(response_url, payload)
