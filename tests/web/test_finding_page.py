"""A finding's page reads as written: code as code, nothing said twice, its own source entry;
reviewers can queue a validation run of any fix from it."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from kb.models import Finding, Fix, Host, ValidationRun
from tests.web.conftest import decode_finding

pytestmark = pytest.mark.django_db


def text_of(response) -> str:  # type: ignore[no-untyped-def]
    return response.content.decode()


def finding_titled(start: str) -> Finding:
    return Finding.objects.get(title__startswith=start)


def test_it_renders_backticks_in_a_title_as_code(client: Client, starter_kb: None) -> None:
    finding = finding_titled("Triton attention backend asserts")

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    h1 = re.search(r"<h1>(.*?)</h1>", page, re.S)
    assert h1 is not None
    assert "<code>not self.nsa_kv_cache_store_fp8</code>" in h1.group(1)
    assert "`" not in h1.group(1)
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    assert title is not None
    assert "`" not in title.group(1) and "<code>" not in title.group(1)
    assert "not self.nsa_kv_cache_store_fp8" in title.group(1)


def test_it_shows_a_patch_once_not_as_a_chip_repeating_its_words(
    client: Client, starter_kb: None
) -> None:
    finding = finding_titled("Single-stream decode spends")

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    fixes = page.split("<h2>Fixes</h2>", 1)[1].split("</ol>", 1)[0]
    assert "patch the FlashInfer MLA backend" in fixes
    assert not re.search(r"\b(\w+) \1\b", re.sub(r"<[^>]+>", " ", fixes).replace("  ", " "))
    assert fixes.count("gather the KV entries") == 1


def test_a_step_in_words_shows_once_not_as_an_other_chip(client: Client, starter_kb: None) -> None:
    finding = finding_titled('"no kernel image is available')

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    fixes = page.split("<h2>Fixes</h2>", 1)[1].split("</ol>", 1)[0]
    assert fixes.count("install builds made for the GPU") == 1
    assert "other install" not in fixes


def test_it_does_not_repeat_the_summary_as_the_write_up(client: Client, starter_kb: None) -> None:
    finding = finding_titled("GLM-5-NVFP4 serves on 8x")
    assert finding.body.startswith(finding.summary[:40])

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    assert page.count("The flag set the later sessions served") == 2  # the lede and Sources
    lede_and_writeup = page.split("<h2>Sources</h2>", 1)[0]
    assert lede_and_writeup.count("The flag set the later sessions served") == 1


def test_sources_show_the_entry_the_finding_came_from(client: Client, starter_kb: None) -> None:
    finding = finding_titled("CUDA-graph capture runs out of memory")

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    sources = page.split("<h2>Sources</h2>", 1)[1]
    shown = re.search(r'<pre class="verbatim">(.*?)</pre>', sources, re.S)
    assert shown is not None
    assert shown.group(1).startswith("## CUDA-graph capture runs out of memory")
    assert "# FixGraph starter knowledge base" not in shown.group(1)
    assert "## FlashInfer MLA kernel" not in shown.group(1)  # the next entry is not shown
    assert "knowledge/FINDINGS.md line 164" in sources


@override_settings(FIXGRAPH_SOURCE_EDIT_URL="https://git.example.com/kb/edit/main/{path}#L{line}")
def test_it_links_to_where_the_source_entry_is_edited(client: Client, starter_kb: None) -> None:
    finding = finding_titled("CUDA-graph capture runs out of memory")

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    assert 'href="https://git.example.com/kb/edit/main/knowledge/FINDINGS.md#L164"' in page


TRUST_REMOTE_CODE = {"action": "set_flag", "name": "trust-remote-code"}


def decode_fix(*more_changes: dict[str, str]) -> tuple[Finding, Fix]:
    """The decode crash's finding and its first fix, with `more_changes` added to the fix."""
    finding = decode_finding()
    fix = finding.fixes.order_by("position", "id").first()
    assert fix is not None
    if more_changes:
        fix.changes = [*fix.changes, *more_changes]
        fix.save()
    return finding, fix


def test_reviewers_validate_a_fix_on_a_registered_host(
    client: Client, starter_kb: None, reviewer: User
) -> None:
    finding, fix = decode_fix()
    host = Host.objects.create(name="rtx-box-1", address="10.0.0.5", username="ci")
    url = f"/findings/{finding.pk}/fixes/{fix.pk}/validate/"
    assert "Validate on…" not in text_of(client.get(f"/findings/{finding.pk}/"))
    assert client.post(url, {"host": host.pk}).status_code == 302  # to the login page
    assert not ValidationRun.objects.exists()

    client.force_login(reviewer)
    page = text_of(client.get(f"/findings/{finding.pk}/"))
    assert "Validate on…" in page
    response = client.post(url, {"host": host.pk}, follow=True)

    run = ValidationRun.objects.get()
    assert (run.fix, run.host, run.status, run.created_by) == (fix, host, "queued", reviewer)
    assert f"Queued validation run {run.pk} of fix {fix.pk} on rtx-box-1" in text_of(response)


def test_a_host_that_would_refuse_the_fix_is_greyed_out_with_the_reason(
    client: Client, starter_kb: None, reviewer: User
) -> None:
    finding, fix = decode_fix(TRUST_REMOTE_CODE)
    plain = Host.objects.create(name="rtx-box-1", address="10.0.0.5", username="ci")
    sandbox = Host.objects.create(
        name="sandbox", address="10.0.0.6", username="ci", allowed_flags=["trust-remote-code"]
    )
    client.force_login(reviewer)

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    form = page[page.index(f'id="host-{fix.pk}"') :].split("</form>", 1)[0]
    assert re.search(rf'<option value="{plain.pk}" disabled title="[^"]*trust-remote-code', form)
    assert f'<option value="{sandbox.pk}">sandbox' in form
    assert "Not on every host: --trust-remote-code is not run on a host" in form


def test_a_user_without_permission_cannot_queue_a_run(client: Client, starter_kb: None) -> None:
    finding = decode_finding()
    fix = finding.fixes.first()
    assert fix is not None
    host = Host.objects.create(name="rtx-box-1", address="10.0.0.5", username="ci")
    client.force_login(User.objects.create_user("visitor", password="pw-visitor-1"))

    response = client.post(f"/findings/{finding.pk}/fixes/{fix.pk}/validate/", {"host": host.pk})

    assert response.status_code == 403
    assert not ValidationRun.objects.exists()


def test_it_says_why_a_run_was_not_queued(client: Client, draft: Finding, reviewer: User) -> None:
    fix = draft.fixes.get()
    host = Host.objects.create(name="rtx-box-1", address="10.0.0.5", username="ci")
    client.force_login(reviewer)

    response = client.post(
        f"/findings/{draft.pk}/fixes/{fix.pk}/validate/", {"host": host.pk}, follow=True
    )

    assert "Not queued: fix" in text_of(response)
    assert "must publish it" in text_of(response)
    assert not ValidationRun.objects.exists()
    bad_host = client.post(
        f"/findings/{draft.pk}/fixes/{fix.pk}/validate/", {"host": "x"}, follow=True
    )
    assert "Choose a registered host" in text_of(bad_host)


def test_a_fix_made_only_of_flags_reads_once_as_its_release_spells_them(
    client: Client, starter_kb: None
) -> None:
    finding = finding_titled("Triton attention backend asserts")
    fix = finding.fixes.get(summary__startswith="--attention-backend flashinfer")

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    item = page.split(f'id="fix-{fix.pk}"', 1)[1].split("</li>", 1)[0]
    assert '<span class="fix-summary">' not in item  # the chips say it all
    chips = re.findall(r'<code class="flag-change[^"]*">([^<]+)</code>', item)
    assert chips == [
        "--attention-backend flashinfer",
        "--nsa-decode-backend trtllm",  # SGLang 0.5.9's spelling, as the finding ran
        "--nsa-prefill-backend trtllm",
    ]


def test_the_write_up_leaves_out_the_error_shown_under_it(client: Client, starter_kb: None) -> None:
    finding = finding_titled("Triton attention backend asserts")
    sample = finding.samples.first()
    assert sample is not None and sample.text.strip() in finding.body

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    write_up = page.split("<h2>Write-up</h2>", 1)[1].split("<h2>", 1)[0]
    assert "assert not self.nsa_kv_cache_store_fp8" not in write_up
    assert "Triton was tried as a way around" in write_up


def test_it_says_when_the_finding_applies_in_words_not_in_key_syntax(
    client: Client, starter_kb: None
) -> None:
    page = text_of(client.get(f"/findings/{decode_finding().pk}/"))

    applies = page.split("<dt>Applies when</dt>", 1)[1].split("</dd>", 1)[0]
    said = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", applies.replace("</li>", "\n")))
    assert "GPU architecture is sm_120" in said
    assert "--kv-cache-dtype is not bf16" in said
    assert "flag.kv-cache-dtype" not in said and "!=" not in said


def test_a_working_configuration_shows_its_whole_launch_as_the_runbook_does(
    client: Client, starter_kb: None
) -> None:
    from html import unescape

    from decisiontree.launch import parse_launch_command

    works = Finding.objects.get(kind=Finding.Kind.WORKS)

    page = text_of(client.get(f"/findings/{works.pk}/"))

    shown = page.split('<pre id="works-cmd">', 1)[1].split("</pre>", 1)[0]
    command = " ".join(unescape(re.sub(r"<[^>]+>", "", shown)).split())
    assert re.match(r"^python3? -m sglang\.launch_server --model-path \S+ ", command), command
    launched = parse_launch_command(command)
    assert launched.flags["tp-size"] == "8"
    recorded = parse_launch_command(works.works_command).flags
    assert all(launched.flags.get(name) == value for name, value in recorded.items())
    assert "completed with the entry point" in page


def test_kind_badges_read_as_labels_of_one_style(client: Client, starter_kb: None) -> None:
    """The search list shows each finding's kind beside its title: one capitalisation for
    all, not "Crash" beside "out of memory"."""
    page = text_of(client.get("/"))

    badges = set(re.findall(r'<span class="badge badge-\w+">([^<]+)</span>', page))
    assert {"Crash", "Out of memory", "Working configuration"} <= badges
    assert all(badge[0].isupper() for badge in badges)
    finding = finding_titled("CUDA-graph capture runs out of memory")
    head = text_of(client.get(f"/findings/{finding.pk}/")).split('<div class="columns">')[0]
    assert re.findall(r'<span class="badge[^"]*">([^<]+)</span>', head) == [
        "Out of memory",
        "Published",
        "Resolved",
    ]


def test_fix_outcomes_read_alike_on_the_finding_and_its_diagnosis(
    client: Client, starter_kb: None
) -> None:
    """A fix is "Resolves" on its finding's page and on the answer that offers it, and a
    fix known not to help reads "No effect" in the same style."""
    finding_page = text_of(client.get(f"/findings/{decode_finding().pk}/"))
    fix_badges = re.findall(r'<span class="badge badge-(?:ok|bad)">([^<]+)</span>', finding_page)
    assert set(fix_badges) == {"Resolves", "No effect"}

    paste = "Assertion 'probability tensor contains either inf, nan or element < 0' failed.\n"
    answer = text_of(client.post("/diagnose/", {"text": paste}, follow=True))
    heads = re.findall(r'<div class="fix-head">(.*?)</div>', answer, re.S)
    assert heads, answer
    assert all('<span class="badge badge-ok">Resolves</span>' in head for head in heads)


def test_its_conditions_name_flags_as_its_release_writes_them(
    client: Client, starter_kb: None
) -> None:
    """The finding was met on SGLang 0.5.9, whose decode backend flag is --nsa-*: its
    conditions say so, as its fixes do, not the newer --dsa-* beside them."""
    page = text_of(client.get(f"/findings/{decode_finding().pk}/"))

    listed = page.split("<dt>Applies when</dt>")[1].split("</dd>")[0]
    applies = re.sub(r"<[^>]+>", "", listed)  # the words a reader sees
    assert "--nsa-decode-backend is not trtllm" in applies
    assert "dsa-" not in applies
    assert "--dsa-" not in page.split("<h2>Fixes</h2>")[1].split("<h2>")[0]


def test_its_launch_flags_are_named_as_its_release_writes_them(
    client: Client, starter_kb: None
) -> None:
    slow = Finding.objects.get(title__startswith="Single-stream decode")
    page = text_of(client.get(f"/findings/{slow.pk}/"))

    listed = page.split("<dt>Flags</dt>")[1].split("</dd>")[0]
    assert "<code>--nsa-decode-backend trtllm</code>" in listed
    assert "dsa-" not in re.sub(r'href="[^"]*"', "", listed)
    # Its link lists the finding.
    link = re.search(r'href="([^"]*)"><code>--nsa-decode-backend', listed)
    assert link is not None
    assert "Single-stream decode spends" in text_of(client.get(link.group(1).replace("&amp;", "&")))


def test_reviewers_validate_a_fix_on_every_host_of_its_gpu_at_once(
    client: Client, starter_kb: None, reviewer: User
) -> None:
    finding = decode_finding()  # seen on sm_120
    fix = finding.fixes.order_by("position", "id").first()
    assert fix is not None
    blackwell = {"gpu_count": 8, "gpu_name": "NVIDIA RTX PRO 6000", "arch": "sm_120"}
    for name in ("rtx-a", "rtx-b"):
        Host.objects.create(name=name, address="10.0.0.5", username="ci", facts=blackwell)
    Host.objects.create(
        name="h200", address="10.0.0.6", username="ci", facts={"gpu_count": 1, "arch": "sm_90"}
    )
    client.force_login(reviewer)
    assert "every sm_120 host (2)" in text_of(client.get(f"/findings/{finding.pk}/"))

    response = client.post(
        f"/findings/{finding.pk}/fixes/{fix.pk}/validate/", {"host": "matching"}, follow=True
    )

    assert sorted(run.host.name for run in ValidationRun.objects.all()) == ["rtx-a", "rtx-b"]
    assert response.redirect_chain[-1][0] == "/runs/?status=live#runs"
    assert f"Queued 2 runs of fix {fix.pk}, on rtx-" in text_of(response)


def test_every_host_of_its_gpu_means_every_one_that_runs_the_fix(
    client: Client, starter_kb: None, reviewer: User
) -> None:
    finding, fix = decode_fix(TRUST_REMOTE_CODE)  # seen on sm_120
    blackwell = {"gpu_count": 8, "gpu_name": "NVIDIA RTX PRO 6000", "arch": "sm_120"}
    Host.objects.create(
        name="rtx-a", address="10.0.0.5", username="ci", facts=blackwell,
        allowed_flags=["trust-remote-code"],
    )  # fmt: skip
    Host.objects.create(name="rtx-b", address="10.0.0.6", username="ci", facts=blackwell)
    client.force_login(reviewer)

    response = client.post(
        f"/findings/{finding.pk}/fixes/{fix.pk}/validate/", {"host": "matching"}, follow=True
    )

    assert [run.host.name for run in ValidationRun.objects.all()] == ["rtx-a"]
    said = text_of(response)
    assert f"Queued 1 run of fix {fix.pk}, on rtx-a. Not on rtx-b: --trust-remote-code is" in said
