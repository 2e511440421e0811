"""The diagnose page tells the truth about the setup, asks what would change the answer,
and gives "no known match" a next step."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils.html import escape

from kb.models import ErrorSample, Finding, StoredDiagnosis
from tests.decisiontree.test_oom_kind import CAPTURE_ILLEGAL_ACCESS
from tests.kb.test_diagnose_command import CAPTURE_LAUNCH, CAPTURE_OOM, DECODE_CRASH
from tests.questions_kb import (
    ADA_FIX,
    BLACKWELL_FIX,
    MOE_OUT_OF_RESOURCES_ELSEWHERE,
    gpu_capability_split_kb,
    gpu_split_kb,
)

pytestmark = pytest.mark.django_db

GENERIC_NAN = "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0\n"
LLAMA_ON_H100 = {
    "gpu": "H100",
    "launch_command": "python -m sglang.launch_server "
    "--model-path meta-llama/Llama-3.1-8B-Instruct --tp 1",
}
UNRELATED = "ModuleNotFoundError: No module named 'yaml_loader_plugin'\n"


def page_of(client: Client, text: str, **data: str) -> str:
    # The form answers with a redirect to the stored diagnosis' own page.
    response = client.post("/diagnose/", {"text": text, **data}, follow=True)
    assert response.status_code == 200
    return response.content.decode()


def notice_before_the_fixes(page: str, kind: str) -> str:
    """The page's alert box of `kind` (its section's class), which comes before any fix."""
    box = page.split(f'<section class="notice {kind}" role="alert">', 1)[1]
    fixes = page.find('<li class="fix"')
    assert fixes == -1 or page.index(kind) < fixes
    return box.split("</section>", 1)[0]


def verdict_words(page: str) -> str:
    """The verdict header's text, tags out and spaces collapsed."""
    verdict = page.split('<header class="verdict', 1)[1].split("</header>", 1)[0]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", verdict))


def fix_headings(page: str) -> list[str]:
    return re.findall(r'<li class="fix" id="fix-\d+">.*?<h3>(.*?)</h3>', page, re.S)


def test_it_asks_the_one_question_that_splits_the_fixes_and_reranks_on_the_answer(
    client: Client,
) -> None:
    gpu_split_kb()

    page = page_of(client, MOE_OUT_OF_RESOURCES_ELSEWHERE)
    assert page.count('<fieldset class="question">') == 1
    assert "Which GPU?" in page
    assert 'value="gpu.arch=sm_89"' in page and 'value="gpu.arch=sm_120"' in page

    ada = page_of(client, MOE_OUT_OF_RESOURCES_ELSEWHERE, answer="gpu.arch=sm_89")
    blackwell = page_of(client, MOE_OUT_OF_RESOURCES_ELSEWHERE, answer="gpu.arch=sm_120")

    assert fix_headings(ada) == [ADA_FIX, BLACKWELL_FIX]
    assert fix_headings(blackwell) == [BLACKWELL_FIX, ADA_FIX]
    assert "Your answers: <code>gpu.arch = sm_89</code>" in ada
    assert "Which GPU?" not in ada


def test_a_compute_capability_question_is_answered_by_a_range_button(client: Client) -> None:
    gpu_capability_split_kb()

    page = page_of(client, MOE_OUT_OF_RESOURCES_ELSEWHERE)
    assert "Which compute capability has the GPU" in page
    assert 'value="gpu.capability=&lt;12.0"' in page and 'value="gpu.capability=&gt;=12.0"' in page

    older = page_of(client, MOE_OUT_OF_RESOURCES_ELSEWHERE, answer="gpu.capability=<12.0")

    assert fix_headings(older) == [ADA_FIX, BLACKWELL_FIX]
    assert "Your answers: <code>gpu.capability = &lt;12.0</code>" in older


def test_the_generic_nan_assert_on_an_h100_llama_is_not_a_known_issue(
    client: Client, starter_kb: None
) -> None:
    page = page_of(client, GENERIC_NAN, **LLAMA_ON_H100)

    assert "<h2>Known issue</h2>" not in page
    assert "<h2>Same error, different setup</h2>" in page
    assert "GPU sm_90 here, sm_120 in the finding" in page
    commands = re.findall(r'<pre id="cmd-\d+">([^<]+)</pre>', page)
    chips = re.findall(r'<code class="flag-change">([^<]+)</code>', page)
    assert not [c for c in commands + chips if "dsa-" in c or "nsa-" in c]
    assert "Not for your setup" in page


def asked(client: Client, text: str, **data: str) -> StoredDiagnosis:
    """The paste diagnosed through the form; its stored diagnosis."""
    page_of(client, text, **data)
    return StoredDiagnosis.objects.latest("created_at")


def reviewer(client: Client, name: str = "ana") -> User:
    user = User.objects.create_user(name, password="pw")
    user.user_permissions.add(Permission.objects.get(codename="change_finding"))
    client.force_login(user)
    return user


def test_no_known_match_offers_the_nearest_findings_a_search_and_a_draft(
    client: Client, starter_kb: None
) -> None:
    client.force_login(User.objects.create_user("bo", password="pw"))

    page = page_of(client, UNRELATED)

    assert "<h2>No known match</h2>" in page
    assert 'class="fix" id="fix-' not in page
    assert 'action="/diagnose/draft/"' in page
    assert "Start a finding from this paste" in page


def test_the_launch_known_to_work_here_is_shown_with_what_differs(
    client: Client, starter_kb: None
) -> None:
    launch = (
        "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8 "
        "--kv-cache-dtype fp8_e4m3 --nsa-decode-backend flashmla_kv"
    )
    page = page_of(client, DECODE_CRASH, gpu="RTX PRO 6000", launch_command=launch)

    section = page[page.index("<h2>Known to work on this setup</h2>") :].split("</section>")[0]
    assert "GLM-5-NVFP4 on 8x NVIDIA RTX PRO 6000" in section
    assert "Your launch command differs from it" in section
    rows = [re.sub(r"<[^>]+>", " ", row).split() for row in re.findall(r"<tr>(.*?)</tr>", section)]
    assert ["--nsa-decode-backend", "flashmla_kv", "trtllm"] in rows
    assert ["--kv-cache-dtype", "fp8_e4m3", "not", "set"] in rows
    assert 'data-copy="#cmd-known-good"' in section


def test_a_fix_in_words_is_its_own_heading_not_repeated_as_a_change(
    client: Client, starter_kb: None
) -> None:
    page = page_of(
        client,
        "/opt/flashinfer/include/flashinfer/attention/mla.cuh(523): error: static assertion "
        'failed with "sizeof(DType) == 2"\n',
        gpu="RTX PRO 6000",
    )
    first = page[page.index('<li class="fix"') :].split("</li>", 1)[0]
    assert first.count("revert the kv_data_type patch in flashinfer_mla_backend.py") == 1


def test_a_fix_in_words_with_an_apostrophe_is_not_repeated_as_a_change(
    client: Client, starter_kb: None
) -> None:
    """Compared after escaping, "vLLM's" and "vLLM&#x27;s" differed, and the heading came
    back a second time as a change to copy."""
    page = page_of(
        client,
        "ValueError: The quantization method fp8 is not supported for the current GPU. "
        "Minimum capability: 80. Current capability: 75.\n",
    )
    fix = next(
        item
        for item in page.split('<li class="fix"')[1:]
        if "serve the checkpoint with vLLM" in item.split("</h3>", 1)[0]
    )
    assert '<p class="changes">' not in fix.split("</li>", 1)[0]


def test_what_the_message_states_about_the_gpu_and_checkpoint_is_shown_as_read(
    client: Client, starter_kb: None
) -> None:
    page = page_of(
        client,
        "ValueError: The quantization method awq is not supported for the current GPU. "
        "Minimum capability: 75. Current capability: 70.\n",
    )
    panel = page.split("<h2>What FixGraph read from the paste</h2>", 1)[1].split("</dl>", 1)[0]
    rows = dict(
        (re.sub(r"<[^>]+>", "", term), re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", value)).strip())
        for term, value in re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", panel, re.S)
    )
    assert rows["GPU"] == "sm_70"  # no name: the architecture its capability is
    assert rows["Model"] == "unknown quantization: awq"


def test_a_fix_heading_is_set_as_code_only_when_it_is_flags_and_values(
    client: Client, starter_kb: None
) -> None:
    page = page_of(client, CAPTURE_OOM, launch_command=CAPTURE_LAUNCH)

    heads = dict(
        (re.sub(r"<[^>]+>", "", heading), "in-words" in css)
        for css, heading in re.findall(
            r'<div class="fix-head([^"]*)">.*?<h3>(.*?)</h3>', page, re.S
        )
    )
    assert heads["--mem-fraction-static 0.88"] is False
    said = next(h for h in heads if h.startswith("--disable-cuda-graph, only to confirm"))
    assert heads[said] is True  # prose that starts with a flag


def test_a_fix_confirmed_for_another_setup_says_which_beneath_its_heading(
    client: Client, starter_kb: None
) -> None:
    llama = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct"
    page = page_of(client, CAPTURE_OOM, launch_command=llama + " --mem-fraction-static 0.9")

    notes = [
        re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", note))
        for note in re.findall(r'<p class="muted other-setup">(.*?)</p>', page, re.S)
    ]
    assert len(notes) == 1
    assert notes[0].startswith("For another setup: its finding applies when ")
    assert "model architecture is glm_moe_dsa (yours: llama)" in notes[0]


def test_the_release_typed_beside_the_paste_spells_the_answer_and_stays_with_it(
    client: Client, starter_kb: None
) -> None:
    page = page_of(client, CAPTURE_OOM, release="sglang 0.5.9")

    notice = page.split('<section class="notice named-flags">', 1)[1].split("</section>", 1)[0]
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", notice))
    # 0.5.9's name, and no other; with no launch given, its value is not known.
    assert "--cuda-graph-max-bs: value not known without your launch command" in words
    assert "0.5.9 and older" not in words
    assert 'name="release" value="sglang 0.5.9"' in page  # the form, to run it again


def test_a_release_of_another_framework_is_refused_with_what_to_write(client: Client) -> None:
    response = client.post("/diagnose/", {"text": CAPTURE_OOM, "release": "tgi 2.0"})

    assert response.status_code == 400
    assert "e.g. “sglang 0.5.9” or “vllm 0.11.0”" in response.content.decode()
    # A release alone is the paste's framework's; a post-release is part of it.
    alone = client.post("/diagnose/", {"text": CAPTURE_OOM, "release": "v0.4.6.post1"})
    assert alone.status_code == 303


def test_a_refused_command_line_is_shown_above_everything_else(
    client: Client, starter_kb: None
) -> None:
    page = page_of(
        client, "launch_server.py: error: unrecognized arguments: --kv-cache-dytpe fp8_e4m3\n"
    )
    notice = page.split('<section class="notice flag-problems"', 1)[1].split("</section>", 1)[0]
    words = re.sub(r"<[^>]+>", "", notice)
    verdict = page.split('<header class="verdict', 1)[1].split("</header>", 1)[0]
    assert (
        verdict.startswith(' verdict-refused">')
        and "The server refused its command line" in verdict
    )
    assert "Nothing else ran: fix these first" in words
    assert "--kv-cache-dytpe: not a flag of SGLang or vLLM; use --kv-cache-dtype" in words
    after = [page.find(mark) for mark in ('class="next-step"', '<li class="fix"')]
    assert page.index("flag-problems") < min(i for i in after if i >= 0)


def test_a_bare_error_line_is_quoted_as_written(client: Client, starter_kb: None) -> None:
    page = page_of(client, "ssh tunnel dropped: the upstream refused the connection\n")

    assert "<code>ssh tunnel dropped: the upstream refused the connection</code>" in page
    assert "ErrorLog" not in page


def test_an_error_torch_renamed_is_named_as_pasted(client: Client, starter_kb: None) -> None:
    """Newer torch raises AcceleratorError where older raised RuntimeError; this user's
    torch said RuntimeError: the page quotes their line and says which name it went by."""
    page = page_of(client, DECODE_CRASH)

    assert "<code>RuntimeError: CUDA error: device-side assert triggered</code>" in page
    assert '<code>AcceleratorError</code> <span class="muted">(pasted as RuntimeError)' in page


def test_the_settings_the_error_names_are_shown_with_the_launch_values(
    client: Client, starter_kb: None
) -> None:
    page = page_of(client, CAPTURE_OOM, launch_command=CAPTURE_LAUNCH)

    notice = page.split('<section class="notice named-flags">', 1)[1].split("</section>", 1)[0]
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", notice)).strip()
    assert words.startswith("The error names these settings of your launch:")
    assert "--mem-fraction-static: yours is 0.95" in words
    assert "--disable-cuda-graph: not set, so the default false" in words
    assert "Known issue" in page  # beside the match, not instead of it


def test_a_named_setting_whose_default_changed_says_so_when_the_release_is_unknown(
    client: Client, starter_kb: None
) -> None:
    paste = "ValueError: Try increasing `gpu_memory_utilization` when initializing the engine.\n"

    def notice(log: str) -> str:
        page = page_of(client, log + paste, launch_command="vllm serve Qwen/Qwen3-8B")
        box = page.split('<section class="notice named-flags">', 1)[1].split("</section>", 1)[0]
        return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", box)).strip()

    unknown = notice("")
    assert "--gpu-memory-utilization: not set; the default depends on your release: " in unknown
    assert "0.92 in 0.33.0, 0.9 before" in unknown
    older = notice("INFO 12-03 10:22:14 [api_server.py:1034] vLLM API server version 0.9.1\n")
    assert "--gpu-memory-utilization: not set, so the default 0.9" in older
    assert "depends on your release" not in older


def test_a_fix_that_names_a_flag_without_a_value_offers_no_change_to_copy(
    client: Client, starter_kb: None
) -> None:
    paste = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    page = page_of(client, paste, launch_command="python -m sglang.launch_server --tp 2")

    first = page.split('<li class="fix"', 1)[1].split("</li>", 1)[0]
    heading = re.sub(r"<[^>]+>", "", first.split("<h3>", 1)[1].split("</h3>", 1)[0])
    assert heading.replace("\u2011", "-").startswith("raise --mem-fraction-static in steps")
    assert 'class="changes"' not in first and "Copy command" not in first


def test_a_generic_error_alone_names_the_setup_the_known_issue_needs(
    client: Client, starter_kb: None
) -> None:
    page = page_of(client, GENERIC_NAN)

    words = verdict_words(page)
    assert "Similar to a known issue" in words and "Known issue" not in words
    assert "the known issue needs GPU sm_120, model glm_moe_dsa, framework sglang" in words


def test_a_capture_that_hit_another_error_says_the_known_issue_ran_out_of_memory(
    client: Client, starter_kb: None
) -> None:
    page = page_of(client, CAPTURE_ILLEGAL_ACCESS)

    words = verdict_words(page)
    assert "Similar to a known issue" in words and "Known issue" not in words
    assert "The known issue ran out of GPU memory; nothing in this paste did" in words
    assert "an illegal memory access was encountered" in words  # the paste's own error, quoted


def test_signing_in_to_start_a_finding_comes_back_to_the_diagnosis(client: Client) -> None:
    record = asked(client, UNRELATED)
    page = client.get(record.get_absolute_url()).content.decode()

    assert 'action="/diagnose/draft/"' not in page
    login = f'href="/accounts/login/?next={record.get_absolute_url()}">Sign in</a>'
    assert login in page


def test_starting_a_finding_from_a_paste_needs_a_signed_in_user(client: Client) -> None:
    record = asked(client, UNRELATED)

    response = client.post("/diagnose/draft/", {"diagnosis": record.slug})

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert not Finding.objects.exists()


def test_a_signed_in_user_starts_a_draft_with_the_paste_as_its_sample(client: Client) -> None:
    author = reviewer(client)
    record = asked(client, UNRELATED, gpu="H100")

    response = client.post("/diagnose/draft/", {"diagnosis": record.slug})

    draft = Finding.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/review/{draft.pk}/"
    assert draft.status == Finding.Status.DRAFT
    assert ErrorSample.objects.get(finding=draft).text == UNRELATED
    assert draft.title.startswith("ModuleNotFoundError")
    assert {"key": "gpu.arch", "value": "sm_90", "negate": False} in draft.conditions
    assert draft.history.earliest().history_user == author


def test_the_reviewer_sees_what_was_given_beside_the_paste(client: Client) -> None:
    reviewer(client)
    record = asked(client, UNRELATED, **LLAMA_ON_H100)

    client.post("/diagnose/draft/", {"diagnosis": record.slug})
    review_page = client.get(f"/review/{Finding.objects.get().pk}/").content.decode()

    assert (
        f'<a href="{record.get_absolute_url()}">the diagnosis it got</a> · GPU H100' in review_page
    )
    assert escape(LLAMA_ON_H100["launch_command"]) in review_page


def test_a_draft_outlives_the_diagnosis_it_was_started_from(client: Client) -> None:
    reviewer(client)
    record = asked(client, UNRELATED)
    client.post("/diagnose/draft/", {"diagnosis": record.slug})

    client.post(f"{record.get_absolute_url()}delete/")

    draft = Finding.objects.get()
    assert not StoredDiagnosis.objects.filter(pk=record.pk).exists()
    assert draft.started_from is None
    assert ErrorSample.objects.get(finding=draft).text == UNRELATED
    assert client.get(f"/review/{draft.pk}/").status_code == 200


def test_a_draft_of_the_same_error_is_named_on_the_next_paste_of_it(client: Client) -> None:
    """A second teammate meeting the error sees that a draft waits, not a blank page."""
    reviewer(client)
    first = asked(client, UNRELATED)
    client.post("/diagnose/draft/", {"diagnosis": first.slug})
    draft = Finding.objects.get()

    again = client.get(asked(client, UNRELATED).get_absolute_url())
    other = Client()
    other.force_login(User.objects.create_user("bo", password="pw"))
    seen_by_member = other.get(asked(other, UNRELATED).get_absolute_url()).content.decode()

    assert (
        f'<a href="/review/{draft.pk}/">Draft #{draft.pk}</a> of this error'
        in again.content.decode()
    )
    assert "Start another finding from this paste" in again.content.decode()
    assert "A draft of this error, started" in seen_by_member
    assert f"/review/{draft.pk}/" not in seen_by_member


def test_a_draft_from_a_paste_is_titled_and_reviewed_with_the_paste_as_written(
    client: Client,
) -> None:
    """The signature reads `<num>` where the user wrote 64; the draft's title is the error
    as pasted, and the reviewer sees the paste where a document's draft shows its source."""
    reviewer(client)
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/worker/loader.py", line 88, in load\n'
        "    check_block(block)\n"
        "ValueError: Unsupported FP8 block size 64 for the marlin MoE kernel on sm_86\n"
    )

    client.post("/diagnose/draft/", {"diagnosis": asked(client, paste).slug})
    draft = Finding.objects.get()
    review_page = client.get(f"/review/{draft.pk}/").content.decode()

    assert draft.title == (
        "ValueError: Unsupported FP8 block size 64 for the marlin MoE kernel on sm_86"
    )
    assert "This draft has no source document" not in review_page
    queue = client.get("/review/").content.decode()
    assert "written by ana" in queue
    assert escape(paste.splitlines()[1]) in review_page


def test_a_user_who_cannot_review_is_told_the_draft_waits(client: Client) -> None:
    client.force_login(User.objects.create_user("bo", password="pw"))
    record = asked(client, UNRELATED)

    response = client.post("/diagnose/draft/", {"diagnosis": record.slug}, follow=True)

    draft = Finding.objects.get()
    assert response.redirect_chain[-1][0] == record.get_absolute_url()
    assert f"Draft #{draft.pk} waits in the review queue." in response.content.decode()


def test_a_draft_of_a_diagnosis_that_is_gone_is_a_404(client: Client) -> None:
    client.force_login(User.objects.create_user("bo", password="pw"))

    response = client.post("/diagnose/draft/", {"diagnosis": "no-such-link"})

    assert response.status_code == 404
    assert not Finding.objects.exists()


def test_an_out_of_memory_error_shows_the_gpus_memory_and_what_will_not_help(
    client: Client, starter_kb: None
) -> None:
    paste = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.09 GiB. GPU 0 has a "
        "total capacity of 139.80 GiB of which 159.12 MiB is free. Including non-PyTorch "
        "memory, this process has 139.64 GiB memory in use. Of the allocated memory 139.05 GiB "
        "is allocated by PyTorch, and 87.19 MiB is reserved by PyTorch but unallocated.\n"
    )
    page = page_of(client, paste)

    notice = page.split('<section class="notice gpu-memory">', 1)[1].split("</section>", 1)[0]
    assert "<li>GPU 0: asked for 3.09 GiB; 159.12 MiB free of 139.80 GiB;" in notice
    assert '<p class="memory-reading not-helping">Not fragmentation:' in notice


def test_an_ecc_error_is_shown_as_the_gpus_fault_before_any_fix(
    client: Client, starter_kb: None
) -> None:
    page = page_of(client, "RuntimeError: CUDA error: uncorrectable ECC error encountered\n")

    notice = page.split('<section class="notice host-faults serious" role="alert">', 1)[1]
    notice = notice.split("</section>", 1)[0]
    assert "The GPU or its driver failed, not the server" in notice
    assert "<strong>uncorrectable ECC error encountered</strong>: the GPU&#x27;s memory" in notice
    # the command to run is shown as code, not as Markdown's backticks
    assert "<code>nvidia-smi -q -d ECC,ROW_REMAPPER</code> shows the errors" in notice
    fixes = page.find('<li class="fix"')
    assert fixes == -1 or page.index("host-faults") < fixes


def test_a_wheel_made_before_the_gpu_is_shown_as_the_install_to_change(
    client: Client, starter_kb: None
) -> None:
    from tests.decisiontree.test_build_support import CHECK_ENV_CU124

    paste = CHECK_ENV_CU124 + (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    page = page_of(client, paste)

    notice = notice_before_the_fixes(page, "build-support")
    assert "no flag fixes that, the install does" in notice
    assert "PyTorch 2.5.1+cu124 was built with CUDA 12.4" in notice
    assert "<strong>Install a PyTorch build made with CUDA 12.8 or newer" in notice
    assert (
        "<strong>Install CUDA toolkit 12.8 or newer and point <code>CUDA_HOME</code> at it.</strong>"
        in notice
    )
    read = page.split("What FixGraph read from the paste", 1)[1]
    assert "<dt>Versions</dt>" in read and "<code>torch 2.5.1+cu124</code>" in read

    # A whole `pip freeze` is read; the page lists twelve, what check_env names first.
    freeze = "".join(f"package-{n}==1.{n}.0\n" for n in range(20))
    read = page_of(client, freeze + paste).split("What FixGraph read from the paste", 1)[1]
    assert "<code>torch 2.5.1+cu124</code>" in read and "<code>cuda 12.4</code>" in read
    assert "<code>package-5 1.5.0</code>" in read and "package-6 " not in read
    assert "and 14 more</span>" in read  # 20 packages, and 6 versions of check_env


def test_code_for_other_gpus_is_shown_before_the_fixes(client: Client, starter_kb: None) -> None:
    paste = "RuntimeError: fused_rope_gemm requires SM100/SM103, got sm90\n"

    page = page_of(client, paste)

    notice = notice_before_the_fixes(page, "gpu-requirements")
    assert "does not run on this GPU: choose other code" in notice
    assert "<code>fused_rope_gemm</code> runs only on SM100/SM103" in notice
    assert "this GPU is sm_90, not one of them" in notice


def test_a_launch_is_checked_before_it_runs_with_the_fix_applied_to_it(
    client: Client, starter_kb: None
) -> None:
    assert b"Check a launch" in client.get("/check/").content
    launch = "python3 -m sglang.launch_server --model-path GLM-5-NVFP4 --tp-size 8"

    page = client.post("/check/", {"launch_command": launch, "gpu": "RTX PRO 6000"})

    html = page.content.decode()
    assert page.status_code == 200
    assert "Omitting --kv-cache-dtype still gives an FP8 KV cache" in html
    assert "not settled by your launch:" in html
    commands = re.findall(r'<pre id="cmd-\d+">(.*?)</pre>', html, re.S)
    assert f"{launch} --kv-cache-dtype bf16" in [re.sub(r"<[^>]+>", "", c) for c in commands]
    assert "Known to work on this setup" in html
    assert (
        "On sm_120, PyTorch and the framework's kernels must be built with CUDA 12.8 or "
        "newer (PyTorch&#x27;s cu128 wheels or later)"
    ) in html
    assert client.post("/check/", {"gpu": "H100"}).status_code == 400
    # The page's own link runs the same check again.
    share = re.search(r'<a class="check-link" href="([^"]+)"', html)[1].replace("&amp;", "&")
    again = client.get(share.removeprefix(settings.SITE_URL)).content.decode()
    assert "Omitting --kv-cache-dtype still gives an FP8 KV cache" in again
    assert re.search(r'name="gpu" value="NVIDIA RTX PRO 6000 Blackwell Server Edition"', again)


def test_a_launch_with_a_backend_its_gpu_cannot_run_is_told_before_the_findings(
    client: Client, starter_kb: None
) -> None:
    launch = "python3 -m sglang.launch_server --model-path GLM-5-NVFP4 --attention-backend fa3"

    html = client.post(
        "/check/", {"launch_command": launch, "gpu": "RTX PRO 6000"}
    ).content.decode()

    assert 'class="verdict verdict-known"' in html
    notice = html.split('<section class="notice gpu-requirements" role="alert">', 1)[1]
    notice = re.sub(r"<[^>]+>", "", notice.split("</section>", 1)[0])
    assert "the server would stop at start-up" in notice
    assert "--attention-backend fa3 chooses a backend that sglang 0.5.23 runs only on" in notice
    assert html.index("gpu-requirements") < html.index('class="risks"')


def test_a_launch_whose_weights_do_not_fit_gets_the_split_that_holds_them(
    client: Client, starter_kb: None
) -> None:
    launch = "vllm serve meta-llama/Llama-3.1-70B-Instruct --max-model-len 32768"

    page = client.post(
        "/check/", {"launch_command": launch, "gpu": "8x H100", "release": "vllm 0.11.0"}
    )

    html = page.content.decode()
    assert "The model&#x27;s weights alone do not fit each GPU at this split." in html
    weights = html.split('<section class="weights notice" id="weights">', 1)[1]
    weights = re.sub(r"<[^>]+>", "", weights.split("</section>", 1)[0])
    assert (
        "are 70B parameters in 16-bit: about 130.39 GiB, all on one GPU (--tensor-parallel-size 1)"
        in weights
    )
    assert f"{launch} --tensor-parallel-size 2" in weights  # the command to copy
    # A flag in brackets does not break after one of its hyphens.
    assert '<span class="w">(--tensor-parallel-size 1),</span>' in html


def test_a_launch_on_a_gpu_too_old_for_its_quantization_is_told_before_it_runs(
    client: Client, starter_kb: None
) -> None:
    """gpt-oss is published in MXFP4, whose vLLM kernels need compute capability 8.0: a
    T4 (7.5) meets the starter finding, an A100 (8.0) does not."""
    launch = "vllm serve openai/gpt-oss-20b"

    on_t4 = client.post("/check/", {"launch_command": launch, "gpu": "Tesla T4"})
    on_a100 = client.post("/check/", {"launch_command": launch, "gpu": "A100"})

    title = "vLLM: MXFP4 checkpoints (gpt-oss) need compute capability 8.0"
    html = on_t4.content.decode()
    assert f"Meets 1 known issue(s), first: {title}" in html
    assert "GPU compute capability &lt;8.0" in html
    assert title not in on_a100.content.decode()


def test_the_first_fixs_corrected_launch_can_be_checked_from_the_diagnosis(
    client: Client, starter_kb: None
) -> None:
    """The decode crash's fix gives a corrected launch; checked, it carries the GPU."""
    launch = "python3 -m sglang.launch_server --model-path GLM-5-NVFP4 --tp-size 8"
    page = page_of(client, DECODE_CRASH, launch_command=launch, gpu="RTX PRO 6000")

    form = page.split('<form method="post" action="/check/" class="check-launch">', 1)[1]
    form = form.split("</form>", 1)[0]
    fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', form))
    assert fields["launch_command"].startswith(launch + " --")
    assert fields["gpu"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"

    checked = client.post("/check/", fields)
    assert checked.status_code == 200 and b"sm_120" in checked.content


def test_a_paste_that_only_says_the_scheduler_died_says_where_the_cause_is(
    client: Client, starter_kb: None, django_user_model
) -> None:
    """No draft is offered: a paste without its error would teach the finding nothing."""
    client.force_login(django_user_model.objects.create_user("oncall"))
    page = page_of(
        client,
        "[2026-02-10 09:14:03] Received sigquit from a child process. It usually means the child failed.\n",
    )

    assert "The cause is not in this paste." in page
    assert "the error that stopped it was printed earlier in the same log" in page
    assert "Start a finding from this paste" not in page


def test_a_paste_that_ends_in_killed_points_at_the_hosts_memory(
    client: Client, starter_kb: None
) -> None:
    page = page_of(client, "Loading safetensors checkpoint shards:  40% 4/10\nKilled\n")

    assert "The process was killed (SIGKILL), not stopped by an error of its own." in page
    assert "<code>dmesg -T | grep -i -e oom -e 'killed process'</code>" in page
