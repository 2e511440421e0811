"""Slack: Block Kit for a diagnosis, signed requests in, replies to `response_url` out.

Slack waits 3 s for an answer, so the slash command only acknowledges; a Celery
task diagnoses and posts the blocks. The server only ever posts to the origins
in SLACK_RESPONSE_ORIGINS (hooks.slack.com), never to a URL a request names.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from api.errors import error_body

log = logging.getLogger(__name__)

MAX_SIGNATURE_AGE_S = 5 * 60
MAX_FIXES_SHOWN = 5
MAX_BLOCK_TEXT = 2_900  # Slack refuses section text over 3000 characters
POST_TIMEOUT_S = 10

HELPED, NOT_HELPED, VALIDATE = "fix_helped", "fix_not_helped", "fix_validate"


# --- blocks ---------------------------------------------------------------------------


def diagnosis_blocks(result: dict[str, Any]) -> dict[str, Any]:
    """A message a bot can post as is: headline, fixes with buttons, warnings, a question."""
    fingerprint = (result.get("signature") or {}).get("fingerprint", "")
    blocks: list[dict[str, Any]] = [section(headline(result))]
    for fix in result.get("fixes", [])[:MAX_FIXES_SHOWN]:
        blocks += fix_blocks(fix, fingerprint)
    blocks += not_helpful_blocks(result.get("not_helpful", []))
    for question in result.get("questions", [])[:1]:
        blocks.append(section(f":question: *{question['text']}*"))
    return {"response_type": "in_channel", "text": headline(result), "blocks": blocks}


def headline(result: dict[str, Any]) -> str:
    count = len(result.get("fixes", []))
    match = result.get("match", "none")
    if match == "none" or not count:
        return "No known match for this error in FixGraph."
    known = "Known issue" if match == "known" else "Similar to a known issue"
    return f"{known}: {count} fix{'es' if count != 1 else ''} worked before."


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:MAX_BLOCK_TEXT]}}


def fix_blocks(ranked: dict[str, Any], fingerprint: str) -> list[dict[str, Any]]:
    fix = ranked["fix"]
    lines = [f"*{ranked['rank']}. {fix['summary']}*"]
    lines += [f"`{change}`" for change in fix.get("command_changes", [])]
    why = [step["detail"] for step in ranked.get("why", []) if step.get("detail")]
    if why:
        lines.append("_Why:_ " + "; ".join(why[:3]))
    lines.append(f"_From:_ {ranked['finding']['title']}")
    return [section("\n".join(lines)), fix_buttons(fix["id"], fingerprint)]


def fix_buttons(fix_id: int, fingerprint: str) -> dict[str, Any]:
    value = json.dumps({"fix": fix_id, "fp": fingerprint[:64]})
    return {
        "type": "actions",
        "block_id": f"fix-{fix_id}",
        "elements": [
            button("Fixed it", HELPED, value, style="primary"),
            button("Did not help", NOT_HELPED, value, style="danger"),
            button("Validate on a host", VALIDATE, value),
        ],
    }


def button(label: str, action_id: str, value: str, style: str = "") -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": label},
        "action_id": action_id,
        "value": value,
    }
    return {**element, "style": style} if style else element


def not_helpful_blocks(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not entries:
        return []
    lines = [f"• {entry['fix']['summary']}: {entry['reason']}" for entry in entries[:5]]
    return [section(":warning: *Known not to help:*\n" + "\n".join(lines))]


# --- request verification ------------------------------------------------------------------


def signature_problem(request: HttpRequest, now: float | None = None) -> str | None:
    """Why this request is not from Slack, or None when its v0 signature checks out."""
    secret = getattr(settings, "SLACK_SIGNING_SECRET", None)
    if not secret:
        return "Slack is not configured on this server (SLACK_SIGNING_SECRET is unset)."
    timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
    signature = request.headers.get("X-Slack-Signature", "")
    if not (timestamp.isascii() and timestamp.isdigit()) or not (signature and signature.isascii()):
        return "The request is not signed by Slack."
    if abs((now or time.time()) - int(timestamp)) > MAX_SIGNATURE_AGE_S:
        return "The request's timestamp is too old (or in the future)."
    base = b"v0:" + timestamp.encode() + b":" + request.body
    expected = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(expected, signature) else "The Slack signature is wrong."


def slack_endpoint(view: Callable[[HttpRequest], HttpResponse]) -> Callable[..., HttpResponse]:
    """Signed, POST only, no CSRF (Slack signs instead), and JSON errors."""

    @csrf_exempt
    @require_POST
    def wrapped(request: HttpRequest) -> HttpResponse:
        problem = signature_problem(request)
        if problem is not None:
            return JsonResponse(error_body("bad_signature", problem), status=401)
        try:
            return view(request)
        except Exception:
            log.exception("Slack request failed")
            return JsonResponse(error_body("server_error", "FixGraph failed on this."), status=500)

    return wrapped


# --- posting back -------------------------------------------------------------------------


def allowed_response_url(url: str) -> bool:
    """Only the configured origins (https://hooks.slack.com) may ever be posted to."""
    parts = urlsplit(url)
    if parts.username or parts.password or not parts.hostname:
        return False
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    allowed = getattr(settings, "SLACK_RESPONSE_ORIGINS", ["https://hooks.slack.com"])
    return origin in {o.rstrip("/").lower() for o in allowed}


class NoRedirects(urllib.request.HTTPRedirectHandler):
    # A redirect would lead the post to an origin nobody allowed.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def post_to_slack(url: str, payload: dict[str, Any]) -> int:
    if not allowed_response_url(url):
        raise ValueError(f"refusing to post to {url!r}: not an allowed Slack origin")
    request = urllib.request.Request(  # noqa: S310 - the origin was checked just above
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    opener = urllib.request.build_opener(NoRedirects)
    with opener.open(request, timeout=POST_TIMEOUT_S) as response:
        return int(response.status)


# --- endpoints ---------------------------------------------------------------------------------


def ephemeral(text: str) -> JsonResponse:
    return JsonResponse({"response_type": "ephemeral", "text": text})


@slack_endpoint
def slash_command(request: HttpRequest) -> HttpResponse:
    """`/fixgraph <traceback>`: acknowledge now, post the diagnosis when it is ready."""
    from api.tasks import slack_diagnose

    text = request.POST.get("text", "")
    response_url = request.POST.get("response_url", "")
    if not text.strip():
        return ephemeral("Paste the error after the command: `/fixgraph <traceback or error line>`")
    if not allowed_response_url(response_url):
        return JsonResponse(error_body("invalid", "response_url is not a Slack URL."), status=400)
    slack_diagnose.delay(text, response_url, request.POST.get("user_id", ""))
    return ephemeral("Looking for known fixes…")


@slack_endpoint
def interaction(request: HttpRequest) -> HttpResponse:
    """The buttons under each fix: feedback, or how to validate it."""
    try:
        payload = json.loads(request.POST.get("payload", ""))
        action = payload["actions"][0]
        value = json.loads(action["value"])
        fix_id = int(value["fix"])
    except (ValueError, KeyError, IndexError, TypeError):
        return JsonResponse(error_body("invalid", "Not a FixGraph button payload."), status=400)
    user = (payload.get("user") or {}).get("id", "")
    reply = act_on_button(action["action_id"], fix_id, str(value.get("fp", "")), user)
    response_url = payload.get("response_url", "")
    if reply and allowed_response_url(response_url):
        from api.tasks import slack_post

        slack_post.delay(
            response_url, {"response_type": "ephemeral", "replace_original": False, "text": reply}
        )
    return HttpResponse(status=200)


def act_on_button(action_id: str, fix_id: int, fingerprint: str, slack_user: str) -> str:
    from kb.models import Fix
    from kb.services.diagnosis import record_feedback

    fix = Fix.objects.filter(pk=fix_id).first()
    if fix is None:
        return "That fix is no longer in FixGraph."
    if action_id in (HELPED, NOT_HELPED):
        record_feedback(
            fix,
            helped=action_id == HELPED,
            fingerprint=fingerprint,
            context={"slack_user": slack_user},
            channel="slack",
        )
        return "Thanks: recorded. It will count in the next ranking."
    if action_id == VALIDATE:
        return (
            f"Queue a run with `POST {settings.SITE_URL}/api/v1/validation-runs/` "
            f'`{{"fix_id": {fix_id}, "host": "<host name>"}}` (a token with `validate`).'
        )
    return ""
