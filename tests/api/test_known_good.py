"""The runbook's launch for the diagnosed setup, beside the fixes: what is known to work on
this model, GPU and framework, and the settings in which the user's launch differs."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from kb.services import runbook
from tests.kb.test_diagnose_command import DECODE_CRASH

pytestmark = pytest.mark.django_db

GLM5 = (
    "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8 "
    "--kv-cache-dtype fp8_e4m3 --nsa-decode-backend flashmla_kv"
)


def diagnose(reader: APIClient, **fields: str) -> dict:
    response = reader.post(
        "/api/v1/diagnose/", {"traceback": DECODE_CRASH, **fields}, format="json"
    )
    assert response.status_code == 200, response.content[:300]
    return response.json()


def test_the_launch_that_works_on_this_setup_comes_with_what_differs(
    starter_kb: None, reader: APIClient
) -> None:
    good = diagnose(reader, gpu="RTX PRO 6000", launch_command=GLM5)["known_good"]

    assert good["title"].startswith("GLM-5-NVFP4 on 8x NVIDIA RTX PRO 6000")
    assert good["command"].startswith("python3 -m sglang.launch_server --model-path GLM-5-NVFP4")
    assert "/runbook/#rb-" in good["html_url"]
    assert good["verified"] is None and good["compared_with"] == "your launch command"
    differs = {d["name"]: (d["yours"], d["works"]) for d in good["differences"]}
    assert differs["--nsa-decode-backend"] == ("flashmla_kv", "trtllm")
    assert differs["--kv-cache-dtype"] == ("fp8_e4m3", None)
    assert "--tp-size" not in differs and "--model-path" not in differs


def test_a_command_in_the_paste_is_the_one_compared(starter_kb: None, reader: APIClient) -> None:
    good = diagnose(reader, traceback=f"$ {GLM5}\n{DECODE_CRASH}", gpu="RTX PRO 6000")
    assert good["known_good"]["compared_with"] == "the command in the paste"
    assert good["known_good"]["differences"]


def test_another_gpu_model_or_framework_has_no_known_good_launch(
    starter_kb: None, reader: APIClient
) -> None:
    assert diagnose(reader, gpu="H100", launch_command=GLM5)["known_good"] is None
    llama = "vllm serve meta-llama/Llama-3.1-8B-Instruct"
    assert diagnose(reader, gpu="RTX PRO 6000", launch_command=llama)["known_good"] is None


def test_an_architecture_alone_finds_the_entry_of_a_gpu_of_it(starter_kb: None) -> None:
    by_arch = runbook.entry_for("GLM-5-NVFP4", (), "sm_120", "sglang", None)
    assert by_arch is not None and by_arch.gpu.arch == "sm_120"
    assert runbook.entry_for("GLM-5-NVFP4", (), "sm_90", "sglang", None) is None
    assert runbook.entry_for("GLM-5-NVFP4", (), "sm_120", "vllm", None) is None
    assert runbook.entry_for(None, (), "sm_120", None, None) is None


def test_slack_links_the_known_good_launch(starter_kb: None, reader: APIClient) -> None:
    response = reader.post(
        "/api/v1/diagnose/?format=slack",
        {"traceback": DECODE_CRASH, "gpu": "RTX PRO 6000", "launch_command": GLM5},
        format="json",
    )
    texts = [b["text"]["text"] for b in response.json()["blocks"] if b.get("text")]
    line = next(t for t in texts if t.startswith("_Known to work on this setup:_"))
    assert "/runbook/#rb-" in line and "|GLM-5-NVFP4 on 8x NVIDIA RTX PRO 6000" in line
    assert "settings of yours differ" in line
