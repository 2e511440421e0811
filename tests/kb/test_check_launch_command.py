"""`manage.py check_launch`: the known issues a launch meets, before it runs."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db

LAUNCH = ["python3", "-m", "sglang.launch_server", "--model-path", "GLM-5-NVFP4", "--tp-size", "8"]


def test_it_prints_each_issue_with_the_launch_corrected(starter_kb: None) -> None:
    out = StringIO()

    call_command(
        "check_launch",
        "--gpu",
        "RTX PRO 6000",
        "--",
        *LAUNCH,
        "--mem-fraction-static",
        "0.95",
        stdout=out,
    )

    text = out.getvalue()
    assert text.startswith("Meets 1 known issue(s), first: CUDA-graph capture runs out of memory")
    assert "   not settled by the launch: --kv-cache-dtype is not bf16" in text
    assert f"     {' '.join(LAUNCH)} --mem-fraction-static 0.88\n" in text
    assert "Known to work on this setup" in text


def test_json_is_the_apis_answer(starter_kb: None) -> None:
    out = StringIO()

    call_command("check_launch", "--json", "--gpu", "H100", " ".join(LAUNCH), stdout=out)

    answer = json.loads(out.getvalue())
    assert answer["context"]["arch"] == "sm_90"
    assert answer["risks"] == [] and answer["summary"] == "No known issue on this setup."


def test_it_prints_whether_the_weights_fit_with_the_split_that_holds_them() -> None:
    out = StringIO()
    launch = ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct"]

    call_command(
        "check_launch", "--gpu", "8x H100", "--framework", "vllm 0.11.0", "--", *launch, stdout=out
    )

    text = out.getvalue()
    assert "\nThe weights of meta-llama/Llama-3.1-70B-Instruct are 70B parameters in 16-bit" in text
    assert f"\n  {' '.join(launch)} --tensor-parallel-size 2\n" in text


def test_a_backend_that_does_not_run_on_the_gpu_is_printed_with_its_alternatives(
    starter_kb: None,
) -> None:
    out = StringIO()

    call_command(
        "check_launch", "--gpu", "RTX 5090", "--", *LAUNCH, "--attention-backend", "fa3", stdout=out
    )

    text = out.getvalue()
    assert text.startswith("--attention-backend fa3 does not run on sm_120")
    section = text.split("Backends that do not run on this GPU:\n", 1)[1]
    assert section.startswith("  `--attention-backend fa3` chooses a backend that sglang 0.5.23")
    assert "runs `trtllm_mla`, `triton` on sm_120" in section  # GLM-5 is an MLA model
