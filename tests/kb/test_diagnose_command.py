"""`manage.py diagnose` on the starter knowledge base, as an engineer mid-incident uses it."""

from __future__ import annotations

import io
import json
import os
import pty
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from kb.models import Fix
from kb.services import stored_diagnoses
from kb.services.diagnosis import decide_signature, diagnose, start_finding_from_paste
from kb.services.feedback import Voter, vote

pytestmark = pytest.mark.django_db

# The decode crash as one rank printed it on another machine: other paths, line numbers, prefixes.
DECODE_CRASH = """\
[2026-03-02 11:41:07 TP5] Scheduler hit an exception: Traceback (most recent call last):
[2026-03-02 11:41:07 TP5]   File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2711, in run_scheduler_process
[2026-03-02 11:41:07 TP5]     scheduler.event_loop_overlap()
[2026-03-02 11:41:07 TP5]   File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler_output_processor_mixin.py", line 301, in process_batch_result_decode
[2026-03-02 11:41:07 TP5]     next_token_ids = next_token_ids.tolist()
[2026-03-02 11:41:07 TP5] RuntimeError: CUDA error: device-side assert triggered
/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:112: _assert_async_cuda_kernel: block: [0,0,0], thread: [0,0,0] Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed.
"""

# SGLang's own message when CUDA-graph capture runs out of memory: its remedies name flags.
CAPTURE_OOM = """\
[2026-02-20 10:02:11 TP3] Scheduler hit an exception: Traceback (most recent call last):
  File "/opt/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 390, in __init__
    raise Exception(
Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.02 GiB.
Possible solutions:
1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)
2. set --cuda-graph-max-bs to a smaller value (e.g., 16)
3. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)
"""
CAPTURE_LAUNCH = (
    "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8 "
    "--mem-fraction-static 0.95 --kv-cache-dtype fp8_e4m3"
)

TRITON_ASSERT = """\
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/attention/triton_backend.py", line 1187, in forward_decode
    forward_batch.token_to_kv_pool.set_kv_buffer(
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/mem_cache/memory_pool.py", line 1544, in set_kv_buffer
    assert not self.nsa_kv_cache_store_fp8
AssertionError
"""

LAUNCH = (
    "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp-size 8 "
    "--quantization modelopt_fp4 --kv-cache-dtype fp8_e4m3 --attention-backend flashinfer"
)


def run(*args: str, stdin: str | None = None) -> str:
    out = StringIO()
    call_command("diagnose", *args, stdout=out)
    return out.getvalue()


def changes_of(fix: dict) -> dict[str, str | None]:
    return {c["name"]: c["value"] for c in fix["fix"]["changes"] if c["action"] == "set_flag"}


def test_it_puts_the_explicit_kv_dtype_override_first_for_the_decode_crash(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "crash.txt"
    paste.write_text(DECODE_CRASH)
    result = json.loads(run(str(paste), "--json", "--gpu", "RTX PRO 6000", "--launch-cmd", LAUNCH))
    assert result["match"] in ("known", "similar")
    first = changes_of(result["fixes"][0])
    assert first.get("kv-cache-dtype") == "bf16"
    assert first.get("dsa-decode-backend") not in (None, "flashmla_kv", "flashmla_auto")
    unhelpful = [changes_of(item) for item in result["not_helpful"]]
    assert any(c.get("attention-backend") == "triton" for c in unhelpful)


def test_it_matches_the_triton_assertion_from_another_install(starter_kb: None) -> None:
    result = diagnose(TRITON_ASSERT)
    assert result.match == "known"
    assert result.signature is not None
    assert "nsa_kv_cache_store_fp8" in result.signature.template
    assert result.fixes


def test_the_human_readable_output_names_the_fix_and_what_not_to_try(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "crash.txt"
    paste.write_text(DECODE_CRASH)
    text = run(str(paste), "--gpu", "RTX PRO 6000", "--launch-cmd", LAUNCH)
    assert "--kv-cache-dtype bf16" in text
    not_to_try = text.partition("Known NOT to help:")[2]
    # Each attempt once: its changes are not repeated in brackets when they say the same.
    assert "  - --attention-backend triton --sampling-backend pytorch: did not help" in not_to_try
    assert not_to_try.count("--disable-cuda-graph") == 1


def test_a_fix_in_words_is_said_once(starter_kb: None, tmp_path: Path) -> None:
    paste = tmp_path / "build.txt"
    paste.write_text(
        "/opt/flashinfer/include/flashinfer/attention/mla.cuh(523): error: static assertion "
        'failed with "sizeof(DType) == 2"\n'
    )
    text = run(str(paste), "--gpu", "RTX PRO 6000")
    assert text.count("revert the kv_data_type patch in flashinfer_mla_backend.py") == 1


def test_a_fix_whose_heading_is_its_flags_lists_them_once(starter_kb: None, tmp_path: Path) -> None:
    paste = tmp_path / "assert.txt"
    paste.write_text(TRITON_ASSERT)
    text = run(str(paste), "--gpu", "RTX PRO 6000")
    block = text.partition("\n1. ")[2].partition("\n\n")[0]
    flags = block.splitlines()[0].split("  [score")[0]
    assert flags.startswith("--") and " --" in flags  # several flags, one heading
    assert block.count(flags.split(" --")[1]) == 1  # a flag of it is not listed again


def test_the_text_names_the_launch_known_to_work_and_what_differs(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "crash.txt"
    paste.write_text(DECODE_CRASH)
    launch = "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8"
    text = run(str(paste), "--gpu", "RTX PRO 6000", "--launch-cmd", launch)
    known = text.partition("Known to work on this setup (GLM-5-NVFP4 on 8x NVIDIA RTX PRO")[2]
    assert "  python3 -m sglang.launch_server --model-path GLM-5-NVFP4" in known
    # Spelled for the release of the user's command (unknown: the newest), as every fix is.
    assert "    --dsa-decode-backend: (not set) -> trtllm" in known


def test_it_says_no_known_match_for_an_unrelated_error(starter_kb: None, tmp_path: Path) -> None:
    paste = tmp_path / "other.txt"
    paste.write_text(
        'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n'
        "    import yaml\nModuleNotFoundError: No module named 'yaml'\n"
    )
    result = json.loads(run(str(paste), "--json"))
    assert result["match"] == "none"
    assert result["fixes"] == []


def test_a_paste_that_only_says_the_engine_failed_asks_for_the_log_before_it(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "wrapper.txt"
    paste.write_text(
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause"
        " above. Failed core proc(s): {}\n"
    )
    printed = run(str(paste))
    assert "Paste the log from the first Traceback or ERROR line before it." in printed
    assert "start a finding from this paste" not in printed  # it would teach nothing
    answer = json.loads(run(str(paste), "--json"))
    assert answer["cause_not_pasted"].startswith("RuntimeError: Engine core initialization")


def test_a_paste_without_an_error_line_says_it_matched_on_words(
    starter_kb: None, tmp_path: Path
) -> None:
    retract = (
        "[2026-03-01 02:11:09 TP0] KV cache pool is full. Retract requests. "
        "#retracted_reqs: 3, #new_tokens_gained: 5120\n"
    )
    paste = tmp_path / "retract.txt"
    paste.write_text(
        "[2026-03-01 02:11:08 TP0] Decode batch. #running-req: 212, #token: 88064, "
        "token usage: 0.99, #queue-req: 40\n" + retract
    )
    first = run(str(paste), "--framework", "sglang").splitlines()[0]
    assert first == "Known issue: the paste has no error line; matched on its words"
    # The one line copied alone is what was asked about: quoted, as a bare line is.
    paste.write_text(retract)
    first = run(str(paste), "--framework", "sglang").splitlines()[0]
    assert first == "Known issue: " + retract[26:].strip()


def test_a_bare_error_line_is_quoted_as_written(starter_kb: None, tmp_path: Path) -> None:
    paste = tmp_path / "line.txt"
    paste.write_text("the upstream refused the connection\n")
    printed = run(str(paste))
    assert printed.splitlines()[0] == "No known match for the upstream refused the connection"


def test_a_refused_command_line_heads_the_text_with_what_to_write(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "argparse.txt"
    paste.write_text("launch_server.py: error: unrecognized arguments: --nsa-prefill-backend x\n")
    text = run(str(paste), "--framework", "sglang", "--framework-version", "0.5.23")
    lines = text.splitlines()
    assert lines[0].startswith("The server refused its command line: launch_server.py: error:")
    assert lines[2:4] == [
        "Fix these first:",
        "  --nsa-prefill-backend: sglang took this name until 0.5.9; later releases renamed it; "
        "use --dsa-prefill-backend",
    ]


def test_the_settings_the_error_names_are_listed_with_the_launch_values(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "capture.txt"
    paste.write_text(CAPTURE_OOM)
    lines = run(str(paste), "--launch-cmd", CAPTURE_LAUNCH, "--framework-version", "0.5.9")
    block = lines.split("The error names these settings of your launch:\n", 1)[1]
    assert block.split("\n\n", 1)[0].splitlines() == [
        "  --mem-fraction-static (yours: 0.95)",
        "  --cuda-graph-max-bs (not set)",
        "  --disable-cuda-graph (not set; default false)",
    ]


def test_a_named_setting_says_its_older_name_when_the_release_is_unknown(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "capture.txt"
    paste.write_text(CAPTURE_OOM)
    lines = run(str(paste), "--framework", "sglang")
    block = lines.split("The error names these settings of your launch:\n", 1)[1]
    assert (
        # No launch given: the flag may be set, so its value is not known.
        "  --cuda-graph-max-bs-decode (value not known; --cuda-graph-max-bs in sglang 0.5.9 "
        "and older)" in block.split("\n\n", 1)[0].splitlines()
    )


def test_the_incidents_confirmed_fix_for_another_model_does_not_lead_the_general_advice(
    starter_kb: None, tmp_path: Path
) -> None:
    """The GLM-5 incident confirmed --mem-fraction-static 0.88 for its own model at 0.95;
    a Llama launch at 0.9 gets SGLang's general advice first, and the incident's fix after
    it, its contradicted conditions shown."""
    paste = tmp_path / "oom.txt"
    paste.write_text(CAPTURE_OOM)
    llama = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --tp 4"

    result = json.loads(
        run(str(paste), "--json", "--launch-cmd", llama + " --mem-fraction-static 0.9")
    )

    assert result["verdict"] == "known"
    first = result["fixes"][0]
    assert first["proposed"] and "glm" not in first["finding"]["title"].lower()
    incident = next(f for f in result["fixes"] if changes_of(f) == {"mem-fraction-static": "0.88"})
    assert not incident["proposed"] and incident["rank"] > 1
    assert "model architecture is glm_moe_dsa (yours: llama)" in incident["for_other_setup"]
    assert result["different_setup"] == []
    lines = run(str(paste), "--launch-cmd", llama + " --mem-fraction-static 0.9")
    assert "for another setup: its finding applies when " in lines
    # With the incident's own launch, its confirmed fix leads, as before.
    own = json.loads(run(str(paste), "--json", "--launch-cmd", CAPTURE_LAUNCH))
    assert changes_of(own["fixes"][0]) == {"mem-fraction-static": "0.88"}


def test_with_the_model_unknown_it_asks_which_and_another_model_gets_the_general_advice(
    starter_kb: None, tmp_path: Path
) -> None:
    """The incident's fix needs GLM-5's architecture; whether it leads depends on the
    model, so the answer asks, and answering re-ranks."""
    paste = tmp_path / "oom.txt"
    paste.write_text(CAPTURE_OOM)

    unknown = json.loads(run(str(paste), "--json", "--framework", "sglang"))
    asked = {q["key"]: q for q in unknown["questions"]}
    assert "model.arch" in asked and "glm_moe_dsa" in asked["model.arch"]["answers"]
    assert changes_of(unknown["fixes"][0]) == {"mem-fraction-static": "0.88"}

    other = json.loads(
        run(str(paste), "--json", "--framework", "sglang", "--answer", "model.arch=other")
    )
    assert other["fixes"][0]["proposed"] and other["fixes"][0]["for_other_setup"] == []
    incident = next(f for f in other["fixes"] if changes_of(f) == {"mem-fraction-static": "0.88"})
    assert incident["for_other_setup"]


def test_a_fix_by_a_step_corrects_the_launchs_own_value(starter_kb: None, tmp_path: Path) -> None:
    paste = tmp_path / "kv.txt"
    paste.write_text(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    )
    launch = "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --mem-fraction-static 0.7"

    result = json.loads(run(str(paste), "--json", "--launch-cmd", launch))

    first = result["fixes"][0]
    assert first["fix"]["summary"].startswith("raise --mem-fraction-static in steps of 0.05")
    assert first["corrected_command"] == launch.replace("0.7", "0.75")


def test_a_fix_in_words_that_names_its_flag_does_not_list_the_flag_again(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "kv.txt"
    paste.write_text(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    )
    lines = run(str(paste), "--framework", "sglang").splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("1. "))
    assert lines[first].startswith("1. raise --mem-fraction-static in steps of 0.05")
    assert lines[first + 1].strip().startswith("finding ")  # no bare "--mem-fraction-static"


def test_the_error_is_quoted_with_its_own_numbers_not_masks(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "kv.txt"
    paste.write_text(
        "ERROR 11-30 08:14:02 [core.py:708] ValueError: To serve at least one request with the "
        "model's max seq len (131072), 12.00 GiB KV cache is needed. Try decreasing "
        "`max_model_len`.\n"
    )
    headline = run(str(paste)).splitlines()[0]
    assert ": ValueError: To serve at least one request" in headline
    assert "(131072), 12.00 GiB" in headline and "<num>" not in headline


def test_with_no_known_match_it_names_the_nearest_finding_and_its_fixes_to_try(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "near.txt"
    paste.write_text(
        "RuntimeError: CUDA error: an illegal memory access was encountered during flashmla decode\n"
    )

    text = run(str(paste), "--launch-cmd", "python -m sglang.launch_server --model-path x")

    assert text.startswith("No known match")
    nearest = text.split("Nearest findings, not taken:", 1)[1]
    assert "First decode request kills the server" in nearest
    assert "its fix: --kv-cache-dtype bf16" in nearest
    assert "(--dsa-decode-backend is --nsa-decode-backend in sglang 0.5.9 and older)" in nearest
    assert "remove --kv-cache-dtype" not in nearest  # known not to help: not offered
    assert "say so on the web page" in nearest


def test_it_refuses_binary_garbage_with_a_clear_message(starter_kb: None, tmp_path: Path) -> None:
    paste = tmp_path / "garbage.bin"
    paste.write_bytes(bytes(range(256)) * 100)
    with pytest.raises(CommandError) as error:
        run(str(paste))
    assert "binary" in str(error.value).lower() or "not text" in str(error.value).lower()


def test_a_50_mb_server_log_is_read_at_its_start_and_end(starter_kb: None, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    request_line = b"[2026-03-02 11:00:00 TP0] Decode batch. #running-req: 3, #token: 1841\n"
    with log.open("wb") as out:
        out.write(request_line * (50_000_000 // len(request_line)))
        out.write(DECODE_CRASH.encode())  # hours of requests, then the crash
    err = StringIO()
    printed = StringIO()

    call_command("diagnose", str(log), "--json", stdout=printed, stderr=err)

    result = json.loads(printed.getvalue())  # the note stays out of the JSON
    assert result["match"] in ("known", "similar") and result["fixes"]
    assert err.getvalue().startswith(f"{log} is 50.0 MB: read its first 250 KB (the launch) ")


def test_a_terminal_user_gets_the_command_inside_the_paste_corrected(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "issue.txt"
    paste.write_text(
        f"Started the server with\n$ {LAUNCH}\nthen on the first request:\n{DECODE_CRASH}"
    )

    printed = run(str(paste), "--gpu", "RTX PRO 6000")

    title, command = printed.split("Corrected launch command ")[1].splitlines()[:2]
    assert title == "(the first fix applied to the command in the paste):"
    assert command.strip().startswith("python -m sglang.launch_server --model-path zai-org/GLM-5")
    assert "--kv-cache-dtype bf16" in command and "--dsa-decode-backend trtllm" in command


def test_feedback_that_a_fix_did_not_help_moves_it_down(starter_kb: None) -> None:
    before = diagnose(DECODE_CRASH, gpu="RTX PRO 6000", launch_command=LAUNCH)
    assert len(before.fixes) >= 2
    first_id = before.fixes[0].fix.id
    for n in range(5):  # five people; each counts once
        vote(Fix.objects.get(pk=first_id), Voter(f"token:{n}"), helped=False, channel="cli")
    after = diagnose(DECODE_CRASH, gpu="RTX PRO 6000", launch_command=LAUNCH)
    ranks = {item.fix.id: item.rank for item in after.fixes}
    assert ranks.get(first_id, 99) > 1


def test_a_reviewer_split_stops_a_fingerprint_matching_that_finding(starter_kb: None) -> None:
    before = diagnose(TRITON_ASSERT)
    finding_id = before.fixes[0].finding.id
    assert before.signature is not None
    from kb.models import Finding

    decide_signature(
        before.signature.fingerprint, Finding.objects.get(pk=finding_id), decision="split"
    )
    after = diagnose(TRITON_ASSERT)
    assert finding_id not in {item.finding.id for item in after.fixes}


# --- the verdict, the questions, the next step ---------------------------------------

GENERIC_NAN = "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0\n"
LLAMA_LAUNCH = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 1"
GLM5_LAUNCH = (
    "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8 "
    "--quantization modelopt_fp4 --attention-backend flashinfer --kv-cache-dtype fp8_e4m3 "
    "--mem-fraction-static 0.88"
)


def command_changes(result: dict) -> list[str]:  # type: ignore[type-arg]
    return [change for fix in result["fixes"] for change in fix["fix"]["command_changes"]]


def test_the_generic_nan_assert_from_an_h100_llama_is_not_known_and_adds_no_dsa_flag(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "nan.txt"
    paste.write_text(GENERIC_NAN)

    result = json.loads(run(str(paste), "--json", "--gpu", "H100", "--launch-cmd", LLAMA_LAUNCH))

    assert result["match"] != "known"
    assert result["verdict"] == "different_setup"
    assert result["fixes"], "the same error's fixes are still shown, demoted"
    assert not [c for c in command_changes(result) if "dsa" in c or "nsa" in c]
    text = run(str(paste), "--gpu", "H100", "--launch-cmd", LLAMA_LAUNCH)
    assert text.startswith("Same error, different setup (GPU sm_90 here, sm_120 in the finding")


def test_the_same_assert_with_the_glm5_launch_on_an_rtx_pro_6000_stays_known(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "nan.txt"
    paste.write_text(GENERIC_NAN)

    result = json.loads(
        run(str(paste), "--json", "--gpu", "RTX PRO 6000 Blackwell", "--launch-cmd", GLM5_LAUNCH)
    )

    assert result["match"] == "known" and result["verdict"] == "known"
    assert "--dsa-decode-backend trtllm" in command_changes(result)


def test_answer_re_ranks_from_the_command_line(db: None, tmp_path: Path) -> None:
    from tests.questions_kb import ADA_FIX, MOE_OUT_OF_RESOURCES_ELSEWHERE, gpu_split_kb

    gpu_split_kb()
    paste = tmp_path / "moe.txt"
    paste.write_text(MOE_OUT_OF_RESOURCES_ELSEWHERE)

    asked = run(str(paste))
    answered = json.loads(run(str(paste), "--json", "--answer", "gpu.arch=sm_89"))

    assert "? Which GPU?" in asked and "--answer gpu.arch=" in asked
    assert answered["fixes"][0]["fix"]["summary"] == ADA_FIX


def test_a_malformed_answer_is_refused_with_the_form_to_use(db: None, tmp_path: Path) -> None:
    paste = tmp_path / "moe.txt"
    paste.write_text("RuntimeError: boom\n")

    with pytest.raises(CommandError, match="write KEY=VALUE"):
        run(str(paste), "--answer", "gpu.arch")
    with pytest.raises(CommandError, match="unknown context key: no.such.key"):
        run(str(paste), "--answer", "no.such.key=1")


def test_it_tells_a_terminal_user_how_to_end_the_paste(
    starter_kb: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real pseudo-terminal on standard input, typed into as a user would.
    leader, follower = pty.openpty()
    os.write(leader, b"RuntimeError: boom\n\x04")
    terminal = io.TextIOWrapper(open(follower, "rb"))  # noqa: SIM115 - closed below
    monkeypatch.setattr(sys, "stdin", terminal)
    err = StringIO()
    try:
        call_command("diagnose", stdout=StringIO(), stderr=err)
    finally:
        terminal.close()
        os.close(leader)

    assert "then press Ctrl-D" in err.getvalue()


def test_it_does_not_prompt_when_the_paste_comes_from_a_pipe(
    starter_kb: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader, writer = os.pipe()
    os.write(writer, DECODE_CRASH.encode())
    os.close(writer)
    piped = io.TextIOWrapper(open(reader, "rb"))  # noqa: SIM115 - closed below
    monkeypatch.setattr(sys, "stdin", piped)
    out, err = StringIO(), StringIO()
    try:
        call_command("diagnose", stdout=out, stderr=err)
    finally:
        piped.close()

    assert err.getvalue() == ""
    assert "--kv-cache-dtype bf16" in out.getvalue()


def test_with_no_known_match_it_names_a_draft_a_teammate_started(
    starter_kb: None, tmp_path: Path
) -> None:
    unknown = "ValueError: rope scaling factor 0 is not supported by the yarn kernel\n"
    paste = tmp_path / "paste.txt"
    paste.write_text(unknown)
    assert "Once you solve it, start a finding from this paste" in run(str(paste))

    author = get_user_model().objects.create_user("oncall")
    first = stored_diagnoses.diagnose_and_store(unknown, user=author)
    draft = start_finding_from_paste(unknown, user=author, started_from=first)

    out = run(str(paste))
    assert f"A draft of this error waits in the review queue: #{draft.pk} {draft.title}" in out
    assert "Once you solve it" not in out


# A server's weights loading onto a GPU another server still holds (torch 2.x's message).
SHARED_GPU_OOM = """\
  File "/opt/sglang/python/sglang/srt/model_executor/model_runner.py", line 420, in load_model
    self.model = get_model(model_config=self.model_config, load_config=self.load_config)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 19.29 GiB is free. Process 4242 has 100.00 GiB memory in use. Including non-PyTorch memory, this process has 20.50 GiB memory in use. Of the allocated memory 20.00 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
"""


def test_an_out_of_memory_error_shows_the_gpus_memory_and_who_held_it(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "oom.txt"
    paste.write_text(SHARED_GPU_OOM)
    text = run(str(paste))

    block = text.split("The GPU's memory, as the error and the log give it:\n", 1)[1].split(
        "\n\n", 1
    )[0]
    lines = block.splitlines()
    assert lines[0] == (
        "  GPU 0: asked for 30.00 GiB; 19.29 GiB free of 139.80 GiB; this process 20.50 GiB; "
        "PyTorch's tensors 20.00 GiB, cached unused 0 bytes; other processes: 4242 (100.00 GiB)"
    )
    assert lines[1].startswith("  - Other processes held 100.00 GiB of GPU 0 (process 4242")
    assert lines[2].startswith("  - Not fragmentation:")


STARTUP_STAGES = """\
[2026-02-18 22:41:09 TP0] Load weight end. type=GlmMoeDsaForCausalLM, dtype=torch.bfloat16, avail mem=24.51 GB, mem usage=70.12 GB.
[2026-02-18 22:41:12 TP0] KV Cache is allocated. #tokens: 611840, KV size: 21.80 GB
[2026-02-18 22:41:14 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=1.92 GB
"""


def test_a_memory_error_shows_where_the_start_up_log_says_the_memory_went(
    starter_kb: None, tmp_path: Path
) -> None:
    paste = tmp_path / "capture.txt"
    paste.write_text(STARTUP_STAGES + CAPTURE_OOM)
    text = run(str(paste), "--launch-cmd", CAPTURE_LAUNCH)

    block = text.split("The GPU's memory, as the error and the log give it:\n", 1)[1]
    assert block.split("\n\n", 1)[0].splitlines() == [
        "  TP0: weights loaded (70.12 GiB, 24.51 GiB free) → KV cache allocated (21.80 GiB) → "
        "capturing CUDA graphs (1.92 GiB free), not finished"
    ]

    crash = tmp_path / "crash.txt"
    short = "INFO gpu_executor.py:126] Maximum concurrency for 131072 tokens per request: 0.75x\n"
    crash.write_text(STARTUP_STAGES + short + DECODE_CRASH)
    assert "The GPU's memory" not in run(str(crash))


def test_a_driver_mismatch_is_named_as_the_hosts_driver(starter_kb: None, tmp_path: Path) -> None:
    paste = tmp_path / "nvml.txt"
    paste.write_text("Failed to initialize NVML: Driver/library version mismatch\n")
    text = run(str(paste))

    block = text.split("The GPU or its driver failed:\n", 1)[1].split("\n\n", 1)[0]
    assert block.startswith("  Driver/library version mismatch: the loaded kernel module")


def test_nvidia_smis_processes_are_named_beside_a_memory_error_only(
    starter_kb: None, tmp_path: Path
) -> None:
    smi = Path(__file__).parents[1] / "decisiontree/fixtures/env/nvidia_smi_rtx_pro_6000_x8.txt"
    paste = tmp_path / "oom.txt"
    paste.write_text(smi.read_text() + CAPTURE_OOM)
    text = run(str(paste))

    assert "  - nvidia-smi, as pasted, lists processes holding GPU memory: GPU 0: " in text
    crash = tmp_path / "crash.txt"
    crash.write_text(smi.read_text() + DECODE_CRASH)
    assert "lists processes holding GPU memory" not in run(str(crash))
