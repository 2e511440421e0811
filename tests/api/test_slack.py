"""Slack: signed requests only; the slash command acknowledges and posts blocks later."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlencode

import pytest
from django.test import Client

from api.slack import allowed_response_url
from config.celery import app as celery_app
from kb.models import Finding, FixFeedback
from tests.api.conftest import DSA_ASSERT, assert_error

pytestmark = pytest.mark.django_db

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
COMMANDS, ACTIONS = "/api/v1/slack/commands/", "/api/v1/slack/actions/"


def signed_post(path: str, form: dict, *, secret: str = SECRET, age_s: int = 0):
    body = urlencode(form)
    timestamp = str(int(time.time()) - age_s)
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256)
    return Client().post(
        path,
        body,
        content_type="application/x-www-form-urlencoded",
        HTTP_X_SLACK_REQUEST_TIMESTAMP=timestamp,
        HTTP_X_SLACK_SIGNATURE=f"v0={digest.hexdigest()}",
    )


class Receiver(BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        Receiver.received.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slack(settings):
    """A local stand-in for hooks.slack.com, allowed by setting; Celery runs tasks inline."""
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.server_port}"
    settings.SLACK_SIGNING_SECRET = SECRET
    settings.SLACK_RESPONSE_ORIGINS = [origin]
    Receiver.received = []
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield origin
    celery_app.conf.task_always_eager = eager
    server.shutdown()


def test_a_slash_command_posts_the_diagnosis_to_response_url(
    slack: str, dsa_finding: Finding
) -> None:
    response = signed_post(
        COMMANDS, {"text": DSA_ASSERT, "response_url": f"{slack}/hook/1", "user_id": "U1"}
    )
    assert response.status_code == 200 and response.json()["response_type"] == "ephemeral"
    [posted] = Receiver.received
    assert posted["blocks"] and "bf16" in json.dumps(posted["blocks"])


def test_it_refuses_a_bad_signature(slack: str) -> None:
    response = signed_post(COMMANDS, {"text": "x", "response_url": f"{slack}/h"}, secret="wrong")
    assert_error(response, 401, "bad_signature")
    assert Receiver.received == []


def test_it_refuses_a_stale_request(slack: str) -> None:
    response = signed_post(COMMANDS, {"text": "x", "response_url": f"{slack}/h"}, age_s=6 * 60)
    assert "too old" in assert_error(response, 401, "bad_signature")["message"]


def test_it_refuses_an_unsigned_request(slack: str) -> None:
    assert_error(Client().post(COMMANDS, {"text": "x"}), 401)


def test_it_never_posts_to_a_url_the_request_names(slack: str) -> None:
    response = signed_post(COMMANDS, {"text": "x", "response_url": "http://169.254.169.254/x"})
    assert_error(response, 400)
    assert Receiver.received == []


def test_only_https_hooks_slack_com_is_allowed_by_default(settings) -> None:
    settings.SLACK_RESPONSE_ORIGINS = ["https://hooks.slack.com"]
    assert allowed_response_url("https://hooks.slack.com/commands/T1/2/abc")
    for url in [
        "http://hooks.slack.com/x",
        "https://hooks.slack.com.evil.net/x",
        "https://hooks.slack.com@evil.net/x",
        "https://evil.net/hooks.slack.com",
        "",
    ]:
        assert not allowed_response_url(url), url


def test_the_fixed_it_button_records_feedback(slack: str, dsa_finding: Finding) -> None:
    fix = dsa_finding.fixes.first()
    payload = {
        "type": "block_actions",
        "user": {"id": "U7"},
        "response_url": f"{slack}/r",
        "actions": [{"action_id": "fix_helped", "value": json.dumps({"fix": fix.pk, "fp": "f1"})}],
    }
    response = signed_post(ACTIONS, {"payload": json.dumps(payload)})
    assert response.status_code == 200
    feedback = FixFeedback.objects.get()
    assert (feedback.fix, feedback.helped, feedback.channel) == (fix, True, "slack")
    assert "recorded" in Receiver.received[0]["text"]


def test_a_garbled_button_payload_is_a_400(slack: str) -> None:
    assert_error(signed_post(ACTIONS, {"payload": "{not json"}), 400, "invalid")


def test_slack_is_off_without_a_signing_secret(settings) -> None:
    settings.SLACK_SIGNING_SECRET = None
    assert "not configured" in assert_error(signed_post(COMMANDS, {"text": "x"}), 401)["message"]
