"""Slack: `/fixgraph <paste>` answered in a thread, and buttons that record feedback.

Slack waits 3 s for an answer, so the slash command only acknowledges; a Celery task
diagnoses and posts. With a bot token (SLACK_BOT_TOKEN) the verdict goes to the channel
and the fixes into a thread under it; without one, the answer goes to the command's
`response_url`, unthreaded. Replies to `response_url` only ever go to the origins in
SLACK_RESPONSE_ORIGINS (hooks.slack.com), never to a URL a request names.

Everything from the knowledge base or a user is escaped for mrkdwn (`&`, `<`, `>`), so no
finding title or paste can mention @channel, ping a person, or dress a link up as another.
docs/slack.md says how to install the app and what each button does.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import time
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import authentication, exceptions, parsers, permissions, renderers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import (
    SlackInteractionSerializer,
    SlackMessageSerializer,
    SlashCommandSerializer,
)
from decisiontree.answer import OTHER_SETUP, PROPOSED, RUNNER_UP, changes_beside
from decisiontree.fingerprint import shown_error
from decisiontree.launch import split_at_launch
from kb.models import Fix, FixFeedback
from kb.services import feedback, stored_diagnoses
from kb.services.feedback import Voter

log = logging.getLogger(__name__)

MAX_SIGNATURE_AGE_S = 5 * 60
MAX_FIXES_SHOWN = 5
MAX_BLOCK_TEXT = 2_900  # Slack refuses section text over 3000 characters
MAX_BUTTON_VALUE = 2_000  # and button values over 2000
MAX_ANSWER_BUTTONS = 25  # and more elements in one actions block
MAX_NEAREST_SHOWN = 3
POST_TIMEOUT_S = 10

HELPED, NOT_HELPED, VALIDATE, OPEN = "fix_helped", "fix_not_helped", "fix_validate", "open"
UNDO = "feedback_undo"
WORKED_INSTEAD = "worked_instead"  # the button that opens the modal, and the modal
INSTEAD_FIX, INSTEAD_TEXT = "instead_fix", "instead_text"
ANSWER = "question_answer"  # an answer button is "question_answer:<number>"


# --- mrkdwn -----------------------------------------------------------------------------


def escape(text: Any) -> str:
    """Slack's control characters, escaped as Slack documents: `<!channel>`, `<@U1>` and
    `<https://x|label>` in a finding or a paste arrive as text, not as mentions or links."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code(text: Any) -> str:
    """Inline code; a backtick inside would end the span early."""
    return "`" + escape(text).replace("`", "'") + "`"


def code_block(text: str) -> str:
    """A command to copy; three backticks inside would end the block early."""
    return "```" + escape(text).replace("```", "'''") + "```"


def link(url: str, label: Any) -> str:
    # Our own URLs (SITE_URL + a path we built); only the label can carry user text.
    return f"<{url}|{escape(label).replace('|', '¦')}>"


# --- blocks -----------------------------------------------------------------------------


def diagnosis_blocks(answer: dict[str, Any]) -> dict[str, Any]:
    """The whole answer as one message a bot can post as is."""
    return one_message(answer["summary"], headline_blocks(answer) + detail_blocks(answer))


def one_message(summary: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"response_type": "in_channel", "text": escape(summary), "blocks": blocks}


def headline_blocks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdict: the summary line, the error, and a link to the diagnosis page."""
    lines = [f"*{escape(answer['summary'])}*"]
    signature = answer.get("signature")
    if answer.get("error_lines"):
        lines.append(code(answer["error_lines"][0]))
    elif signature:
        lines.append(code(shown_error(signature["exception_type"], signature["template"])[:500]))
    lines += [
        f"• {code(p['flag'])}: {escape(p['problem'])}"
        + (f"; use {code(p['instead'])}" if p["instead"] else "")
        for p in answer.get("flag_problems", [])
    ]
    lines += [
        f"• *{escape(fault['seen'])}*: {escape(fault['meaning'])}"
        for fault in answer.get("host_faults") or []
        if fault["serious"]
    ]
    lines += [f"• _Build:_ {escape(r['text'])}" for r in answer.get("build_support") or []]
    lines += [f"• _GPU:_ {escape(r['text'])}" for r in answer.get("gpu_requirements") or []]
    if tied := answer.get("tied_causes"):
        lines.append(f"_{escape(answer['tied_note'])}_")
        lines += [f"• {escape(t['text'])}" for t in tied]
    named = answer.get("named_flags") or []
    if named and answer.get("match") != "none":  # with no match the summary names them
        lines.append("_The error names:_ " + escape(", ".join(n["text"] for n in named)))
    lines += [f"_GPU memory:_ {escape(r['text'])}" for r in answer.get("memory_readings") or []]
    elsewhere = answer.get("cause_elsewhere")
    if elsewhere and answer.get("match") != "none":  # with no match the summary says it
        lines.append(f"*{escape(elsewhere['heading'])}* {escape(elsewhere['advice'])}")
    block = section("\n".join(lines))
    if answer.get("html_url"):
        block["accessory"] = url_button("Open in FixGraph", OPEN, answer["html_url"])
    return [block]


def detail_blocks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The fixes with their buttons, what is known not to help, and the open question."""
    blocks: list[dict[str, Any]] = []
    for entry in answer.get("fixes", [])[:MAX_FIXES_SHOWN]:
        blocks += fix_blocks(entry, answer)
    blocks += not_helpful_blocks(answer.get("not_helpful", []))
    blocks += known_good_blocks(answer.get("known_good"))
    for question in answer.get("questions", [])[:1]:
        blocks += question_blocks(question, answer)
    if not blocks:
        blocks.append(section("Nothing the team wrote down matches this error yet."))
        blocks += nearest_blocks(answer)
        blocks += draft_blocks(answer.get("drafts_waiting", []))
    return blocks


def known_good_blocks(good: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One line: the runbook's launch for this setup, and how many settings differ."""
    if not good:
        return []
    line = "_Known to work on this setup:_ " + link(good["html_url"], good["title"])
    if good["differences"]:
        count = len(good["differences"])
        line += f" ({count} setting{'s' if count > 1 else ''} of yours differ)"
    return [section(line)]


def draft_blocks(drafts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A teammate met this error already: their draft waits for a reviewer."""
    return [section(escape(stored_diagnoses.drafts_line(drafts)))] if drafts else []


def nearest_blocks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """With no known match: the nearest findings, why each was not taken, and a button for
    each of their fixes worth trying, should one fix it after all (the paste is kept with
    that vote, and a reviewer can teach the finding this variant)."""
    blocks: list[dict[str, Any]] = []
    for near in answer.get("nearest", [])[:MAX_NEAREST_SHOWN]:
        text = f"*Nearest, not taken:* {link(near['html_url'], near['title'])}"
        blocks.append(section(f"{text}\n_{escape(near['why_not'])}_"))
        if not answer.get("id"):
            continue  # a vote keeps the paste of a stored diagnosis only
        elements = [
            button(
                f"It fixed it: {fix['summary']}"[:75],
                f"{HELPED}:{number}",  # action ids must differ within a block
                button_value(fix["id"], answer),
            )
            for number, fix in enumerate(near.get("fixes", [])[:MAX_ANSWER_BUTTONS])
        ]
        if elements:
            blocks.append(
                {"type": "actions", "block_id": f"near-{near['id']}", "elements": elements}
            )
    return blocks


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:MAX_BLOCK_TEXT]}}


def fix_blocks(entry: dict[str, Any], answer: dict[str, Any]) -> list[dict[str, Any]]:
    fix, finding = entry["fix"], entry["finding"]
    lines = [f"*{entry['rank']}. {escape(fix['summary'])}*"]
    if entry.get("already_applied"):
        lines[0] += " _(already set)_"
    if entry.get("fits_nothing"):
        lines[0] += " _(nothing in it fits your setup)_"
    if entry.get("proposed"):
        lines[0] += f" _({PROPOSED})_"
    if entry.get("runner_up"):
        lines[0] += f" _({RUNNER_UP})_"
    changes = changes_beside(fix["summary"], fix.get("command_changes", []))
    if changes:
        lines.append(" ".join(code(change) for change in changes))
    if entry.get("for_other_setup"):
        lines.append(f"_{OTHER_SETUP.capitalize()}_ " + escape("; ".join(entry["for_other_setup"])))
    why = [step["detail"] for step in entry.get("why", []) if step["step"] != "signature"]
    if why:
        # Each reason may hold a ";" of its own: a dot between them keeps them apart.
        lines.append("_Why:_ " + escape(" · ".join(reason.rstrip(". ") for reason in why[:3])))
    lines.append("_From:_ " + link(finding["html_url"], finding["title"]))
    blocks = [section("\n".join(lines))]
    if entry.get("corrected_command"):
        found = (answer.get("context") or {}).get("found_command") or {}
        commanded = [e for e in answer.get("fixes", []) if e.get("corrected_command")]
        if found.get("source") not in (None, "paste") and commanded[:1] == [entry]:  # once
            rebuilt = f"_Rebuilt from the `{escape(found['source'])}` the server logged:"
            blocks.append(section(f"{rebuilt} check it against the command you ran._"))
        blocks.append(section(code_block(entry["corrected_command"])))
    blocks.append(fix_buttons(entry, answer))
    return blocks


def fix_buttons(entry: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    fix_id = entry["fix_id"]
    value = button_value(fix_id, answer)
    finding_page = entry["finding"]["html_url"]
    return {
        "type": "actions",
        "block_id": f"fix-{fix_id}",
        "elements": [
            button("Fixed it", HELPED, value, style="primary"),
            button("Did not help", NOT_HELPED, value, style="danger"),
            url_button("Validate", VALIDATE, f"{finding_page}#fix-{fix_id}"),
            url_button("Open in FixGraph", OPEN, answer.get("html_url") or finding_page),
        ],
    }


def context(text: str) -> dict[str, Any]:
    """A line in small print: what a message is, not what it says."""
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:MAX_BLOCK_TEXT]}]}


def button_value(fix_id: int, answer: dict[str, Any]) -> str:
    """What a feedback button carries back: the fix, the diagnosis (whose paste is kept
    with the feedback) and the fingerprint when the diagnosis is not stored."""
    fingerprint = (answer.get("signature") or {}).get("fingerprint", "")
    value = json.dumps({"fix": fix_id, "d": answer.get("id"), "fp": fingerprint[:64]})
    return value[:MAX_BUTTON_VALUE]


def button(label: str, action_id: str, value: str, style: str = "") -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": label},
        "action_id": action_id,
        "value": value,
    }
    return {**element, "style": style} if style else element


def url_button(label: str, action_id: str, url: str) -> dict[str, Any]:
    return {
        "type": "button",
        "text": {"type": "plain_text", "text": label},
        "action_id": action_id,
        "url": url,
    }


def question_blocks(question: dict[str, Any], answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The question that would change the order, what comes first for each answer, and a
    button per answer that re-ranks this diagnosis (only a stored one can be refined)."""
    lines = [f":question: *{escape(question['text'])}*"]
    lines += [
        f"• {escape(pair['answer'])}: first {escape(pair['fix'])}"
        for pair in question.get("first_fix_by_answer", [])
    ]
    blocks = [section("\n".join(lines))]
    if answer.get("id"):
        blocks.append(
            {
                "type": "actions",
                "block_id": f"question-{question['key']}"[:255],
                "elements": [
                    button(
                        str(choice)[:75],
                        f"{ANSWER}:{number}",
                        json.dumps({"d": answer["id"], "key": question["key"], "answer": choice}),
                    )
                    for number, choice in enumerate(question["answers"][:MAX_ANSWER_BUTTONS])
                ],
            }
        )
    return blocks


def not_helpful_blocks(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not entries:
        return []
    lines = [
        f"• {escape(entry['fix']['summary'])}: {escape(entry['reason'])}" for entry in entries[:5]
    ]
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
    # Bytes, so a header with characters outside ASCII is a wrong signature, not a crash.
    sent = signature.encode("utf-8", "replace")
    return None if hmac.compare_digest(expected.encode(), sent) else "The Slack signature is wrong."


class SlackSigned:
    """`request.auth` of a request whose Slack signature checked out."""


class SlackSignatureAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[AnonymousUser, SlackSigned]:
        problem = signature_problem(request._request)
        if problem is not None:
            raise exceptions.AuthenticationFailed(problem, code="bad_signature")
        return AnonymousUser(), SlackSigned()

    def authenticate_header(self, request: Request) -> str:
        return "Slack-Signature"


class IsSlackSigned(permissions.BasePermission):
    def has_permission(self, request: Request, view: APIView) -> bool:
        return isinstance(request.auth, SlackSigned)


class SlackEndpoint(APIView):
    """Signed by Slack instead of a token; a form body; no CSRF (the signature stands in)."""

    authentication_classes = [SlackSignatureAuthentication]
    permission_classes = [IsSlackSigned]
    throttle_classes: list[type] = []  # Slack's own rate limits apply; one IP for everyone
    parser_classes = [parsers.FormParser]
    renderer_classes = [renderers.JSONRenderer]


# --- talking to Slack -------------------------------------------------------------------------


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


def send_json(url: str, payload: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(  # noqa: S310 - callers pass only checked or configured URLs
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json; charset=utf-8", **headers},
        method="POST",
    )
    opener = urllib.request.build_opener(NoRedirects)
    with opener.open(request, timeout=POST_TIMEOUT_S) as response:
        return int(response.status), response.read()


def post_to_slack(url: str, payload: dict[str, Any]) -> int:
    if not allowed_response_url(url):
        raise ValueError(f"refusing to post to {url!r}: not an allowed Slack origin")
    code, _ = send_json(url, payload, {})
    return code


class SlackApiError(Exception):
    """Slack's Web API answered `ok: false` (the bot is not in the channel, a bad token…)."""


def call_api(method: str, payload: dict[str, Any]) -> dict[str, Any]:
    """One Slack Web API call with the bot token, e.g. chat.postMessage."""
    url = f"{settings.SLACK_API_URL.rstrip('/')}/{method}"
    _, body = send_json(url, payload, {"Authorization": f"Bearer {settings.SLACK_BOT_TOKEN}"})
    reply: dict[str, Any] = json.loads(body or b"{}")
    if not reply.get("ok"):
        raise SlackApiError(f"{method}: {reply.get('error', 'no reason given')}")
    return reply


def post_answer(answer: dict[str, Any], *, channel: str, response_url: str) -> None:
    """The verdict in the channel and the fixes in a thread under it (with a bot token);
    else the whole answer to `response_url`."""
    head, details = headline_blocks(answer), detail_blocks(answer)
    post_threaded(answer["summary"], head, ("Fixes, best first", details), channel, response_url)


def post_launch_check(check: dict[str, Any], *, channel: str, response_url: str) -> None:
    """A launch check as a diagnosis is posted: the summary in the channel, the issues in
    a thread under it."""
    head, details = launch_check_headline(check), launch_check_details(check)
    post_threaded(
        check["summary"], head, ("Known issues of this launch", details), channel, response_url
    )


def post_threaded(
    summary: str,
    headline: list[dict[str, Any]],
    thread: tuple[str, list[dict[str, Any]]],
    channel: str,
    response_url: str,
) -> None:
    """`headline` in the channel and the `thread` (its notification text, its blocks)
    under it, with a bot token; else both as one message to `response_url`."""
    thread_text, details = thread
    if settings.SLACK_BOT_TOKEN and channel:
        try:
            head = call_api(
                "chat.postMessage",
                {"channel": channel, "text": escape(summary), "blocks": headline},
            )
            call_api(
                "chat.postMessage",
                {
                    "channel": channel,
                    "thread_ts": head["ts"],
                    "text": thread_text,
                    "blocks": details,
                },
            )
            return
        except SlackApiError as failed:  # e.g. a private channel the bot was not invited to
            log.warning("Slack thread not posted (%s); answering through response_url", failed)
    post_to_slack(response_url, one_message(summary, headline + details))


# --- launch checks -------------------------------------------------------------------------

CHECK_KEYWORD = re.compile(r"\s*check(?:\s+|$)", re.IGNORECASE)
CHECK_USAGE = (
    "After `check`, give the launch command, and before it the GPU and release if you know "
    "them: `/fixgraph check 8x H100 sglang 0.5.9 python -m sglang.launch_server --model-path …`"
)
MAX_RISKS_SHOWN = 5
MAX_BUTTON_URL = 3_000  # Slack refuses longer link buttons


def launch_to_check(text: str) -> tuple[str, str] | None:
    """(the words about the setup, the launch command) of `/fixgraph check …`; None for a
    paste (an error that starts "Check failed: …" holds no launch)."""
    keyword = CHECK_KEYWORD.match(text)
    return split_at_launch(text[keyword.end() :]) if keyword else None


def launch_check_headline(check: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary, the setup as read, and flags no release knows."""
    setup = check["context"]
    lines = [f"*Launch check: {escape(check['summary'])}*"]
    read = [
        ", ".join(setup["gpus"]) + (f" ({setup['arch']})" if setup["arch"] else ""),
        " ".join(filter(None, (setup["framework"], setup["framework_version"]))),
        setup["model"] or "",
    ]
    lines.append("_Read as:_ " + escape(" · ".join(part for part in read if part) or "nothing"))
    if not setup["gpus"] and not setup["arch"]:
        lines.append("_No GPU given: findings that need one stay open. Name it before the launch._")
    lines += [
        f"• {code(p['flag'])}: {escape(p['problem'])}"
        + (f"; use {code(p['instead'])}" if p["instead"] else "")
        for p in check["flag_problems"]
    ]
    if check.get("builds"):
        lines.append(f"_Builds for {escape(setup['arch'])}:_ made with {escape(check['builds'])}")
    lines += [f"• _GPU:_ {escape(r['text'])}" for r in check.get("gpu_requirements") or []]
    if (weights := check.get("weights")) and weights["helps"]:
        lines.append(escape(weights["text"]))
    block = section("\n".join(lines))
    if len(check["html_url"]) <= MAX_BUTTON_URL:
        block["accessory"] = url_button("Open in FixGraph", OPEN, check["html_url"])
    return [block]


def launch_check_details(check: dict[str, Any]) -> list[dict[str, Any]]:
    """Each issue the launch meets: why, the first fix applied to the launch, its finding."""
    blocks: list[dict[str, Any]] = []
    if (weights := check.get("weights")) and weights["corrected_command"]:
        blocks.append(section("*With a split that holds the weights:*"))
        blocks.append(section(code_block(weights["corrected_command"])))
    for number, risk in enumerate(check["risks"][:MAX_RISKS_SHOWN], start=1):
        lines = [f"*{number}. {escape(risk['finding']['title'])}*"]
        if not risk["certain"]:
            left = "; ".join(condition["in_words"] for condition in risk["open"])
            lines[0] += f" _(may apply: not settled by your launch: {escape(left)})_"
        cause = next((step["detail"] for step in risk["why"] if step["step"] == "cause"), "")
        if cause:
            lines.append("_Why:_ " + escape(cause))
        first = risk["fixes"][0] if risk["fixes"] else None
        if first:
            fix = first["fix"]
            changes = changes_beside(fix["summary"], fix.get("command_changes", []))
            lines.append(f"_First fix:_ {escape(fix['summary'])}")
            if changes:
                lines.append(" ".join(code(change) for change in changes))
        lines.append("_From:_ " + link(risk["finding"]["html_url"], risk["finding"]["title"]))
        blocks.append(section("\n".join(lines)))
        if first and first.get("corrected_command"):
            blocks.append(section(code_block(first["corrected_command"])))
    untold = len(check["risks"]) - MAX_RISKS_SHOWN + check["more"]
    if untold > 0:
        blocks.append(context(f"{untold} more on the page: {link(check['html_url'], 'open it')}"))
    blocks += known_good_blocks(check.get("known_good"))
    if not blocks:
        blocks.append(section("No finding of the team's names this launch."))
    return blocks


# --- endpoints ---------------------------------------------------------------------------------


def ephemeral(text: str) -> Response:
    return Response({"response_type": "ephemeral", "text": text})


class SlashCommandView(SlackEndpoint):
    """`/fixgraph <paste>` or `/fixgraph check <launch>`: acknowledged at once; the answer
    follows in a thread."""

    @extend_schema(
        tags=["slack"],
        request={"application/x-www-form-urlencoded": SlashCommandSerializer},
        responses={200: OpenApiResponse(SlackMessageSerializer, "The acknowledgement")},
    )
    def post(self, request: Request) -> Response:
        from api.tasks import slack_diagnose

        serializer = SlashCommandSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        text = data["text"]
        if not text.strip():
            return ephemeral("Paste the error after the command: `/fixgraph <traceback>`")
        if not allowed_response_url(data["response_url"]):
            raise exceptions.ValidationError({"response_url": ["Not a Slack URL."]})
        launch = launch_to_check(text)
        if launch is not None:
            from api.tasks import slack_check_launch

            setup, command = launch
            slack_check_launch.delay(
                setup, command, data["response_url"], channel=data["channel_id"]
            )
            return ephemeral("Checking the launch for known issues…")
        if text.split(maxsplit=1)[0] == "check":
            return ephemeral(CHECK_USAGE)
        slack_diagnose.delay(
            text,
            data["response_url"],
            channel=data["channel_id"],
            team=data["team_id"],
            user=data["user_id"],
        )
        return ephemeral("Looking for known fixes…")


class InteractionView(SlackEndpoint):
    """The buttons under each fix, the Undo under a vote, and the "what worked instead?"
    form: feedback through the same service as the web page and the API."""

    @extend_schema(
        tags=["slack"],
        request={"application/x-www-form-urlencoded": SlackInteractionSerializer},
        responses={200: OpenApiResponse(None, "Received; any reply goes to response_url")},
    )
    def post(self, request: Request) -> Response:
        serializer = SlackInteractionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        payload = serializer.validated_data["payload"]
        if payload.get("type") == "view_submission":
            worked_instead_submitted(payload)
        elif payload.get("type") == "block_actions":
            act_on_button(payload)
        return Response(status=status.HTTP_200_OK)


def slack_voter(payload: dict[str, Any]) -> Voter:
    user = payload.get("user") or {}
    team = (payload.get("team") or {}).get("id") or user.get("team_id") or ""
    return Voter.for_slack(str(team), str(user.get("id") or ""))


def act_on_button(payload: dict[str, Any]) -> None:
    from api.tasks import slack_post

    action = payload["actions"][0]
    # A button among several of one kind in a block carries ":<number>" after its kind.
    action_id = str(action.get("action_id") or "").partition(":")[0]
    value = button_data(action)
    voter = slack_voter(payload)
    response_url = payload.get("response_url", "")
    reply: dict[str, Any] | None = None
    if action_id in (HELPED, NOT_HELPED):
        reply = vote_from_button(value, voter, helped=action_id == HELPED)
    elif action_id == UNDO:
        taken_back = feedback.undo(int(value.get("vote") or 0), voter)
        text = "Taken back: your word no longer counts." if taken_back else "Nothing to undo."
        reply = {"text": text}
    elif action_id == WORKED_INSTEAD:
        open_worked_instead(int(value.get("vote") or 0), voter, payload.get("trigger_id", ""))
    elif action_id == ANSWER:
        from api.tasks import slack_answer

        if allowed_response_url(response_url):  # re-diagnosing may take longer than Slack waits
            slack_answer.delay(
                str(value.get("d") or ""),
                str(value.get("key") or ""),
                str(value.get("answer") or ""),
                response_url,
                requester=voter.key,
            )
    # VALIDATE and OPEN are link buttons: Slack opens the page; nothing to do here.
    if reply and allowed_response_url(response_url):
        slack_post.delay(
            response_url, {"response_type": "ephemeral", "replace_original": False, **reply}
        )


def button_data(action: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(action.get("value") or "{}")
    except ValueError:
        raise exceptions.ValidationError({"payload": ["Not a FixGraph button."]}) from None
    if not isinstance(value, dict):
        raise exceptions.ValidationError({"payload": ["Not a FixGraph button."]})
    return value


def vote_from_button(value: dict[str, Any], voter: Voter, *, helped: bool) -> dict[str, Any]:
    fix = Fix.objects.filter(pk=int_or_zero(value.get("fix"))).first()
    if fix is None:
        return {"text": "That fix is no longer in FixGraph."}
    slug = value.get("d")
    vote, created = feedback.vote(
        fix,
        voter,
        helped=helped,
        diagnosis=stored_diagnoses.stored(slug) if isinstance(slug, str) else None,
        fingerprint=str(value.get("fp") or ""),
        channel="slack",
    )
    said = "fixed it" if helped else "did not help"
    again = "" if created else " It replaces your earlier word."
    text = f"Thanks: recorded that *{escape(fix.summary)}* {said}.{again} It counts once."
    buttons = [button("Undo", UNDO, json.dumps({"vote": vote.pk}))]
    if not helped and settings.SLACK_BOT_TOKEN:
        buttons.insert(
            0, button("What worked instead?", WORKED_INSTEAD, json.dumps({"vote": vote.pk}))
        )
    blocks = [section(text), {"type": "actions", "elements": buttons}]
    return {"text": text, "blocks": blocks}


def int_or_zero(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def open_worked_instead(vote_id: int, voter: Voter, trigger_id: str) -> None:
    """A modal asking which fix worked instead, or what did (Slack's views.open)."""
    vote = FixFeedback.objects.filter(pk=vote_id, voter=voter.key).select_related("fix").first()
    if vote is None or not trigger_id or not settings.SLACK_BOT_TOKEN:
        return
    others = Fix.objects.filter(finding_id=vote.fix.finding_id).exclude(pk=vote.fix_id)
    blocks: list[dict[str, Any]] = []
    options = [
        {"text": {"type": "plain_text", "text": other.summary[:75]}, "value": str(other.pk)}
        for other in others.order_by("position", "id")[:100]
    ]
    if options:
        blocks.append(
            {
                "type": "input",
                "block_id": INSTEAD_FIX,
                "optional": True,
                "label": {"type": "plain_text", "text": "Another fix that worked"},
                "element": {"type": "static_select", "action_id": INSTEAD_FIX, "options": options},
            }
        )
    blocks.append(
        {
            "type": "input",
            "block_id": INSTEAD_TEXT,
            "optional": True,
            "label": {"type": "plain_text", "text": "Or what worked, in your words"},
            "element": {"type": "plain_text_input", "action_id": INSTEAD_TEXT, "multiline": True},
        }
    )
    view = {
        "type": "modal",
        "callback_id": WORKED_INSTEAD,
        "private_metadata": json.dumps({"vote": vote.pk}),
        "title": {"type": "plain_text", "text": "What worked instead?"},
        "submit": {"type": "plain_text", "text": "Tell the team"},
        "blocks": blocks,
    }
    try:
        call_api("views.open", {"trigger_id": trigger_id, "view": view})
    except SlackApiError as failed:
        log.warning("Slack modal not opened: %s", failed)


def worked_instead_submitted(payload: dict[str, Any]) -> None:
    view = payload.get("view") or {}
    if view.get("callback_id") != WORKED_INSTEAD:
        return
    try:
        vote_id = int_or_zero(json.loads(view.get("private_metadata") or "{}").get("vote"))
    except (ValueError, AttributeError):
        return
    values = (view.get("state") or {}).get("values") or {}
    chosen = ((values.get(INSTEAD_FIX) or {}).get(INSTEAD_FIX) or {}).get("selected_option")
    text = ((values.get(INSTEAD_TEXT) or {}).get(INSTEAD_TEXT) or {}).get("value") or ""
    fix = Fix.objects.filter(pk=int_or_zero((chosen or {}).get("value"))).first()
    feedback.tell_worked_instead(vote_id, slack_voter(payload), fix=fix, text=str(text))
