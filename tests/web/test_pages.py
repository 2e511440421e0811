"""The web pages through Django's test client: what a user sees, and bad input."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from kb.models import Finding, FindingGpu, ValidationRun
from tests.web.conftest import RTX_LAUNCH, decode_finding, fixture_text

pytestmark = pytest.mark.django_db


def text_of(response) -> str:  # type: ignore[no-untyped-def]
    return response.content.decode()


# --- search ------------------------------------------------------------------------


def test_it_lists_every_published_finding_title_on_the_home_page(
    client: Client, starter_kb: None
) -> None:
    listed: list[str] = []
    for number in range(1, 10):  # following "Next →" until the last page
        page = text_of(client.get("/", {"page": number}))
        listed += [
            html.unescape(re.sub(r"</?code>", "`", title))
            for title in re.findall(r'class="title" href="/findings/\d+/">(.*?)</a>', page, re.S)
        ]
        if "Next →" not in page:
            break
    titles = Finding.objects.filter(status="published").values_list("title", flat=True)
    assert len(titles) > 25  # more than one page
    assert sorted(listed) == sorted(titles)


def test_it_ranks_the_finding_whose_error_names_the_searched_identifier_first(
    client: Client, starter_kb: None
) -> None:
    page = text_of(client.get("/", {"q": "nsa_kv_cache_store_fp8"}))

    first = re.search(r'class="title" href="/findings/(\d+)/">([^<]+)<', page)
    assert first is not None
    assert "Triton attention backend asserts" in first.group(2)
    assert "<mark>" in page
    assert re.search(r"\d+ findings? for “nsa_kv_cache_store_fp8”", page)


def test_it_says_how_it_read_a_misspelt_or_unknown_word(client: Client, starter_kb: None) -> None:
    page = text_of(client.get("/", {"q": "nsa_kv_cache_stor_fp8 zq"}))

    assert "Triton attention backend asserts" in page
    assert "searched for <strong>nsakvcachestorefp8</strong> instead" in page
    assert "<mark>nsa_kv_cache_store_fp8</mark>" in page  # the word searched, marked
    assert "No finding has “zq”: searched without it." in page


def test_it_says_when_no_finding_has_every_word(client: Client, starter_kb: None) -> None:
    page = text_of(client.get("/", {"q": "nsa_kv_cache_store_fp8 static_assert"}))

    assert "No finding has every word" in page
    assert "Triton attention backend asserts" in page
    assert "FlashInfer MLA kernel cannot read an FP8 KV cache" in page


def test_it_filters_by_architecture_and_shows_the_filter(client: Client, starter_kb: None) -> None:
    on_hopper = text_of(client.get("/", {"arch": "sm_90"}))
    on_blackwell = text_of(client.get("/", {"arch": "sm_120"}))

    assert "0 findings" in on_hopper
    assert "First decode request kills the server" in on_blackwell
    assert "filtered by arch = sm_120" in on_blackwell


def test_it_offers_only_the_gpus_that_findings_were_seen_on(
    client: Client, starter_kb: None
) -> None:
    page = text_of(client.get("/"))
    gpu_select = re.search(r'<select id="id_gpu".*?</select>', page, re.S)
    assert gpu_select is not None
    offered = set(re.findall(r'<option value="([^"]+)"', gpu_select.group()))

    assert offered == set(FindingGpu.objects.values_list("hardware__name", flat=True))
    assert "NVIDIA H100 80GB HBM3" not in offered  # in the vocabulary, in no finding


def test_it_hides_drafts_unless_a_reviewer_asks_for_them(
    client: Client, draft: Finding, reviewer: User
) -> None:
    assert draft.title not in text_of(client.get("/"))
    client.force_login(reviewer)
    assert draft.title not in text_of(client.get("/"))
    assert draft.title in text_of(client.get("/", {"status": "draft"}))


def test_it_survives_odd_search_input(client: Client, starter_kb: None) -> None:
    for query in ('"', "'; DROP TABLE kb_finding; --", "(*)", "\u202e x", "a" * 500):
        assert client.get("/", {"q": query, "arch": "x" * 200}).status_code == 200
    for query in ("a" * 5000, "\u202e\u0000x"):
        response = client.get("/", {"q": query})
        assert response.status_code == 400
        assert "Error text, flag or model: " in text_of(response)


# --- paste a traceback ---------------------------------------------------------------


def diagnose(client: Client, **data: str):  # type: ignore[no-untyped-def]
    """Paste the decode crash and follow the redirect to the diagnosis page."""
    paste = {"text": fixture_text("decode_crash_rtx6000.txt"), **data}
    return client.post("/diagnose/", paste, follow=True)


def test_it_puts_the_bf16_kv_cache_with_trtllm_decode_first_for_the_decode_crash(
    client: Client, starter_kb: None
) -> None:
    page = text_of(diagnose(client, gpu="RTX PRO 6000", launch_command=RTX_LAUNCH))

    first_fix = page.split('class="fix" id="fix-', 2)[1]
    assert '<code class="flag-change">--kv-cache-dtype bf16</code>' in first_fix
    assert re.search(r"--(nsa|dsa)-decode-backend trtllm", first_fix)
    assert "Known issue" in page


def test_it_offers_the_launch_command_with_the_fix_applied(
    client: Client, starter_kb: None
) -> None:
    page = text_of(diagnose(client, gpu="RTX PRO 6000", launch_command=RTX_LAUNCH))

    command = first_command(page)
    assert "--kv-cache-dtype bf16" in command
    assert "fp8_e4m3" not in command
    assert command.startswith("python -m sglang.launch_server --model-path")
    assert "data-copy=" in page


def first_command(page: str) -> str:
    """The first corrected command as Copy copies it: the text inside the <pre>."""
    found = re.search(r'<pre id="cmd-\d+">(.*?)</pre>', page, re.S)
    assert found is not None
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1)))


def test_it_wraps_commands_at_spaces_only(client: Client, starter_kb: None) -> None:
    page = text_of(diagnose(client, gpu="RTX PRO 6000", launch_command=RTX_LAUNCH))

    pre = re.search(r'<pre id="cmd-\d+">(.*?)</pre>', page, re.S)
    assert pre is not None
    words = re.findall(r'<span class="w[^"]*">([^<]*)</span>', pre.group(1))
    assert "--mem-fraction-static 0.88" in words  # a flag stays with its value, unbroken
    assert " ".join(words) == first_command(page)


def test_a_fix_in_words_shows_its_code_as_code(client: Client, starter_kb: None) -> None:
    paste = (
        "RuntimeError: The NVIDIA driver on your system is too old (found version 12040). "
        "Please update your GPU driver by downloading and installing a new version"
    )
    page = text_of(client.post("/diagnose/", {"text": paste}, follow=True))

    heading = re.search(r'<li class="fix" id="fix-\d+">.*?<h3>(.*?)</h3>', page, re.S)
    assert heading is not None
    assert (
        "<code>python -c &quot;import torch; print(torch.version.cuda)&quot;</code>" in heading[1]
    )
    assert "`" not in heading[1]


def test_it_lists_what_is_known_not_to_help(client: Client, starter_kb: None) -> None:
    page = text_of(diagnose(client, gpu="RTX PRO 6000"))

    known_not = page.split("Known not to help", 1)[1]
    assert "--disable-cuda-graph" in known_not


def test_it_draws_the_decision_path_with_whole_labels(client: Client, starter_kb: None) -> None:
    page = text_of(diagnose(client, gpu="RTX PRO 6000"))

    tree = re.search(r'<ol class="path-tree".*?</ol>\s*<figcaption', page, re.S)
    assert tree is not None
    assert "AcceleratorError" in tree.group()
    finding = decode_finding()
    assert f'href="/findings/{finding.pk}/">{html.escape(finding.title)}</a>' in tree.group()
    assert "…" not in tree.group()  # nothing cut short: there is no hover on a phone
    assert "--disable-cuda-graph" in tree.group()  # known not to help, on its branch


def test_it_asks_for_the_gpu_and_reranks_on_the_answer(
    client: Client, hopper_variant: Finding
) -> None:
    page = text_of(diagnose(client))
    assert "Which GPU?" in page
    assert 'value="gpu.arch=sm_90"' in page

    hopper = text_of(diagnose(client, answer="gpu.arch=sm_90"))
    first_fix = hopper.split('class="fix" id="fix-', 2)[1]
    assert "Upgrade FlashInfer" in first_fix
    assert 'name="answer.gpu.arch" value="sm_90"' in hopper or "Which GPU?" not in hopper

    blackwell = text_of(diagnose(client, answer="gpu.arch=sm_120"))
    assert "--kv-cache-dtype bf16" in blackwell.split('class="fix" id="fix-', 2)[1]


def test_it_says_no_known_match_for_an_unrelated_error(client: Client, starter_kb: None) -> None:
    response = client.post(
        "/diagnose/",
        {
            "text": "ModuleNotFoundError: No module named 'yaml_loader_plugin'",
        },
        follow=True,
    )

    assert response.status_code == 200
    assert "No known match" in text_of(response)
    assert 'class="fix" id="fix-' not in text_of(response)


def test_it_refuses_a_binary_paste_with_a_clear_message(client: Client, starter_kb: None) -> None:
    response = client.post("/diagnose/", {"text": "\x7fELF\x02\x01\x00\x00\x00garbage"})

    assert response.status_code == 400
    assert "binary file" in text_of(response)


def test_it_refuses_an_empty_paste(client: Client, starter_kb: None) -> None:
    response = client.post("/diagnose/", {"text": "   \n  "})

    assert response.status_code == 400
    assert "Paste the traceback" in text_of(response)


def test_it_refuses_a_50_mb_paste_with_413_and_says_why(client: Client, starter_kb: None) -> None:
    response = client.post("/diagnose/", {"text": "x" * 50_000_000})

    assert response.status_code == 413
    assert "larger than" in text_of(response)


def test_it_refuses_a_paste_just_over_the_limit(client: Client, starter_kb: None) -> None:
    response = client.post("/diagnose/", {"text": "RuntimeError: boom\n" * 110_000})

    assert response.status_code == 413


def test_it_rejects_a_forged_answer_without_a_500(client: Client, starter_kb: None) -> None:
    response = diagnose(client, answer="no.such.key=1")

    assert response.status_code == 400
    assert "not one FixGraph asked for" in text_of(response)


# --- finding page ----------------------------------------------------------------------


def test_it_shows_a_finding_with_links_to_filtered_searches(
    client: Client, starter_kb: None, validated_run: ValidationRun
) -> None:
    finding = decode_finding()
    page = text_of(client.get(f"/findings/{finding.pk}/"))

    assert "?arch=sm_120" in page
    assert "?model=GLM-5-NVFP4" in page
    assert "?flag=kv-cache-dtype" in page
    assert "1234.5 tok/s" in page
    assert '<pre class="verbatim">' in page
    assert "ingestion" in page  # the first history entry, made without a user


def test_it_renders_markdown_without_running_scripts(client: Client, starter_kb: None) -> None:
    finding = decode_finding()
    finding.body = "**bold** <script>alert('x')</script> <img src=x onerror=alert(1)>"
    finding.save()

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    assert "<strong>bold</strong>" in page
    assert "<script>alert" not in page
    assert "<img" not in page
    # Shown as the text it is, not run and not dropped.
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_angle_brackets_in_a_write_up_or_title_are_text_not_tags(
    client: Client, starter_kb: None
) -> None:
    """Errors say `in <module>` and `TensorInfo<T, IndexType>`; read as HTML tags, those
    words vanished from titles and write-ups."""
    finding = decode_finding()
    finding.title = "indexSelectLargeIndex(TensorInfo<T, IndexType>) asserts in <module>"
    finding.body = 'The frame is `File "<string>"`, then in <module> it calls Vec<float>.'
    finding.save()

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    assert "indexSelectLargeIndex(TensorInfo&lt;T, IndexType&gt;) asserts in &lt;module&gt;" in page
    assert "then in &lt;module&gt; it calls Vec&lt;float&gt;." in page
    assert '<code>File "&lt;string&gt;"</code>' in page


def test_it_renders_a_list_written_right_under_its_lead_in(
    client: Client, starter_kb: None
) -> None:
    finding = decode_finding()
    finding.body = "Tried first:\n- eager mode\n- a smaller batch\n\n```\n- kept verbatim\n```"
    finding.save()

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    assert "<li>eager mode</li>" in page
    assert "<pre><code>- kept verbatim" in page


def test_it_shows_who_changed_which_field(client: Client, starter_kb: None, reviewer: User) -> None:
    client.force_login(reviewer)
    finding = decode_finding()
    client.post(f"/review/{finding.pk}/", review_data(finding, cause="Edited cause."))

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    history = page.split("<h2>History</h2>", 1)[1]
    assert "rev" in history
    assert "cause" in history


def test_it_hides_drafts_from_anonymous_visitors(client: Client, draft: Finding) -> None:
    assert client.get(f"/findings/{draft.pk}/").status_code == 404


# --- review queue -----------------------------------------------------------------------------


def review_data(finding: Finding, **overrides: str) -> dict[str, str]:
    fixes = list(finding.fixes.order_by("position", "id"))
    data = {
        "title": finding.title,
        "kind": finding.kind,
        "summary": finding.summary,
        "cause": finding.cause,
        "conditions": "gpu.arch = sm_100",
        "fixes-TOTAL_FORMS": str(len(fixes)),
        "fixes-INITIAL_FORMS": str(len(fixes)),
        "fixes-MIN_NUM_FORMS": "0",
        "fixes-MAX_NUM_FORMS": "1000",
    }
    for i, fix in enumerate(fixes):
        data |= {
            f"fixes-{i}-id": str(fix.pk),
            f"fixes-{i}-summary": fix.summary,
            f"fixes-{i}-outcome": fix.outcome,
        }
    return data | overrides


def test_it_sends_anonymous_reviewers_to_the_login_page(client: Client, draft: Finding) -> None:
    response = client.get("/review/")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_it_refuses_the_queue_to_users_without_permission(client: Client, draft: Finding) -> None:
    client.force_login(User.objects.create_user("visitor", password="pw-visitor-1"))

    assert client.get("/review/").status_code == 403


def test_it_shows_the_source_beside_the_extracted_fields(
    client: Client, draft: Finding, reviewer: User
) -> None:
    client.force_login(reviewer)
    assert draft.title in text_of(client.get("/review/"))

    page = text_of(client.get(f"/review/{draft.pk}/"))

    assert "compute_100a" in page  # the verbatim source
    assert "No launch command found" in page  # extraction notes
    assert 'name="cause"' in page


def test_it_publishes_an_edited_draft(client: Client, draft: Finding, reviewer: User) -> None:
    client.force_login(reviewer)
    data = review_data(draft, title="FlashInfer JIT needs CUDA 12.8 on B200", publish="1")
    data["fixes-0-outcome"] = "resolves"

    response = client.post(f"/review/{draft.pk}/", data)

    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.status == "published"
    assert draft.title == "FlashInfer JIT needs CUDA 12.8 on B200"
    assert draft.conditions == [{"key": "gpu.arch", "value": "sm_100", "negate": False}]
    assert draft.fixes.get().outcome == "resolves"
    assert draft.history.first().history_user == reviewer


def test_it_explains_a_malformed_condition(client: Client, draft: Finding, reviewer: User) -> None:
    client.force_login(reviewer)

    response = client.post(f"/review/{draft.pk}/", review_data(draft, conditions="sm_100"))

    assert response.status_code == 400
    assert "is not a condition" in text_of(response)
    draft.refresh_from_db()
    assert draft.status == "draft"


def test_it_logs_in_through_the_login_page(client: Client, reviewer: User) -> None:
    response = client.post(
        "/accounts/login/",
        {
            "username": "rev",
            "password": "correct horse battery",
            "next": "/review/",
        },
    )

    assert response.status_code == 302
    assert response["Location"] == "/review/"


def test_it_answers_undecodable_bytes_with_a_page_not_a_500(
    client: Client, starter_kb: None
) -> None:
    body = b"text=" + bytes(range(1, 256)).replace(b"&", b"").replace(b"=", b"") * 20

    response = client.post("/diagnose/", body, content_type="application/x-www-form-urlencoded")

    assert response.status_code == 400
    assert b"<html" in response.content
    assert "mostly unprintable characters" in response.content.decode()


def test_it_pages_long_result_lists(client: Client, db: None) -> None:
    Finding.objects.bulk_create(
        Finding(title=f"Synthetic crash {i:03d}", status="published") for i in range(60)
    )

    first = text_of(client.get("/"))
    last = text_of(client.get("/", {"page": "3"}))

    assert "60 findings" in first
    assert first.count('class="finding"') == 25
    assert "page=2" in first
    assert last.count('class="finding"') == 10
    assert "← Previous" in last and "Next →" not in last
    assert client.get("/", {"page": "nonsense"}).status_code == 200
