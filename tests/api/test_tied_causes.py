"""Two published findings hold one error with two causes: the API, Slack and the page all
say that nothing in the paste tells them apart, and name both, rather than a plain
"Known issue" whose first fix belongs to whichever finding came first."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from kb.models import Finding
from tests.findings_md import publish

pytestmark = pytest.mark.django_db

SAMPLE = """Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/sglang/srt/layers/moe/fused_moe_triton/layer.py", line 412, in weight_loader
    self._load_w13(expert_data, shard_dim, loaded_weight, tp_rank)
RuntimeError: fused_moe weight_loader: expert shard w13 has shape [1536, 7168] but the checkpoint holds [3072, 7168]
"""  # noqa: E501  # as printed
PASTE = """Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/layers/moe/fused_moe_triton/layer.py", line 415, in weight_loader
    self._load_w13(expert_data, shard_dim, loaded_weight, tp_rank)
RuntimeError: fused_moe weight_loader: expert shard w13 has shape [768, 7168] but the checkpoint holds [1536, 7168]
"""  # noqa: E501
SPLIT = "MoE weights fail to load when tensor parallel does not divide the experts"
FUSED = "MoE weights fail to load from a checkpoint with fused gate and up projections"


def entry(title: str, cause: str, fix: str) -> str:
    return (
        f"## {title}\n- Framework: sglang\n- Cause: {cause}\n- Fix: {fix}\n"
        f"- Status: resolved\n\n```\n{SAMPLE}```\n"
    )


@pytest.fixture
def two_causes(tmp_path: Path) -> dict[str, int]:
    call_command("load_vocabulary", verbosity=0)
    publish(
        tmp_path / "FINDINGS.md",
        "# Findings\n\n"
        + entry(
            SPLIT, "the expert size is not divisible by the tensor parallel size", "use --ep-size 4"
        )
        + "\n"
        + entry(FUSED, "a newer converter fused w1 and w3 in the checkpoint", "export it unfused"),
    )
    return dict(Finding.objects.values_list("title", "id"))


def test_the_api_names_both_causes_and_says_to_check_which_applies(
    reader: APIClient, two_causes: dict[str, int]
) -> None:
    body = reader.post("/api/v1/diagnose/", {"traceback": PASTE}, format="json").json()

    assert body["match"] == "known"
    tied = {t["finding"]: t for t in body["tied_causes"]}
    assert set(tied) == {two_causes[SPLIT], two_causes[FUSED]}
    by_fix = {fix["finding"]["id"]: fix["rank"] for fix in body["fixes"]}
    assert all(t["ranks"] == [by_fix[finding]] for finding, t in tied.items())
    assert body["tied_note"].startswith("2 known causes give this error")
    assert "2 causes the paste does not tell apart" in body["summary"]
    assert SPLIT in body["summary"] and FUSED in body["summary"]
    assert "Try first" not in body["summary"]


def test_slack_lists_both_causes_under_the_verdict(
    reader: APIClient, two_causes: dict[str, int]
) -> None:
    response = reader.post("/api/v1/diagnose/?format=slack", {"traceback": PASTE}, format="json")

    headline = response.json()["blocks"][0]["text"]["text"]
    assert "_2 known causes give this error" in headline
    assert f"• {SPLIT}: " in headline and f"• {FUSED}: " in headline


def test_the_page_names_both_causes_above_the_fixes(two_causes: dict[str, int]) -> None:
    page = Client().post("/diagnose/", {"text": PASTE}, follow=True).content.decode()

    notice = page.split('<section class="notice tied-causes">', 1)[1].split("</section>", 1)[0]
    assert "2 known causes give this error" in notice
    for title in (SPLIT, FUSED):
        assert f'<a href="/findings/{two_causes[title]}/">{title}</a>' in notice
    assert page.index("tied-causes") < page.index("Fixes, best first")
