"""In a real browser: a known error on another setup is shown as such, not as a green "Known issue"."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.web.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GENERIC_NAN = "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0"
LLAMA_LAUNCH = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 1"


def test_a_known_error_on_another_gpu_and_model_is_demoted_and_adds_no_foreign_flag(
    page: Page, live_server: Any, starter_kb: None
) -> None:
    page.goto(live_server.url + "/diagnose/")
    page.get_by_label("Traceback or error line").fill(GENERIC_NAN)
    page.get_by_label("Launch command (optional)").fill(LLAMA_LAUNCH)
    page.get_by_label("GPU (optional)").fill("H100")
    page.get_by_role("button", name="Diagnose").click()

    verdict = page.locator("header.verdict")
    expect(verdict.get_by_role("heading")).to_have_text("Same error, different setup")
    expect(verdict).to_have_class("verdict verdict-different_setup")
    expect(verdict.locator(".setup-differences")).to_contain_text(
        "GPU sm_90 here, sm_120 in the finding"
    )
    expect(verdict.locator(".setup-differences")).to_contain_text(
        "model llama here, glm_moe_dsa in the finding"
    )
    # The border is the warning colour, not the green of a known issue.
    border = verdict.evaluate("e => getComputedStyle(e).borderLeftColor")
    assert border == colour_of(page, "--warn")
    assert border != colour_of(page, "--ok")
    first = page.locator("ol.fixes > li.fix").first
    expect(first.locator(".withheld")).to_contain_text("Not for your setup")
    expect(first).not_to_contain_text("Nothing in it fits your setup")  # bf16 KV cache fits
    # The finding's other fix only sets the sparse-attention kernels: nothing to try here.
    last = page.locator("ol.fixes > li.fix").last
    expect(last.locator(".fix-head")).to_contain_text("Nothing in it fits your setup")
    for command in page.locator("ol.fixes pre").all_inner_texts():
        assert "dsa-" not in command and "nsa-" not in command
    screenshot(page, "diagnose-different-setup")


def colour_of(page: Page, variable: str) -> str:
    """A CSS colour variable as the browser computes it ("rgb(…)")."""
    return str(
        page.evaluate(
            """name => {
                const probe = document.createElement("div");
                probe.style.color = `var(${name})`;
                document.body.append(probe);
                const colour = getComputedStyle(probe).color;
                probe.remove();
                return colour;
            }""",
            variable,
        )
    )
