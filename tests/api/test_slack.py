"""Slack: signed requests only; `/fixgraph` answers in a thread; buttons record feedback.

Slack itself cannot run here: `FakeSlack` stands in for both of its faces that FixGraph
calls, the Web API (chat.postMessage, views.open, with the bot token) and the
`response_url` hooks, on a local port, recording what it receives and answering as Slack
documents (`{"ok": true, "ts": ...}`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client

from api.slack import allowed_response_url, diagnosis_blocks, escape
from config.celery import app as celery_app
from kb.models import Finding, Fix, FixFeedback, StoredDiagnosis
from kb.services import stored_diagnoses
from kb.services.diagnosis import start_finding_from_paste
from kb.services.feedback import pastes_to_learn, votes_per_fix
from tests.api.conftest import DSA_ASSERT, assert_error
from tests.kb.test_diagnose_command import CAPTURE_LAUNCH, CAPTURE_OOM, DECODE_CRASH
from tests.questions_kb import ADA_FIX, BLACKWELL_FIX, MOE_OUT_OF_RESOURCES_ELSEWHERE, gpu_split_kb
from tests.web.test_log_upload import SERVER_ARGS

pytestmark = pytest.mark.django_db

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-test-bot-token"
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


class FakeSlack(BaseHTTPRequestHandler):
    """Records every POST as (path, authorization, json body); Web API calls get a `ts`."""

    received: list[tuple[str, str, dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(length))
        FakeSlack.received.append((self.path, self.headers.get("Authorization", ""), body))
        reply = {"ok": True}
        if self.path.startswith("/api/"):
            if self.headers.get("Authorization") != f"Bearer {BOT_TOKEN}":
                reply = {"ok": False, "error": "invalid_auth"}
            else:
                reply["ts"] = f"1767225600.{len(FakeSlack.received):06d}"
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass

    @classmethod
    def posts_to(cls, path_end: str) -> list[dict[str, Any]]:
        return [body for path, _, body in cls.received if path.endswith(path_end)]


@pytest.fixture
def slack(settings):
    """A local Slack, allowed by setting; Celery runs tasks inline. No bot token."""
    server = HTTPServer(("127.0.0.1", 0), FakeSlack)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.server_port}"
    settings.SLACK_SIGNING_SECRET = SECRET
    settings.SLACK_RESPONSE_ORIGINS = [origin]
    settings.SLACK_API_URL = f"{origin}/api"
    settings.SLACK_BOT_TOKEN = None
    FakeSlack.received = []
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield origin
    celery_app.conf.task_always_eager = eager
    server.shutdown()


@pytest.fixture
def slack_bot(slack: str, settings) -> str:
    settings.SLACK_BOT_TOKEN = BOT_TOKEN
    return slack


def buttons_of(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"]]


def press(button: dict[str, Any], slack: str, *, user: str = "U7", **extra: Any):
    payload = {
        "type": "block_actions",
        "team": {"id": "T1"},
        "user": {"id": user},
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "response_url": f"{slack}/actions/T1/1/xyz",
        "actions": [{"action_id": button["action_id"], "value": button.get("value", "")}],
        **extra,
    }
    return signed_post(ACTIONS, {"payload": json.dumps(payload)})


def test_the_whole_path_from_slash_command_to_counted_feedback(
    slack_bot: str, dsa_finding: Finding
) -> None:
    """/fixgraph -> verdict in the channel, fixes in its thread -> "Fixed it" -> one vote;
    a second press by the same person replaces it; Undo takes it back."""
    response = signed_post(
        COMMANDS,
        {
            "command": "/fixgraph",
            "text": DSA_ASSERT,
            "response_url": f"{slack_bot}/commands/T1/1/abc",
            "user_id": "U7",
            "team_id": "T1",
            "channel_id": "C42",
        },
    )
    assert response.status_code == 200
    assert response.json() == {"response_type": "ephemeral", "text": "Looking for known fixes…"}
    verdict, thread = FakeSlack.posts_to("/api/chat.postMessage")
    assert all(auth == f"Bearer {BOT_TOKEN}" for _, auth, _ in FakeSlack.received)
    assert verdict["channel"] == thread["channel"] == "C42"
    assert verdict["text"].startswith("Known issue: FP8 KV cache trips")
    assert "thread_ts" not in verdict and thread["thread_ts"].startswith("1767225600.")
    fixed_it = next(b for b in buttons_of(thread["blocks"]) if b["text"]["text"] == "Fixed it")
    labels = [b["text"]["text"] for b in buttons_of(thread["blocks"])]
    assert labels == ["Fixed it", "Did not help", "Validate", "Open in FixGraph"]

    assert press(fixed_it, slack_bot).status_code == 200
    fix = Fix.objects.get(finding=dsa_finding, outcome="resolves")
    vote = FixFeedback.objects.get()
    assert (vote.fix, vote.helped, vote.voter, vote.channel) == (fix, True, "slack:T1:U7", "slack")
    assert vote.diagnosis.text == DSA_ASSERT  # the paste, kept with the vote
    assert vote.diagnosis.requester == "slack:T1:U7"
    open_page = next(
        b for b in buttons_of(thread["blocks"]) if b["text"]["text"] == "Open in FixGraph"
    )
    assert open_page["url"] == vote.diagnosis.html_url
    [thanks] = FakeSlack.posts_to("/actions/T1/1/xyz")
    assert thanks["response_type"] == "ephemeral" and "fixed it" in thanks["text"]

    did_not_help = next(
        b for b in buttons_of(thread["blocks"]) if b["action_id"] == "fix_not_helped"
    )
    assert did_not_help["value"] == fixed_it["value"]  # the same fix
    press(did_not_help, slack_bot)
    assert FixFeedback.objects.count() == 1
    assert votes_per_fix()[fix.pk] == (0, 1)
    press(fixed_it, slack_bot, user="U8")  # someone else
    assert votes_per_fix()[fix.pk] == (1, 1)

    reply = FakeSlack.posts_to("/actions/T1/1/xyz")[1]
    undo = next(b for b in buttons_of(reply["blocks"]) if b["text"]["text"] == "Undo")
    press(undo, slack_bot)
    assert votes_per_fix()[fix.pk] == (1, 0)
    assert "Taken back" in FakeSlack.posts_to("/actions/T1/1/xyz")[-1]["text"]


def test_a_question_answered_with_a_button_re_ranks_the_fixes_in_place(slack: str) -> None:
    """The paste leaves the GPU open and the GPU decides the first fix: the answer asks
    which, with a button per answer; pressing one replaces the message with the fixes
    re-ranked for it, kept as a diagnosis that refines the first."""
    gpu_split_kb()
    signed_post(
        COMMANDS,
        {
            "text": MOE_OUT_OF_RESOURCES_ELSEWHERE,
            "response_url": f"{slack}/hook/q",
            "user_id": "U3",
        },
    )
    [asked] = FakeSlack.posts_to("/hook/q")
    answers = [b for b in buttons_of(asked["blocks"]) if b["action_id"].startswith("question_")]
    assert [b["text"]["text"] for b in answers] == ["sm_120", "sm_89", "other"]
    question = json.dumps(asked["blocks"])
    assert f"sm_89: first {ADA_FIX}" in question and f"sm_120: first {BLACKWELL_FIX}" in question

    ada = next(b for b in answers if b["text"]["text"] == "sm_89")
    assert press(ada, slack, user="U4").status_code == 200

    [re_ranked] = FakeSlack.posts_to("/actions/T1/1/xyz")
    assert re_ranked["replace_original"] is True
    fix_lines = [
        block["text"]["text"].splitlines()[0]
        for block in re_ranked["blocks"]
        if block["type"] == "section" and block["text"]["text"].startswith("*")
    ]
    assert [line for line in fix_lines if ADA_FIX in line or BLACKWELL_FIX in line] == [
        f"*1. {ADA_FIX}*",
        f"*2. {BLACKWELL_FIX}*",
    ]
    assert "question_" not in json.dumps(re_ranked["blocks"])  # nothing left to ask
    first, refined = StoredDiagnosis.objects.order_by("created_at", "id")
    assert (refined.refines, refined.answers) == (first, {"gpu.arch": "sm_89"})
    assert refined.requester == "slack:T1:U4"

    blackwell = next(b for b in answers if b["text"]["text"] == "sm_120")
    press(blackwell, slack, user="U4")
    assert first_fix(FakeSlack.posts_to("/actions/T1/1/xyz")[-1]) == f"*1. {BLACKWELL_FIX}*"


def first_fix(message: dict[str, Any]) -> str:
    return next(
        line
        for block in message["blocks"]
        if block["type"] == "section"
        for line in block["text"]["text"].splitlines()[:1]
        if line.startswith("*1. ")
    )


def test_an_answer_the_question_did_not_offer_changes_nothing(slack: str) -> None:
    gpu_split_kb()
    signed_post(COMMANDS, {"text": MOE_OUT_OF_RESOURCES_ELSEWHERE, "response_url": f"{slack}/h"})
    [asked] = FakeSlack.posts_to("/h")
    slug = json.loads(buttons_of(asked["blocks"])[-1]["value"])["d"]
    for key, answer in (("gpu.arch", "sm_90"), ("env.LD_PRELOAD", "/tmp/x.so")):
        forged = {"action_id": "question_answer:0", "value": json.dumps(
            {"d": slug, "key": key, "answer": answer}
        )}  # fmt: skip
        assert press(forged, slack).status_code == 200

    refusals = FakeSlack.posts_to("/actions/T1/1/xyz")
    assert len(refusals) == 2 and all(r["response_type"] == "ephemeral" for r in refusals)
    assert "did not ask" in refusals[0]["text"]
    assert StoredDiagnosis.objects.count() == 1


def test_with_no_known_match_a_nearest_findings_fix_can_be_said_to_have_fixed_it(
    slack: str, starter_kb: None
) -> None:
    near_miss = "RuntimeError: CUDA error: an illegal memory access was encountered in flashmla"
    signed_post(COMMANDS, {"text": near_miss, "response_url": f"{slack}/h", "user_id": "U5"})
    [answer] = FakeSlack.posts_to("/h")
    assert "Nothing the team wrote down matches" in json.dumps(answer["blocks"])
    assert "Nearest, not taken" in json.dumps(answer["blocks"])
    offered = [b for b in buttons_of(answer["blocks"]) if b["action_id"].startswith("fix_helped")]
    assert offered and all(b["text"]["text"].startswith("It fixed it: ") for b in offered)

    assert press(offered[-1], slack, user="U5").status_code == 200

    vote = FixFeedback.objects.get()
    assert (vote.helped, vote.voter) == (True, "slack:T1:U5")
    assert vote.diagnosis.text == near_miss  # kept for a reviewer to add as a sample
    assert vote.fix.pk == json.loads(offered[-1]["value"])["fix"]
    assert vote in pastes_to_learn(vote.fix.finding)


def test_what_worked_instead_opens_a_form_and_is_kept(slack_bot: str, dsa_finding: Finding) -> None:
    fix = Fix.objects.get(finding=dsa_finding, outcome="resolves")
    other = Fix.objects.create(
        finding=dsa_finding, summary="Move decode to trtllm", outcome="resolves", position=2
    )
    press({"action_id": "fix_not_helped", "value": json.dumps({"fix": fix.pk})}, slack_bot)
    reply = FakeSlack.posts_to("/actions/T1/1/xyz")[0]
    ask = next(b for b in buttons_of(reply["blocks"]) if b["action_id"] == "worked_instead")
    press(ask, slack_bot)
    [opened] = FakeSlack.posts_to("/api/views.open")
    modal = opened["view"]
    options = [o["value"] for o in modal["blocks"][0]["element"]["options"]]
    assert str(other.pk) in options and str(fix.pk) not in options
    submission = {
        "type": "view_submission",
        "team": {"id": "T1"},
        "user": {"id": "U7"},
        "view": {
            "callback_id": modal["callback_id"],
            "private_metadata": modal["private_metadata"],
            "state": {
                "values": {
                    "instead_fix": {"instead_fix": {"selected_option": {"value": str(other.pk)}}},
                    "instead_text": {"instead_text": {"value": "and a restart"}},
                }
            },
        },
    }
    assert signed_post(ACTIONS, {"payload": json.dumps(submission)}).status_code == 200
    vote = FixFeedback.objects.get()
    assert (vote.worked_instead_fix, vote.worked_instead_text) == (other, "and a restart")


def test_someone_else_cannot_undo_a_vote(slack: str, dsa_finding: Finding) -> None:
    fix = Fix.objects.get(finding=dsa_finding, outcome="resolves")
    press({"action_id": "fix_helped", "value": json.dumps({"fix": fix.pk})}, slack)
    vote = FixFeedback.objects.get()
    press({"action_id": "feedback_undo", "value": json.dumps({"vote": vote.pk})}, slack, user="U9")
    assert FixFeedback.objects.filter(pk=vote.pk).exists()


def test_without_a_bot_token_the_answer_goes_to_response_url(
    slack: str, dsa_finding: Finding
) -> None:
    response = signed_post(
        COMMANDS, {"text": DSA_ASSERT, "response_url": f"{slack}/hook/1", "user_id": "U1"}
    )
    assert response.status_code == 200 and response.json()["response_type"] == "ephemeral"
    [posted] = FakeSlack.posts_to("/hook/1")
    assert posted["response_type"] == "in_channel"
    assert "bf16" in json.dumps(posted["blocks"])
    assert not FakeSlack.posts_to("/api/chat.postMessage")


def test_a_bot_not_in_the_channel_falls_back_to_response_url(
    slack_bot: str, settings, dsa_finding: Finding
) -> None:
    settings.SLACK_BOT_TOKEN = "xoxb-revoked"
    signed_post(
        COMMANDS,
        {"text": DSA_ASSERT, "response_url": f"{slack_bot}/hook/2", "channel_id": "C1"},
    )
    [posted] = FakeSlack.posts_to("/hook/2")
    assert "bf16" in json.dumps(posted["blocks"])


def test_a_bare_error_line_is_quoted_as_written(reader, dsa_finding: Finding) -> None:
    response = reader.post(
        "/api/v1/diagnose/?format=slack",
        {"traceback": "the upstream refused the connection"},
        format="json",
    )
    headline = response.json()["blocks"][0]["text"]["text"]
    assert "`the upstream refused the connection`" in headline
    assert "ErrorLog" not in headline


def test_beside_a_match_the_verdict_names_the_settings_the_error_names(
    reader, starter_kb: None
) -> None:
    body = {"traceback": CAPTURE_OOM, "launch_command": CAPTURE_LAUNCH}
    response = reader.post("/api/v1/diagnose/?format=slack", body, format="json")
    headline = response.json()["blocks"][0]["text"]["text"]
    assert headline.startswith("*Known issue: CUDA-graph capture runs out of memory")
    assert "_The error names:_ --mem-fraction-static (yours: 0.95), " in headline


def test_a_fix_nobody_confirmed_says_so_in_its_heading(reader, starter_kb: None) -> None:
    paste = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    response = reader.post("/api/v1/diagnose/?format=slack", {"traceback": paste}, format="json")
    first_fix = response.json()["blocks"][1]["text"]["text"]
    assert first_fix.startswith("*1. raise --mem-fraction-static")
    assert first_fix.splitlines()[0].endswith("_(proposed, not confirmed — validate it)_")


def test_a_fixs_reasons_read_apart(reader, starter_kb: None) -> None:
    paste = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    response = reader.post("/api/v1/diagnose/?format=slack", {"traceback": paste}, format="json")
    first_fix = response.json()["blocks"][1]["text"]["text"]

    why = next(line for line in first_fix.splitlines() if line.startswith("_Why:_ "))
    reasons = why.removeprefix("_Why:_ ").split(" · ")
    assert len(reasons) > 1
    assert not any(reason.endswith(".") for reason in reasons)


def test_a_fix_confirmed_for_another_setup_says_which(reader, starter_kb: None) -> None:
    llama = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct"
    body = {"traceback": CAPTURE_OOM, "launch_command": llama + " --mem-fraction-static 0.9"}
    response = reader.post("/api/v1/diagnose/?format=slack", body, format="json")

    texts = [b["text"]["text"] for b in response.json()["blocks"] if b["type"] == "section"]
    incident = next(t for t in texts if "--mem-fraction-static 0.88" in t.splitlines()[0])
    assert "_For another setup: its finding applies when_ " in incident
    assert "model architecture is glm_moe_dsa (yours: llama)" in incident


def test_a_fix_in_words_is_said_once(reader, starter_kb: None) -> None:
    paste = (
        "/opt/flashinfer/include/flashinfer/attention/mla.cuh(523): error: static assertion "
        'failed with "sizeof(DType) == 2"'
    )
    response = reader.post("/api/v1/diagnose/?format=slack", {"traceback": paste}, format="json")
    first_fix = json.dumps(response.json()["blocks"][1])
    assert first_fix.count("revert the kv_data_type patch in flashinfer_mla_backend.py") == 1


def test_a_fix_whose_summary_is_its_flags_lists_them_once(reader, starter_kb: None) -> None:
    paste = (
        'File "/opt/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 1412, in '
        "set_kv_buffer\n    assert not self.nsa_kv_cache_store_fp8\nAssertionError\n"
    )
    response = reader.post("/api/v1/diagnose/?format=slack", {"traceback": paste}, format="json")
    first_fix = response.json()["blocks"][1]["text"]["text"]
    assert first_fix.startswith("*1. --")  # a fix of flags, under a heading of them
    assert first_fix.count("dsa-decode-backend trtllm") == 1


def test_knowledge_base_text_cannot_ping_or_disguise_links(reader, dsa_finding: Finding) -> None:
    """Slack reads <!channel>, <@U…> and <url|label> in mrkdwn: they must arrive as text."""
    dsa_finding.title = "Crash <!channel> <!everyone> ask <@U024BE7LH>"
    dsa_finding.cause = "See <https://evil.example/x|the official fix> & more"
    dsa_finding.save()
    fix = dsa_finding.fixes.get(outcome="resolves")
    fix.summary = "Use bf16 <!here>"
    fix.save()
    response = reader.post(
        "/api/v1/diagnose/?format=slack", {"traceback": DSA_ASSERT}, format="json"
    )
    assert response.status_code == 200, response.content[:300]
    text = json.dumps(response.json())
    for raw in ("<!channel>", "<!everyone>", "<!here>", "<@U024BE7LH>", "<https://evil"):
        assert raw not in text
    assert "&lt;!channel&gt;" in text and "&lt;https://evil.example/x|the official fix&gt;" in text
    assert "&amp; more" in text


def test_escape_handles_slacks_three_control_characters() -> None:
    assert escape("a & <b> <!channel>") == "a &amp; &lt;b&gt; &lt;!channel&gt;"


def test_a_hostile_paste_cannot_ping_through_the_verdict(slack: str) -> None:
    blocks = diagnosis_blocks(
        {
            "summary": "No known match for <!channel> in FixGraph.",
            "signature": {"exception_type": "<@U1>", "template": "`<!here>`"},
            "html_url": None,
            "fixes": [],
            "not_helpful": [],
            "questions": [],
        }
    )
    assert "<!" not in json.dumps(blocks) and "<@" not in json.dumps(blocks)


def test_it_refuses_a_bad_signature(slack: str) -> None:
    response = signed_post(COMMANDS, {"text": "x", "response_url": f"{slack}/h"}, secret="wrong")
    assert_error(response, 401, "bad_signature")
    assert FakeSlack.received == []


def test_it_refuses_a_stale_request(slack: str) -> None:
    response = signed_post(COMMANDS, {"text": "x", "response_url": f"{slack}/h"}, age_s=6 * 60)
    assert "too old" in assert_error(response, 401, "bad_signature")["message"]


def test_it_refuses_an_unsigned_request(slack: str) -> None:
    assert_error(Client().post(COMMANDS, {"text": "x"}), 401)


def test_a_signature_header_outside_ascii_is_a_401(slack: str) -> None:
    response = Client().post(
        COMMANDS,
        "text=x",
        content_type="application/x-www-form-urlencoded",
        HTTP_X_SLACK_REQUEST_TIMESTAMP=str(int(time.time())),
        HTTP_X_SLACK_SIGNATURE="v0=é" * 8,
    )
    assert_error(response, 401, "bad_signature")


def test_it_never_posts_to_a_url_the_request_names(slack: str) -> None:
    response = signed_post(COMMANDS, {"text": "x", "response_url": "http://169.254.169.254/x"})
    assert "response_url" in assert_error(response, 400)["fields"]
    assert FakeSlack.received == []


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


def test_a_garbled_button_payload_is_a_400(slack: str) -> None:
    assert_error(signed_post(ACTIONS, {"payload": "{not json"}), 400, "invalid")
    no_action = json.dumps({"type": "block_actions", "actions": []})
    assert_error(signed_post(ACTIONS, {"payload": no_action}), 400, "invalid")


def test_a_json_body_is_a_415(slack: str) -> None:
    body = json.dumps({"text": "x"})
    timestamp = str(int(time.time()))
    digest = hmac.new(SECRET.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256)
    response = Client().post(
        COMMANDS,
        body,
        content_type="application/json",
        HTTP_X_SLACK_REQUEST_TIMESTAMP=timestamp,
        HTTP_X_SLACK_SIGNATURE=f"v0={digest.hexdigest()}",
    )
    assert_error(response, 415)


def test_slack_is_off_without_a_signing_secret(settings) -> None:
    settings.SLACK_SIGNING_SECRET = None
    assert "not configured" in assert_error(signed_post(COMMANDS, {"text": "x"}), 401)["message"]


def test_with_no_known_match_it_says_a_teammates_draft_waits(slack: str, user) -> None:
    unknown = "ValueError: rope scaling factor 0 is not supported by the yarn kernel"
    first = stored_diagnoses.diagnose_and_store(unknown, user=user)
    draft = start_finding_from_paste(unknown, user=user, started_from=first)

    signed_post(COMMANDS, {"text": unknown, "response_url": f"{slack}/d", "user_id": "U5"})

    [answer] = FakeSlack.posts_to("/d")
    blocks = json.dumps(answer["blocks"])
    assert f"A draft of this error waits in the review queue: #{draft.pk} " in blocks


def test_a_command_rebuilt_from_the_log_says_so_above_it(reader, starter_kb: None) -> None:
    log = SERVER_ARGS.decode() + DECODE_CRASH
    response = reader.post(
        "/api/v1/diagnose/?format=slack", {"traceback": log, "gpu": "RTX PRO 6000"}, format="json"
    )
    assert response.status_code == 200, response.content[:300]
    texts = [b["text"]["text"] for b in response.json()["blocks"] if b.get("type") == "section"]
    [note] = [
        i for i, text in enumerate(texts) if text.startswith("_Rebuilt from the `ServerArgs`")
    ]
    assert texts[note + 1].startswith("```python3 -m sglang.launch_server --model-path zai-org/")


GLM5_LAUNCH = "python3 -m sglang.launch_server --model-path GLM-5-NVFP4 --tp-size 8"


def test_a_launch_is_checked_from_slack_with_its_gpu_and_release_written_before_it(
    slack_bot: str, starter_kb: None, settings
) -> None:
    """`/fixgraph check <setup> <launch>`: the summary in the channel, the issues with the
    fix applied to the launch in its thread, and a link that opens the same check."""
    text = f"check 8x RTX PRO 6000, sglang 0.5.9:\n```{GLM5_LAUNCH}```"
    response = signed_post(
        COMMANDS, {"text": text, "response_url": f"{slack_bot}/hook/9", "channel_id": "C42"}
    )

    assert response.json()["text"] == "Checking the launch for known issues…"
    head, thread = FakeSlack.posts_to("/api/chat.postMessage")
    headline = head["blocks"][0]["text"]["text"]
    assert headline.startswith("*Launch check: May meet")
    assert "NVIDIA RTX PRO 6000 Blackwell Server Edition (sm_120) · sglang 0.5.9" in headline
    assert "_Builds for sm_120:_ made with CUDA 12.8 or newer (PyTorch's cu128" in headline
    details = json.dumps(thread["blocks"])
    assert "Omitting --kv-cache-dtype still gives an FP8 KV cache" in details
    assert f"```{GLM5_LAUNCH} --kv-cache-dtype bf16```" in details
    assert "Known to work on this setup" in details

    url = head["blocks"][0]["accessory"]["url"]
    assert "gpu=8x+NVIDIA+RTX+PRO+6000" in url and "release=sglang+0.5.9" in url
    page = Client().get(url.removeprefix(settings.SITE_URL))
    assert page.status_code == 200
    assert "Omitting --kv-cache-dtype still gives an FP8 KV cache" in page.content.decode()


def checked_from_slack(slack_bot: str, text: str, channel: str) -> tuple[str, dict]:
    """`/fixgraph <text>` in a channel: the headline it posts, and its thread's message."""
    signed_post(
        COMMANDS, {"text": text, "response_url": f"{slack_bot}/hook/9", "channel_id": channel}
    )
    head, thread = FakeSlack.posts_to("/api/chat.postMessage")
    return head["blocks"][0]["text"]["text"], thread


def test_a_slack_check_says_when_the_weights_do_not_fit_and_gives_the_split(
    slack_bot: str, starter_kb: None
) -> None:
    launch = "vllm serve meta-llama/Llama-3.1-70B-Instruct"

    headline, thread = checked_from_slack(slack_bot, f"check 8x H100, vllm 0.11.0: {launch}", "C7")

    assert headline.startswith("*Launch check: The model's weights alone do not fit each GPU")
    assert (
        "\nThe weights of meta-llama/Llama-3.1-70B-Instruct are 70B parameters in 16-bit"
        in headline
    )
    details = json.dumps(thread["blocks"])
    assert f"```{launch} --tensor-parallel-size 2```" in details


def test_a_slack_check_names_a_backend_the_gpu_cannot_run_and_what_runs_there(
    slack_bot: str, starter_kb: None
) -> None:
    launch = "vllm serve deepseek-ai/DeepSeek-V3 --attention-backend FLASHMLA"

    headline, _ = checked_from_slack(slack_bot, f"check RTX 5090, vllm 0.34.0: {launch}", "C8")

    assert headline.startswith("*Launch check: --attention-backend FLASHMLA does not run on sm_120")
    assert "• _GPU:_ `--attention-backend FLASHMLA` chooses a backend that vllm 0.34.0" in headline
    assert "runs `TRITON_MLA` on sm_120" in headline
    assert "whose check may differ" not in headline  # the release the table was read from


def test_check_without_a_launch_says_how_and_an_error_starting_check_is_a_paste(
    slack: str,
) -> None:
    hook = f"{slack}/hook/10"
    usage = signed_post(COMMANDS, {"text": "check H100", "response_url": hook}).json()
    assert usage["text"].startswith("After `check`, give the launch command")

    glog = "F1205 10:00:00.000 12 check.cc:42] Check failed: x == y (3 vs. 4)"
    pasted = signed_post(COMMANDS, {"text": f"Check failed: {glog}", "response_url": hook})
    assert pasted.json()["text"] == "Looking for known fixes…"
    assert StoredDiagnosis.objects.get().text.startswith("Check failed")


def test_slacks_escaping_of_the_paste_is_undone_before_diagnosing(slack: str) -> None:
    """Slack sends `<`, `>` and `&` as entities; the paste is kept as the user wrote it."""
    paste = (
        "Traceback (most recent call last):\n"
        '  File "serve.py", line 3, in <module>\n'
        "RuntimeError: NCCL error: init.cc:128 -> 3 && retry failed"
    )
    signed_post(COMMANDS, {"text": escape(paste), "response_url": f"{slack}/hook/11"})

    assert StoredDiagnosis.objects.get().text == paste
