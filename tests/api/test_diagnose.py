"""POST /api/v1/diagnose/ answers with the diagnosis object, or Slack blocks; bad input is a 4xx."""

from __future__ import annotations

import json
import re
import time
from html import unescape
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils.html import escape
from rest_framework.test import APIClient

from api.slack import HELPED, NOT_HELPED, VALIDATE
from kb.models import Finding
from kb.services import stored_diagnoses
from kb.services.diagnosis import start_finding_from_paste
from tests.api.conftest import DSA_ASSERT, assert_error
from tests.decisiontree.test_oom_kind import CAPTURE_ILLEGAL_ACCESS, LOADING_OOM

pytestmark = pytest.mark.django_db

DIAGNOSE = "/api/v1/diagnose/"


def diagnose(client: APIClient, body: object, **extra: str):
    return client.post(DIAGNOSE, body, format="json", **extra)


LAUNCH = "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --kv-cache-dtype fp8_e4m3"


def test_it_answers_what_the_cli_prints(
    reader: APIClient, dsa_finding: Finding, tmp_path: Path
) -> None:
    """`manage.py diagnose --json` prints the object the API returns; the API's is also
    stored, so it has an `id` and a page."""
    response = diagnose(
        reader, {"traceback": DSA_ASSERT, "gpu": "RTX PRO 6000", "launch_command": LAUNCH}
    )
    assert response.status_code == 200, response.content[:500]
    paste = tmp_path / "paste.txt"
    paste.write_text(DSA_ASSERT)
    out = StringIO()
    call_command(
        "diagnose",
        str(paste),
        "--json",
        "--gpu",
        "RTX PRO 6000",
        "--launch-cmd",
        LAUNCH,
        stdout=out,
    )
    body, printed = response.json(), json.loads(out.getvalue())
    assert (printed["id"], printed["html_url"]) == (None, None)
    assert body["html_url"] == f"http://127.0.0.1:8000/diagnose/{body['id']}/"
    assert {**body, "id": None, "html_url": None} == printed
    assert body["fixes"][0]["fix"]["summary"] == "Use a bf16 KV cache"


def test_the_page_behind_html_url_shows_the_same_answer(
    reader: APIClient, dsa_finding: Finding
) -> None:
    """The same diagnosis through the API and on the web: fixes, corrected command, link."""
    body = diagnose(
        reader, {"traceback": DSA_ASSERT, "gpu": "RTX PRO 6000", "launch_command": LAUNCH}
    ).json()
    path = body["html_url"].removeprefix("http://127.0.0.1:8000")
    page = Client().get(path)
    assert page.status_code == 200
    shown = page.context["diagnosis"]
    assert [f["fix_id"] for f in shown["fixes"]] == [f["fix_id"] for f in body["fixes"]]
    assert shown["corrected_command"] == body["corrected_command"]
    assert shown["html_url"] == body["html_url"]
    html = page.content.decode()
    first = body["fixes"][0]
    pre = re.search(rf'<pre id="cmd-{first["fix_id"]}">(.*?)</pre>', html, re.S)
    assert pre is not None
    assert unescape(re.sub(r"<[^>]+>", "", pre.group(1))) == first["corrected_command"]
    assert all(escape(f["fix"]["summary"]) in html for f in body["fixes"])


def test_a_diagnosis_asked_on_the_web_page_has_the_apis_shape(
    reader: APIClient, dsa_finding: Finding
) -> None:
    web = Client().post(
        "/diagnose/",
        {"text": DSA_ASSERT, "gpu": "RTX PRO 6000", "launch_command": LAUNCH},
        follow=True,
    )
    shown = web.context["diagnosis"]
    body = diagnose(
        reader, {"traceback": DSA_ASSERT, "gpu": "RTX PRO 6000", "launch_command": LAUNCH}
    ).json()
    assert web.request["PATH_INFO"] == f"/diagnose/{shown['id']}/"
    assert {**shown, "id": None, "html_url": None} == {**body, "id": None, "html_url": None}


def test_a_bot_can_post_the_answer_as_is(reader: APIClient, dsa_finding: Finding) -> None:
    body = diagnose(
        reader, {"traceback": DSA_ASSERT, "gpu": "RTX PRO 6000", "launch_command": LAUNCH}
    ).json()
    first = body["fixes"][0]
    assert first["fix_id"] == first["fix"]["id"] == dsa_finding.fixes.get(outcome="resolves").pk
    assert body["corrected_command"] == first["corrected_command"]
    assert body["corrected_command"].endswith("--kv-cache-dtype bf16")
    assert "fp8_e4m3" not in body["corrected_command"]
    assert body["summary"] == (
        f"Known issue: {dsa_finding.title}. Try first: --kv-cache-dtype bf16."
    )
    assert first["finding"]["html_url"] == f"http://127.0.0.1:8000/findings/{dsa_finding.pk}/"
    [not_helpful] = body["not_helpful"]
    assert not_helpful["fix_id"] == dsa_finding.fixes.get(outcome="no_effect").pk


def test_without_a_launch_command_there_is_no_corrected_command(
    reader: APIClient, dsa_finding: Finding
) -> None:
    body = diagnose(reader, {"traceback": DSA_ASSERT, "gpu": "RTX PRO 6000"}).json()
    assert body["fixes"] and body["corrected_command"] is None
    assert all(entry["corrected_command"] is None for entry in body["fixes"])


def test_it_answers_with_slack_blocks_on_request(reader: APIClient, dsa_finding: Finding) -> None:
    by_query = reader.post(f"{DIAGNOSE}?format=slack", {"traceback": DSA_ASSERT}, format="json")
    by_accept = diagnose(
        reader, {"traceback": DSA_ASSERT}, HTTP_ACCEPT="application/vnd.slack.blocks+json"
    )
    for response in (by_query, by_accept):
        assert response.status_code == 200, response.content[:300]
        blocks = response.json()["blocks"]
        buttons = [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
        assert buttons[:3] == [HELPED, NOT_HELPED, VALIDATE]
        assert "bf16" in json.dumps(blocks)


def test_it_says_so_when_nothing_matches(reader: APIClient, dsa_finding: Finding) -> None:
    body = diagnose(reader, {"traceback": "OSError: [Errno 98] Address already in use"}).json()
    assert body["match"] == "none" and body["fixes"] == []
    assert body["summary"] == "No known match for OSError in FixGraph."
    assert body["corrected_command"] is None


def test_with_no_known_match_the_summary_says_where_to_look(
    reader: APIClient, starter_kb: None
) -> None:
    """A bot posts the summary alone: it names the nearest finding, else words to search,
    and the error by the type the user pasted, not torch's newer name for it."""
    near = (
        "RuntimeError: CUDA error: an illegal memory access was encountered during flashmla decode"
    )
    body = diagnose(reader, {"traceback": near}).json()
    assert body["match"] == "none" and body["nearest"]
    assert body["summary"] == (
        "No known match for RuntimeError in FixGraph; nearest, not taken: "
        f"{body['nearest'][0]['title']}."
    )
    assert body["signature"]["exception_type"] == "AcceleratorError"
    assert body["type_as_pasted"] == "RuntimeError"


def test_a_paste_that_only_says_a_worker_died_is_answered_with_what_to_paste(
    reader: APIClient, starter_kb: None
) -> None:
    """A bot posts the summary alone: it asks for the log the cause is in."""
    wrapper = "RuntimeError: Worker proc VllmWorker-1 died unexpectedly, shutting down executor."
    body = diagnose(reader, {"traceback": wrapper}).json()
    assert body["cause_not_pasted"] == wrapper
    assert body["summary"].endswith(
        "the error that stopped it was printed earlier in the same log, or in the server's "
        "own log. Paste the log from the first Traceback or ERROR line before it."
    )


def test_a_client_that_got_only_a_server_error_status_is_sent_to_the_servers_log(
    reader: APIClient, starter_kb: None
) -> None:
    """A bot posts what its client raised: HTTP 500 and the API's envelope, nothing more."""
    got = (
        "openai.InternalServerError: Error code: 500 - {'object': 'error', 'message': "
        "'Internal Server Error', 'type': 'Internal Server Error', 'param': None, 'code': 500}"
    )
    body = diagnose(reader, {"traceback": got}).json()
    assert body["cause_not_pasted"] == got
    assert body["fixes"] == []
    assert "or the server a client called" in body["summary"]


def test_a_process_the_kernel_killed_is_told_to_look_at_the_hosts_memory(
    reader: APIClient, starter_kb: None
) -> None:
    killed = "ERROR 02-10 09:14:03 [executor.py:1] Worker proc VllmWorker-1 died unexpectedly, exit code -9"
    body = diagnose(reader, {"traceback": killed}).json()

    assert body["killed_by"] == "SIGKILL"
    assert body["cause_elsewhere"]["heading"].startswith("The process was killed (SIGKILL)")
    assert "out-of-memory killer" in body["summary"] and "dmesg" in body["summary"]


def test_with_no_known_match_the_summary_names_the_settings_the_error_names(
    reader: APIClient, starter_kb: None
) -> None:
    paste = (
        "ValueError: max_loras (8) is larger than max_cpu_loras (4). "
        "Please increase max_cpu_loras or decrease max_loras.\n"
    )
    launch = "vllm serve Qwen/Qwen3-8B --max-loras 8"
    body = diagnose(reader, {"traceback": paste, "launch_command": launch}).json()

    assert body["match"] == "none"
    assert [(n["flag"], n["written"], n["value"]) for n in body["named_flags"]] == [
        ("--max-loras", "max_loras", "8"),
        ("--max-cpu-loras", "max_cpu_loras", None),
    ]
    assert all(n["launch_known"] for n in body["named_flags"])  # so unset, not unknown
    assert body["summary"] == (
        "No known match for ValueError in FixGraph; the error names "
        "--max-loras (yours: 8), --max-cpu-loras (not set)."
    )


def test_a_named_settings_default_is_the_users_release_and_says_when_that_is_not_known(
    reader: APIClient, starter_kb: None
) -> None:
    paste = "ValueError: Try increasing `gpu_memory_utilization` when initializing the engine.\n"
    launch = "vllm serve Qwen/Qwen3-8B"

    def named(log: str) -> dict[str, object]:
        body = diagnose(reader, {"traceback": log + paste, "launch_command": launch}).json()
        [flag] = body["named_flags"]
        return {key: flag[key] for key in ("flag", "value", "default", "default_changed")}

    assert named("") == {
        "flag": "--gpu-memory-utilization",
        "value": None,
        "default": "0.92",
        "default_changed": "0.92 in 0.33.0, 0.9 before",
    }
    older = named("INFO 12-03 10:22:14 [api_server.py:1034] vLLM API server version 0.9.1\n")
    assert (older["default"], older["default_changed"]) == ("0.9", None)


def test_a_fix_that_names_a_flag_but_no_value_is_said_in_its_words_and_edits_nothing(
    reader: APIClient, starter_kb: None
) -> None:
    """The starter knowledge of common errors says "set --max-model-len to at most the
    estimate": vLLM 0.8's message prints none, so there is no value to write, no corrected
    command and no bare flag to try."""
    paste = (
        "ValueError: To serve at least one request with the models's max seq len (131072), "
        "(16.00 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(6.52 GiB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
        "when initializing the engine.\n"
    )
    launch = "vllm serve Qwen/Qwen3-8B --max-model-len 131072"
    body = diagnose(reader, {"traceback": paste, "launch_command": launch}).json()

    first = body["fixes"][0]
    assert first["fix"]["outcome"] == "proposed"
    assert first["fix"]["command_changes"] == []  # a bot would append a bare flag
    assert body["summary"].endswith(
        "Try first: set --max-model-len to at most the estimate printed in the error "
        "(proposed, not confirmed — validate it)."
    )
    assert body["corrected_command"] is None and first["corrected_command"] is None


def test_a_generic_error_alone_is_similar_and_says_what_setup_is_not_known(
    reader: APIClient, starter_kb: None
) -> None:
    paste = "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0\n"
    body = diagnose(reader, {"traceback": paste}).json()

    assert body["match"] == "similar"
    assert [item["named"] for item in body["setup_not_known"]] == [
        "GPU sm_120",
        "model glm_moe_dsa",
        "framework sglang",
    ]
    assert body["summary"].startswith(
        "Similar to a known issue (its setup, not known here: GPU sm_120, model glm_moe_dsa, "
        "framework sglang): First decode request kills the server"
    )


def test_a_capture_that_hit_another_error_is_similar_to_the_starter_oom_entry(
    reader: APIClient, starter_kb: None
) -> None:
    body = diagnose(reader, {"traceback": CAPTURE_ILLEGAL_ACCESS}).json()

    assert body["match"] == "similar"
    assert body["no_memory_ran_out"] is True
    assert body["summary"].startswith(
        "Similar to a known issue (the known issue ran out of memory; this paste shows "
        "another error): SGLang fails while capturing CUDA graphs"
    )


def test_the_out_of_memory_line_of_weights_too_large_is_not_known_as_a_capture_failure(
    reader: APIClient, starter_kb: None
) -> None:
    launch = "python -m sglang.launch_server --model-path meta-llama/Llama-3.3-70B-Instruct"
    body = diagnose(
        reader, {"traceback": LOADING_OOM, "launch_command": launch, "gpu": "H100"}
    ).json()

    assert body["match"] == "similar"
    assert body["ordinary_message_elsewhere"] is True
    assert body["summary"].startswith(
        "Similar to a known issue (the same ordinary message, raised from other code): "
    )
    # What the figures say stays: the weights alone do not fit one H100.
    assert any("the weights alone do not fit" in r["text"] for r in body["memory_readings"])


# A device-side assert that no finding holds, after the warning in which SGLang said which
# sparse-attention kernels the FP8 KV cache chose.
WARNED_ASSERT = """\
[2026-03-02 09:14:07] WARNING server_args.py:1177: Set NSA backends for fp8_e4m3 KV Cache: \
prefill=flashmla_auto, decode=flashmla_kv.
[2026-03-02 09:20:51 TP5] Scheduler hit an exception: Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2702, \
in run_scheduler_process
    scheduler.event_loop_overlap()
RuntimeError: CUDA error: device-side assert triggered
"""


def test_a_warning_beside_an_unmatched_error_answers_and_says_it_was_the_warning(
    reader: APIClient, starter_kb: None
) -> None:
    body = diagnose(reader, {"traceback": WARNED_ASSERT}).json()

    assert body["match"] == "similar"
    assert len(body["through_warnings"]) == 1
    assert "Set NSA backends for fp8_e4m3 KV Cache" in body["through_warnings"][0]
    assert "FP8 KV cache" in body["fixes"][0]["finding"]["title"]
    assert body["summary"].startswith(
        "Similar to a known issue (through a warning beside the error, not the error): "
    )
    page = Client().get(body["html_url"].removeprefix("http://127.0.0.1:8000")).content.decode()
    told = re.search(r'<p class="muted through-warnings">(.*?)</p>', page, re.S)
    assert told is not None and "Set NSA backends for fp8_e4m3 KV Cache" in told.group(1)


REFUSED = "launch_server.py: error: unrecognized arguments: --kv-cache-dytpe fp8_e4m3\n"
TYPO_LAUNCH = (
    "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --kv-cache-dytpe fp8_e4m3"
)


def test_a_refused_command_line_is_said_first_and_written_right_in_the_corrected_command(
    reader: APIClient, starter_kb: None
) -> None:
    body = diagnose(reader, {"traceback": REFUSED, "launch_command": TYPO_LAUNCH}).json()

    assert body["flag_problems"] == [
        {
            "flag": "--kv-cache-dytpe",
            "problem": "not a flag of sglang",
            "instead": "--kv-cache-dtype",
            "refused": True,
        }
    ]
    assert body["summary"] == (
        "The server refused its command line: --kv-cache-dytpe: not a flag of sglang; "
        "use --kv-cache-dtype. Fix that first."
    )
    for fix in body["fixes"]:
        assert "--kv-cache-dytpe" not in (fix["corrected_command"] or "")
    slack = reader.post(
        DIAGNOSE + "?format=slack",
        {"traceback": REFUSED, "launch_command": TYPO_LAUNCH},
        format="json",
    )
    headline = slack.json()["blocks"][0]["text"]["text"]
    assert "• `--kv-cache-dytpe`: not a flag of sglang; use `--kv-cache-dtype`" in headline


def test_a_bare_error_line_is_named_as_the_user_wrote_it(
    reader: APIClient, dsa_finding: Finding
) -> None:
    """A line of no known kind is no class: the summary says "this error line", not our
    internal name for it."""
    body = diagnose(reader, {"traceback": "boot loader refused the disk image"}).json()
    assert body["match"] == "none"
    assert body["summary"] == "No known match for this error line in FixGraph."
    assert "ErrorLog" not in json.dumps(body["nearest"])


def test_the_error_is_given_as_pasted_for_a_bot_to_quote(
    reader: APIClient, dsa_finding: Finding
) -> None:
    line = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 3 has a "
        "total capacity of 94.97 GiB of which 12.00 MiB is free."
    )
    body = diagnose(reader, {"traceback": f"[rank3]: {line}\n"}).json()

    assert body["error_lines"] == [line]
    slack = reader.post(DIAGNOSE + "?format=slack", {"traceback": line}, format="json")
    assert f"`{line}`" in slack.json()["blocks"][0]["text"]["text"]


def test_it_needs_a_traceback(reader: APIClient) -> None:
    error = assert_error(diagnose(reader, {"gpu": "H100"}), 400, "invalid")
    assert error["message"] == "traceback: This field is required."


@pytest.mark.parametrize("form", ["json", "multipart"])
def test_a_misspelt_field_is_refused_with_the_name_it_meant(
    reader: APIClient, dsa_finding: Finding, form: str
) -> None:
    """`--launch-cmd` on the command line, `launch_cmd` in a bot: refused, not an answer
    that left the launch out."""
    body = {"traceback": DSA_ASSERT, "launch_cmd": LAUNCH}
    error = assert_error(reader.post(DIAGNOSE, body, format=form), 400, "invalid")
    [said] = error["fields"]["launch_cmd"]
    assert "did you mean `launch_command`?" in said
    assert "traceback" in said and "answers" in said


@pytest.mark.parametrize(
    "body",
    [
        {"traceback": ""},
        {"traceback": "   \n  "},
        {"traceback": None},
        {"traceback": {"text": "x"}},
        {"traceback": "x", "answers": ["gpu.arch", "sm_120"]},
        {"traceback": "x", "gpu": {"name": "H100"}},
        {"traceback": "x", "launch_command": ["python", "-m", "sglang"]},
        ["traceback"],
        "just a string",
    ],
)
def test_it_explains_a_malformed_body(reader: APIClient, body: object) -> None:
    assert_error(diagnose(reader, body), 400)


def test_it_refuses_binary_garbage(reader: APIClient) -> None:
    garbage = bytes(range(256)) * 64
    response = reader.post(DIAGNOSE, garbage, content_type="application/json")
    assert_error(response, 400)
    response = reader.post(DIAGNOSE, garbage, content_type="application/octet-stream")
    assert_error(response, 415)
    text = garbage.decode("latin-1").replace("\x00", "")
    assert_error(diagnose(reader, {"traceback": text}), 400)


def test_it_refuses_nul_bytes(reader: APIClient) -> None:
    assert_error(diagnose(reader, {"traceback": "Traceback\x00\x00"}), 400)


def test_it_refuses_a_50_mb_traceback_quickly_and_says_to_send_the_log(
    reader: APIClient,
) -> None:
    started = time.monotonic()
    response = diagnose(reader, {"traceback": "x" * 50_000_000})
    assert_error(response, 413, "payload_too_large")
    assert time.monotonic() - started < 10
    message = response.json()["error"]["message"]
    assert message.startswith("The request body is over ")
    assert "send the whole log as a file instead (multipart/form-data, field `log`" in message


def test_a_traceback_over_the_paste_limit_is_told_to_send_the_log(reader: APIClient) -> None:
    response = diagnose(reader, {"traceback": "x" * 2_500_000})
    assert_error(response, 413, "payload_too_large")
    message = response.json()["error"]["message"]
    assert message.startswith("The traceback is over 2,000,000 bytes; send the whole log")


def test_it_refuses_a_paste_over_the_limit(reader: APIClient, settings) -> None:
    settings.FIXGRAPH_MAX_PASTE_BYTES = 1_000
    error = assert_error(diagnose(reader, {"traceback": "RuntimeError: x\n" * 200}), 413)
    assert "1,000 bytes" in error["message"]


def test_an_answer_to_a_question_never_asked_is_a_400(
    reader: APIClient, dsa_finding: Finding
) -> None:
    response = diagnose(reader, {"traceback": DSA_ASSERT, "answers": {"no.such.key": "x"}})
    error = assert_error(response, 400, "invalid")
    assert "no.such.key" in error["fields"]["answers"][0]


def test_a_fix_with_nothing_for_the_users_setup_says_so_and_comes_last(
    reader: APIClient, starter_kb: None
) -> None:
    """The seeds' NaN assert pasted from a Llama on Hopper: the finding's fix that only picks
    the sparse-attention kernels of DSA models has nothing a Llama can use."""
    request = {
        "traceback": "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
        "gpu": "H100",
        "launch_command": "python -m sglang.launch_server --model-path "
        "meta-llama/Llama-3.1-8B-Instruct --tp 1",
    }
    fixes = diagnose(reader, request).json()["fixes"]

    nothing = [entry for entry in fixes if entry["fits_nothing"]]
    assert nothing and fixes[-len(nothing) :] == nothing  # after every fix that has a change
    for entry in nothing:
        assert entry["fix"]["changes"] == [] and entry["withheld"]
        assert entry["corrected_command"] is None
    assert not fixes[0]["fits_nothing"] and fixes[0]["fix"]["changes"]
    blocks = json.dumps(
        reader.post(f"{DIAGNOSE}?format=slack", request, format="json").json()["blocks"]
    )
    assert blocks.count("nothing in it fits your setup") == len(nothing)


def test_a_vllm_users_corrected_command_takes_values_vllm_accepts(
    reader: APIClient, starter_kb: None
) -> None:
    """The seeds' fix sets SGLang's `--kv-cache-dtype bf16`; vLLM refuses `bf16` as an
    invalid choice, so a vLLM user's command gets the same dtype as vLLM names it."""
    request = {
        "traceback": "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
        "gpu": "H100",
        "launch_command": "vllm serve meta-llama/Llama-3.1-8B-Instruct",
    }
    body = diagnose(reader, request).json()

    assert body["verdict"] == "different_setup"
    first = body["fixes"][0]
    assert first["fix"]["command_changes"] == ["--kv-cache-dtype bfloat16"]
    assert body["corrected_command"] == (
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype bfloat16"
    )


def test_with_no_known_match_it_names_the_draft_a_teammate_started(reader: APIClient, user) -> None:
    unknown = "ValueError: rope scaling factor 0 is not supported by the yarn kernel\n"
    first = stored_diagnoses.diagnose_and_store(unknown, user=user)
    assert diagnose(reader, {"traceback": unknown}).json()["drafts_waiting"] == []

    draft = start_finding_from_paste(unknown, user=user, started_from=first)
    again = diagnose(reader, {"traceback": unknown}).json()

    assert again["match"] == "none"
    assert [(d["id"], d["title"]) for d in again["drafts_waiting"]] == [(draft.pk, draft.title)]


def test_an_out_of_memory_error_comes_with_the_gpus_figures_and_what_they_show(
    reader: APIClient, starter_kb: None
) -> None:
    paste = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 1 has a "
        "total capacity of 79.10 GiB of which 1.25 GiB is free. Including non-PyTorch memory, "
        "this process has 77.84 GiB memory in use. Of the allocated memory 60.02 GiB is "
        "allocated by PyTorch, and 16.92 GiB is reserved by PyTorch but unallocated.\n"
    )
    body = diagnose(reader, {"traceback": paste}).json()

    [oom] = body["memory_at_failure"]
    assert (oom["gpu"], oom["requested"], oom["cached_unused"]) == (
        1,
        4 * 1024**3,
        round(16.92 * 1024**3),
    )
    assert oom["others"] == 0 and oom["processes"] == [] and oom["self_listed"]
    [reading] = body["memory_readings"]
    assert reading["kind"] == "fragmented" and reading["helps"]

    slack = reader.post(f"{DIAGNOSE}?format=slack", {"traceback": paste}, format="json").json()
    assert (
        "_GPU memory:_ PyTorch had 16.92 GiB reserved but unused"
        in slack["blocks"][0]["text"]["text"]
    )


def test_a_fix_without_a_value_takes_the_one_the_errors_figures_give(
    reader: APIClient, starter_kb: None
) -> None:
    """vLLM printed the longest context that fits: the first fix's command holds it."""
    paste = (
        "ValueError: To serve at least one request with the models's max seq len (131072), "
        "(16.00 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(12.00 GiB). Based on the available memory, the estimated maximum model length is "
        "98304. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
        "initializing the engine.\n"
    )
    launch = "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --max-model-len 131072"

    body = diagnose(reader, {"traceback": paste, "gpu": "H100", "launch_command": launch}).json()

    first = body["fixes"][0]
    assert "--max-model-len" in first["fix"]["summary"]
    assert first["corrected_command"] == launch.replace("131072", "98304")
    assert {
        "step": "value",
        "key": None,
        "value": None,
        "state": None,
        "detail": "--max-model-len 98304: the longest context the KV cache had room for",
    } in first["why"]
    # The KV shortfall, and the weights' share beside it (70B over four H100s fits).
    reading, weights = body["memory_readings"]
    assert (reading["kind"], weights["kind"]) == ("kv_cache_short", "weights_fit")
    assert reading["values"][0] == {
        "flag": "max-model-len",
        "value": "98304",
        "bound": "at_most",
        "why": "the longest context the KV cache had room for",
    }


def test_with_no_known_match_the_summary_says_what_the_memory_figures_show(
    reader: APIClient, starter_kb: None
) -> None:
    paste = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 400.00 GiB. GPU 0 has a "
        "total capacity of 139.80 GiB of which 139.29 GiB is free. Including non-PyTorch "
        "memory, this process has 518.00 MiB memory in use. Of the allocated memory 0 bytes is "
        "allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.\n"
    )
    body = diagnose(reader, {"traceback": paste}).json()

    assert body["match"] == "none"
    assert body["summary"] == (
        "No known match for OutOfMemoryError in FixGraph; the one allocation asked for "
        "400.00 GiB, more than all of GPU 0 (139.80 GiB): no memory setting makes it fit on one "
        "GPU; it has to be split across GPUs or made smaller."
    )


def test_with_no_known_match_a_model_too_large_for_its_gpu_is_said_with_its_split(
    reader: APIClient, starter_kb: None
) -> None:
    """The launch names a 70B model on one H100: its weights, not a setting, ran out."""
    paste = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 0 has a "
        "total capacity of 79.19 GiB of which 301.06 MiB is free. Including non-PyTorch "
        "memory, this process has 78.88 GiB memory in use. Of the allocated memory 78.37 GiB is "
        "allocated by PyTorch, and 13.27 MiB is reserved by PyTorch but unallocated.\n"
    )
    launch = "vllm serve meta-llama/Llama-3.3-70B-Instruct --max-model-len 8192"
    asked = {"traceback": paste, "launch_command": launch, "framework_version": "0.11.0"}

    body = diagnose(reader, asked).json()

    assert body["match"] == "none"
    assert body["summary"].startswith(
        "No known match for OutOfMemoryError in FixGraph; the weights of "
        "meta-llama/Llama-3.3-70B-Instruct are 70B parameters in 16-bit: about 130.39 GiB, "
        "all on one GPU (--tensor-parallel-size 1)"
    )
    assert body["summary"].endswith(
        "--tensor-parallel-size 2 puts about 65.19 GiB on each GPU, leaving about 6.08 GiB "
        "(little: 4 puts about 32.60 GiB)."
    )


def test_a_gpu_that_fell_off_the_bus_is_said_first_not_a_server_fix(
    reader: APIClient, starter_kb: None
) -> None:
    paste = (
        "[Tue Dec  1 03:12:44 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=48213, name=python3, "
        "GPU has fallen off the bus.\n"
        "RuntimeError: CUDA error: unspecified launch failure\n"
    )
    body = diagnose(reader, {"traceback": paste}).json()

    [fault] = body["host_faults"]
    assert (fault["seen"], fault["kind"], fault["serious"]) == ("Xid 79", "hardware", True)
    assert body["summary"].startswith(
        "The hardware failed, not the server: Xid 79 on PCI:0000:3b:00: the GPU has fallen off "
        "the bus;"
    )
    slack = reader.post(f"{DIAGNOSE}?format=slack", {"traceback": paste}, format="json").json()
    assert "• *Xid 79*: the GPU has fallen off the bus" in slack["blocks"][0]["text"]["text"]


def test_a_pytorch_build_without_the_gpu_is_said_in_the_answer_summary_and_slack(
    reader: APIClient, starter_kb: None
) -> None:
    from tests.decisiontree.test_build_support import TOO_OLD

    body = diagnose(reader, {"traceback": TOO_OLD}).json()

    [reading] = body["build_support"]
    assert (reading["build"], reading["arch"]) == ("PyTorch", "sm_61")
    assert reading["text"] == f"{reading['says']} {reading['remedy']}"
    # No finding holds the warning: the summary's next step is the install.
    assert body["summary"].startswith(
        "No known match for UserWarning in FixGraph; PyTorch supports compute capability "
        "7.5 to 12.0; the NVIDIA GeForce GTX 1080 Ti is 6.1 (sm_61), outside it."
    )
    slack = reader.post(f"{DIAGNOSE}?format=slack", {"traceback": TOO_OLD}, format="json").json()
    assert (
        "• _Build:_ PyTorch supports compute capability 7.5 to 12.0"
        in (slack["blocks"][0]["text"]["text"])
    )


def test_code_for_other_gpus_is_said_with_the_flag_that_chose_it(
    reader: APIClient, starter_kb: None
) -> None:
    paste = "ValueError: Native prefill with trtllm_mha requires SM100 (Blackwell)\n"
    launch = (
        "python -m sglang.launch_server --model-path Qwen/Qwen3-32B "
        "--attention-backend trtllm_mha --tp 2"
    )
    asked = {"traceback": paste, "gpu": "RTX PRO 6000", "launch_command": launch}

    body = diagnose(reader, asked).json()

    [reading] = body["gpu_requirements"]
    assert (reading["code"], reading["arch"], reading["runs_on"]) == (
        "Native prefill with trtllm_mha",
        "sm_120",
        ["sm_100"],
    )
    assert reading["flags"] == ["--attention-backend trtllm_mha"]
    assert (
        "the NVIDIA RTX PRO 6000 Blackwell Server Edition is sm_120, not one of" in reading["says"]
    )
    assert body["match"] != "none" or "runs only on SM100 (Blackwell)" in body["summary"]
    slack = reader.post(f"{DIAGNOSE}?format=slack", asked, format="json").json()
    assert (
        "• _GPU:_ `Native prefill with trtllm_mha` runs only on SM100"
        in slack["blocks"][0]["text"]["text"]
    )


def test_a_backend_the_error_names_is_set_beside_the_gpu_from_the_releases_check(
    reader: APIClient, starter_kb: None
) -> None:
    """vLLM's refusal of a chosen backend lists no GPUs: the table of its release does."""
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/vllm/v1/attention/selector.py", line 218, in '
        "_cached_get_attn_backend\n"
        "    attention_cls = current_platform.get_attn_backend_cls(\n"
        '  File "/usr/lib/python3/dist-packages/vllm/platforms/cuda.py", line 485, in '
        "get_attn_backend_cls\n"
        "    raise ValueError(\n"
        "ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid for this "
        "configuration. Reason: ['compute capability not supported']\n"
    )

    body = diagnose(reader, {"traceback": paste, "gpu": "RTX 5090"}).json()

    [reading] = body["gpu_requirements"]
    assert reading["says"].startswith("The error names `FLASHMLA`, a backend that vllm 0.34.0")
    assert reading["runs_on"] == ["sm_90", "sm_100", "sm_103"]
    assert "`TRITON_MLA`" in reading["remedy"]
    hopper = diagnose(reader, {"traceback": paste, "gpu": "H100"}).json()
    assert hopper["gpu_requirements"] == []


def test_fixes_of_a_less_likely_match_say_so_in_the_api_and_on_the_page(
    reader: APIClient, starter_kb: None
) -> None:
    from tests.decisiontree.test_match import first_cuda_call_fails

    # PyTorch's old-driver error at a script's first CUDA call: the driver entry is the
    # answer; the entry on a PyTorch without CUDA shares the start-up frames and words.
    paste = first_cuda_call_fails(
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). "
        "Please update your GPU driver by downloading and installing a new version from the "
        "URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: "
        "https://pytorch.org to install a PyTorch version that has been compiled with your "
        "version of the CUDA driver."
    )
    body = diagnose(reader, {"traceback": paste}).json()

    runner_up = {
        f["finding"]["title"].split(":")[0].split(" (")[0]: f["runner_up"] for f in body["fixes"]
    }
    assert runner_up["The NVIDIA driver is older than the CUDA the wheels were built with"] is False
    assert runner_up["PyTorch is a build without CUDA"] is True
    firsts = [f["runner_up"] for f in body["fixes"]]
    assert firsts[0] is False and firsts == sorted(firsts)  # the guesses come after
    page = Client().get(body["html_url"].removeprefix("http://127.0.0.1:8000")).content.decode()
    badges = re.findall(r'<span class="badge runner-up">(.*?)</span>', page)
    assert badges == ["From a less likely match"] * firsts.count(True)
    slack = reader.post(f"{DIAGNOSE}?format=slack", {"traceback": paste}, format="json").json()
    texts = [b["text"]["text"] for b in slack["blocks"] if b["type"] == "section"]
    fixes = [t for t in texts if re.match(r"\*\d+\. ", t)]
    assert [("_(from a less likely match)_" in t) for t in fixes] == firsts[: len(fixes)]
