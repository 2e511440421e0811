"""The runbook gives a launch that runs as copied, the versions it ran with, what it measured
over time, and the pitfalls, with links back to the findings (in Markdown too)."""

from __future__ import annotations

import html
import re
import shlex
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.utils import timezone

from decisiontree.launch import parse_launch_command
from kb.models import Finding, FindingGpu, Fix, FlagSetting, Hardware, ValidationRun
from kb.recipes import RequestTiming, summarise
from kb.services.runbook import runbook_entries

pytestmark = pytest.mark.django_db

RTX = "NVIDIA RTX PRO 6000 Blackwell"


def text_of(response) -> str:  # type: ignore[no-untyped-def]
    return response.content.decode()


def copied_command(page: str, entry_title_part: str) -> str:
    """The text Copy copies for the entry whose heading holds `entry_title_part`."""
    sections = page.split('<section class="runbook-entry"')[1:]
    section = next(s for s in sections if entry_title_part in s.split("</h2>", 1)[0])
    pre = re.search(r"<pre id=\"[\w-]+-cmd\">(.*?)</pre>", section, re.S)
    assert pre is not None
    return html.unescape(re.sub(r"<[^>]+>", "", pre.group(1)))


def oom_on_four_h100s_without_a_working_launch() -> None:
    """A published GLM-5-NVFP4 pitfall on 4x H100 (--mem-fraction-static 0.95, resolved by
    0.85), with no `Works:` entry: the runbook derives that pair's launch."""
    works = Finding.objects.get(kind="works")
    finding = Finding.objects.create(
        title="OOM at start-up on H100 with a large static fraction",
        status=Finding.Status.PUBLISHED,
        kind=Finding.Kind.OOM,
        model=works.model,
        framework=works.framework,
    )
    h100 = Hardware.objects.get(name="NVIDIA H100 80GB HBM3")
    FindingGpu.objects.create(finding=finding, hardware=h100, count=4)
    FlagSetting.objects.create(finding=finding, name="mem-fraction-static", value="0.95")
    Fix.objects.create(
        finding=finding,
        summary="--mem-fraction-static 0.85",
        outcome="resolves",
        changes=[{"action": "set_flag", "name": "mem-fraction-static", "value": "0.85"}],
    )


def test_the_command_is_a_whole_launch_with_every_recorded_flag(
    client: Client, starter_kb: None
) -> None:
    works = Finding.objects.get(kind="works")

    command = copied_command(text_of(client.get("/runbook/")), "GLM-5-NVFP4 on 8x")

    words = shlex.split(command)
    assert words[:5] == ["python3", "-m", "sglang.launch_server", "--model-path", "GLM-5-NVFP4"]
    assert " ".join(words[5:7]) == "--tp-size 8"  # one copy across the 8 GPUs
    launched = parse_launch_command(command)
    recorded = parse_launch_command(works.works_command)
    assert launched.framework == "sglang"
    assert {**recorded.flags}.items() <= {**launched.flags}.items()
    # Spelled as SGLang 0.5.9 spells it: the `dsa` names came later.
    assert "--nsa-decode-backend trtllm" in command and "--dsa-" not in command


def test_a_pair_without_a_working_command_gets_the_flags_of_its_last_pitfall_fixed(
    client: Client, starter_kb: None
) -> None:
    oom_on_four_h100s_without_a_working_launch()

    page = text_of(client.get("/runbook/"))

    command = copied_command(page, "on 4x NVIDIA H100")
    assert command.startswith("python3 -m sglang.launch_server --model-path GLM-5-NVFP4")
    assert "--tp-size 4" in command and "--mem-fraction-static 0.85" in command
    assert "0.95" not in command
    assert "Derived: the flags of" in page


def test_it_says_how_much_of_each_gpu_the_weights_take_and_when_they_cannot_fit(
    client: Client, starter_kb: None
) -> None:
    """GLM-5 is 744B parameters (its model card); in NVFP4, 48.72 GiB on each of 8 GPUs, of
    the 84.48 GiB that --mem-fraction-static 0.88 gives of a 96 GiB card. The same model
    over 4 H100s takes 97.44 GiB each: the launch derived there cannot hold it."""
    oom_on_four_h100s_without_a_working_launch()

    page = text_of(client.get("/runbook/"))

    sections = page.split('<section class="runbook-entry"')[1:]
    rtx = next(s for s in sections if "GLM-5-NVFP4 on 8x" in s.split("</h2>", 1)[0])
    said = html.unescape(re.sub(r"<[^>]+>", "", rtx.split('-weights">', 1)[1].split("</p>")[0]))
    assert said == (
        "The weights of GLM-5-NVFP4 are 744B parameters in nvfp4: at least about 389.76 GiB, "
        "48.72 GiB on each GPU at --tp-size 8, of the 84.48 GiB that --mem-fraction-static "
        "0.88 gives of 96.00 GiB: about 35.76 GiB is left for the KV cache."
    )
    assert 'class="weights notice"' not in rtx
    h100_entry = next(s for s in sections if "on 4x NVIDIA H100" in s.split("</h2>", 1)[0])
    assert 'class="weights notice"' in h100_entry
    assert "the weights alone do not fit" in h100_entry

    markdown = client.get("/runbook.md").content.decode()
    assert "48.72 GiB on each GPU at --tp-size 8" in markdown


def test_it_shows_versions_and_where_and_when_the_launch_was_verified(
    client: Client, starter_kb: None, validated_run: ValidationRun
) -> None:
    host = validated_run.host
    host.facts = {"cuda": "12.8", "driver": "570.86.15", "arch": "sm_120", "gpu_count": 8}
    host.save()
    validated_run.finished_at = timezone.now() - timedelta(days=3)
    validated_run.framework_version = "0.5.9"
    validated_run.save()

    page = text_of(client.get("/runbook/"))

    versions = page.split("<h3>Versions</h3>", 1)[1].split("<h3>Throughput</h3>", 1)[0]
    assert "sglang 0.5.9" in versions
    assert "transformers 5.2.0" in versions
    assert "12.8" in versions and "570.86.15" in versions
    assert "Ubuntu 24.04, CUDA Toolkit 13.1" in versions  # as the finding wrote it
    verified = validated_run.finished_at.date().isoformat()
    assert re.search(rf"{verified}</time> on <strong>rtx-box-1</strong>", versions)


def test_without_a_run_it_says_the_launch_is_not_verified(client: Client, starter_kb: None) -> None:
    page = text_of(client.get("/runbook/"))

    assert "not yet run on a registered host" in page
    # Measured only: the write-up's own "CUDA Toolkit 13.1" is the Environment row's.
    assert 'CUDA</dt><dd><span class="muted">not measured on a host yet' in page
    # What any build for the seeds' RTX PRO 6000 (sm_120) must be made with, recorded or not.
    assert (
        "<dt>Builds</dt><dd>for sm_120: made with CUDA 12.8 or newer (PyTorch&#x27;s cu128 "
        "wheels or later)</dd>"
    ) in page


def add_run(finding: Finding, host_run: ValidationRun, days_ago: int, tok_s: float) -> None:
    fix = finding.fixes.order_by("position", "id").first()
    assert fix is not None
    ValidationRun.objects.create(
        fix=fix,
        host=host_run.host,
        status=ValidationRun.Status.PASSED,
        arch="sm_120",
        finished_at=timezone.now() - timedelta(days=days_ago),
        recipe={"load": {"concurrency": 16, "input_tokens": 1024, "output_tokens": 128}},
        metrics={
            "throughput_tok_s": tok_s,
            "ttft_ms": 180.0,
            "median_itl_ms": 6.5,
            "p99_itl_ms": 19.4,
        },
    )


def test_the_throughput_table_has_a_row_per_run_and_a_chart_over_time(
    client: Client, starter_kb: None, validated_run: ValidationRun
) -> None:
    validated_run.finished_at = timezone.now() - timedelta(days=20)
    validated_run.save()
    add_run(validated_run.fix.finding, validated_run, days_ago=2, tok_s=1500.0)

    page = text_of(client.get("/runbook/"))

    table = page.split("<h3>Throughput</h3>", 1)[1].split("</table>", 1)[0]
    for column in ("Output tok/s", "TTFT ms", "ITL p50 ms", "ITL p99 ms", "Concurrency"):
        assert column in table
    rows = re.findall(r"<tr><td\b.*?</tr>", table, re.S)
    assert len(rows) == 2
    newest = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", rows[-1]))
    assert "1,500.0 180 6.5 19.4 16 1024 / 128 rtx-box-1" in newest
    chart = re.search(r'<svg class="chart".*?</svg>', page, re.S)
    assert chart is not None
    assert chart.group().count("<circle") == 2
    assert "1,234.5" in chart.group() and "1,500.0" in chart.group()


def test_a_validated_figure_links_its_run_for_people_logged_in(
    client: Client, starter_kb: None, validated_run: ValidationRun, reviewer: User
) -> None:
    link = f'href="/runs/{validated_run.pk}/">run {validated_run.pk}</a>'
    assert link not in text_of(client.get("/runbook/"))  # run pages need a login

    client.force_login(reviewer)

    assert link in text_of(client.get("/runbook/"))


def test_the_markdown_export_links_back_to_the_findings(
    client: Client, starter_kb: None, validated_run: ValidationRun
) -> None:
    for url in ("/runbook.md", "/runbook/?format=md"):
        response = client.get(url)

        assert response["Content-Type"].startswith("text/markdown")
        assert "attachment" in response["Content-Disposition"]
        text = response.content.decode()
        assert text.startswith("# FixGraph runbook")
        assert "&lt;" not in text and "&#x27;" not in text and "&quot;" not in text
        works = Finding.objects.get(kind="works")
        assert f"]({settings.SITE_URL}/findings/{works.pk}/)" in text
        decode = Finding.objects.get(title__startswith="First decode request")
        assert (
            "1. [First decode request kills the server: device-side assert in the flashmla_kv "
            f"NSA decode path on SM120]({settings.SITE_URL}/findings/{decode.pk}/)"
        ) in text
        assert "```\npython3 -m sglang.launch_server --model-path GLM-5-NVFP4 --tp-size 8" in text
        assert "| 1,234.5 |" in text
        assert "- Framework: sglang 0.5.9" in text
        assert "- Builds for sm_120: made with CUDA 12.8 or newer (PyTorch's cu128" in text


def test_a_pitfall_says_what_helps_in_part_when_nothing_resolves_it(
    client: Client, starter_kb: None
) -> None:
    """The slow decode has only a partial fix; a pitfall with no fix at all says so."""
    slow = Finding.objects.get(title__startswith="Single-stream decode")
    assert not slow.fixes.filter(outcome=Fix.Outcome.RESOLVES).exists()
    partial = slow.fixes.get(outcome=Fix.Outcome.PARTIAL)
    oom = Finding.objects.get(title__startswith="CUDA-graph capture runs out of memory")
    oom.fixes.all().delete()

    page = html.unescape(text_of(client.get("/runbook/")))
    text = text_of(client.get("/runbook.md"))

    item = page.split(slow.title)[1].split("</li>", 1)[0]
    assert "Helps in part:" in item and partial.summary[:40] in item
    assert "No fix known yet" in page.split(oom.title)[1].split("</li>", 1)[0]
    assert f"Helps in part: {partial.summary}" in text
    assert text.split(oom.title)[1].splitlines()[1].strip().startswith("No fix known yet")


@override_settings(FIXGRAPH_SOURCE_EDIT_URL="https://git.example.com/kb/edit/main/{path}#L{line}")
def test_it_links_to_the_source_entry_to_edit(client: Client, starter_kb: None) -> None:
    page = text_of(client.get("/runbook/"))
    text = text_of(client.get("/runbook.md"))

    # The working configuration's heading, wherever an edit of the file moved it.
    heading = "## GLM-5-NVFP4 serves on 8x RTX PRO 6000 Blackwell with trtllm NSA backends"
    lines = (settings.BASE_DIR / "knowledge" / "FINDINGS.md").read_text().splitlines()
    edit = f"https://git.example.com/kb/edit/main/knowledge/FINDINGS.md#L{lines.index(heading) + 1}"
    assert f'href="{edit}"' in page
    assert f"[Edit]({edit})" in text


def test_runbook_entries_are_per_framework_release_too(starter_kb: None) -> None:
    works = Finding.objects.get(kind="works")
    newer = works.framework
    assert newer is not None
    other = Finding.objects.create(
        title="GLM-5-NVFP4 serves on a later SGLang",
        kind=Finding.Kind.WORKS,
        status=Finding.Status.PUBLISHED,
        model=works.model,
        framework=type(newer).objects.create(name="sglang", version="0.5.10"),
        works_command="--attention-backend flashinfer --dsa-decode-backend trtllm",
    )
    FindingGpu.objects.create(finding=other, hardware=works.gpus.get(), count=8)

    entries = [e for e in runbook_entries() if e.works is not None]

    assert {str(e.framework) for e in entries} == {"sglang 0.5.9", "sglang 0.5.10"}
    later = next(e for e in entries if e.framework and e.framework.version == "0.5.10")
    assert "--dsa-decode-backend trtllm" in later.command  # the 0.5.10 spelling


def test_the_load_summary_gives_the_median_and_the_tail(db: None) -> None:
    def request(i: int) -> RequestTiming:
        first = 0.1 * (i + 1)
        gaps = [0.01] * 10 if i < 9 else [0.01] * 8 + [0.5, 0.5]  # one slow stream
        chunks = [first + sum(gaps[:k]) for k in range(11)]
        return RequestTiming(True, 0.0, chunks[-1], first, tuple(chunks), 10)

    metrics = summarise([request(i) for i in range(10)]).as_dict()

    assert metrics["median_itl_ms"] == pytest.approx(10.0)
    assert metrics["p99_itl_ms"] == pytest.approx(500.0)  # the tail, not the mean
    assert metrics["median_ttft_ms"] == pytest.approx(500.0, abs=100.1)
    assert metrics["p99_ttft_ms"] == pytest.approx(1000.0)


def test_each_figure_of_the_throughput_table_carries_its_name_for_a_phone(
    client: Client, starter_kb: None, validated_run: ValidationRun
) -> None:
    page = text_of(client.get("/runbook/"))

    row = page.split("<h3>Throughput</h3>", 1)[1].split("<tbody>", 1)[1].split("</tr>", 1)[0]
    labels = re.findall(r'<td data-label="([^"]+)"', row)
    assert labels == [
        "Output tok/s",
        "TTFT ms",
        "ITL p50 ms",
        "ITL p99 ms",
        "Concurrency",
        "In / out tokens",
        "Host",
        "Date",
        "What ran",
    ]
