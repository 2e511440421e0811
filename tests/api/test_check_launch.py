"""POST /api/v1/check-launch/: a launch command in, the known issues its setup meets out."""

from __future__ import annotations

from rest_framework.test import APIClient

CHECK = "/api/v1/check-launch/"
# The seeds' model on the seeds' GPU, launched without a KV cache dtype.
GLM5 = "python3 -m sglang.launch_server --model-path GLM-5-NVFP4 --tp-size 8"


def titles(body: dict) -> list[str]:
    return [risk["finding"]["title"] for risk in body["risks"]]


def test_a_launch_that_leaves_the_kv_cache_dtype_to_sglang_is_warned_before_it_runs(
    reader: APIClient, starter_kb: None
) -> None:
    body = reader.post(CHECK, {"launch_command": GLM5, "gpu": "RTX PRO 6000"}, format="json")

    assert body.status_code == 200
    risks = body.json()["risks"]
    fp8 = next(r for r in risks if r["finding"]["title"].startswith("Omitting --kv-cache-dtype"))
    assert not fp8["certain"]
    assert [c["in_words"] for c in fp8["open"]] == ["--kv-cache-dtype is not bf16"]
    assert fp8["fixes"][0]["corrected_command"] == f"{GLM5} --kv-cache-dtype bf16"
    assert body.json()["summary"].startswith("May meet")
    assert body.json()["known_good"]["command"].startswith("python3 -m sglang.launch_server")
    assert body.json()["builds"] == "CUDA 12.8 or newer (PyTorch's cu128 wheels or later)"
    ampere = reader.post(CHECK, {"launch_command": GLM5, "gpu": "A100"}, format="json")
    assert ampere.json()["builds"] == ""  # any CUDA a current build uses compiles for it


def test_the_fixed_launch_meets_none_of_them(reader: APIClient, starter_kb: None) -> None:
    warned = reader.post(CHECK, {"launch_command": GLM5, "gpu": "RTX PRO 6000"}, format="json")
    fixed = GLM5 + " --kv-cache-dtype bf16 --dsa-decode-backend trtllm --dsa-prefill-backend trtllm"

    body = reader.post(CHECK, {"launch_command": fixed, "gpu": "RTX PRO 6000"}, format="json")

    assert titles(warned.json()) and titles(body.json()) == []
    assert body.json()["summary"] == "No known issue on this setup."


def test_a_setting_met_on_the_command_line_is_certain(reader: APIClient, starter_kb: None) -> None:
    launch = GLM5 + " --mem-fraction-static 0.95 --kv-cache-dtype bf16"

    body = reader.post(CHECK, {"launch_command": launch, "gpu": "RTX PRO 6000"}, format="json")

    [risk] = [r for r in body.json()["risks"] if r["certain"]]
    assert "--mem-fraction-static 0.95" in risk["finding"]["title"]
    assert risk["fixes"][0]["fix"]["command_changes"] == ["--mem-fraction-static 0.88"]


def test_weights_larger_than_a_gpus_share_get_a_split_that_holds_them(
    reader: APIClient, starter_kb: None
) -> None:
    """70B in bf16 is 130 GiB: one H100's 72 GiB at --gpu-memory-utilization 0.9 cannot
    hold it, two can."""
    launch = "vllm serve meta-llama/Llama-3.1-70B-Instruct"
    asked = {
        "launch_command": launch,
        "gpu": "8x H100",
        "framework": "vllm",
        "framework_version": "0.11.0",
    }

    body = reader.post(CHECK, asked, format="json").json()

    assert body["summary"].startswith("The model's weights alone do not fit each GPU")
    weights = body["weights"]
    assert weights["kind"] == "weights_do_not_fit"
    assert weights["values"] == [
        {
            "flag": "tensor-parallel-size",
            "value": "2",
            "bound": "at_least",
            "why": "the fewest GPUs that hold the weights (65.19 GiB each)",
        }
    ]
    assert weights["corrected_command"] == f"{launch} --tensor-parallel-size 2"
    split = reader.post(
        CHECK, {**asked, "launch_command": weights["corrected_command"]}, format="json"
    )
    # Two hold them with 6.81 GiB to spare each: little, so the check of that launch says
    # so and names the next split, without calling it an issue.
    tight = split.json()["weights"]
    assert tight["kind"] == "weights_fill_share"
    assert "--tensor-parallel-size 4 puts about 32.60 GiB on each GPU" in tight["text"]
    assert split.json()["summary"] == "No known issue on this setup."


def test_it_needs_a_token_and_a_launch_command(reader: APIClient) -> None:
    assert APIClient().post(CHECK, {"launch_command": GLM5}, format="json").status_code == 401
    missing = reader.post(CHECK, {"gpu": "H100"}, format="json")
    assert missing.status_code == 400 and "launch_command" in missing.content.decode()


def test_a_scripts_engine_call_is_checked_as_its_launch_without_a_command_to_correct(
    reader: APIClient, starter_kb: None
) -> None:
    """An offline user pastes the call their script makes: the weights are read at its
    tensor-parallel size, and no command line is written for a Python call."""
    call = 'llm = LLM(model="Qwen/Qwen2.5-72B-Instruct", tensor_parallel_size=2)'
    body = reader.post(CHECK, {"launch_command": call, "gpu": "A100"}, format="json").json()

    weights = body["weights"]
    assert "67.06 GiB on each GPU at --tensor-parallel-size 2" in weights["text"]
    assert weights["corrected_command"] is None


def test_a_backend_the_release_refuses_on_the_gpu_is_told_first_with_what_runs_there(
    reader: APIClient, starter_kb: None
) -> None:
    launch = "vllm serve deepseek-ai/DeepSeek-V3 --attention-backend FLASHMLA"

    body = reader.post(CHECK, {"launch_command": launch, "gpu": "RTX 5090"}, format="json").json()

    [reading] = body["gpu_requirements"]
    assert reading["flags"] == ["--attention-backend FLASHMLA"]
    assert reading["runs_on"] == ["sm_90", "sm_100", "sm_103"]
    assert "`TRITON_MLA`" in reading["remedy"]
    assert body["summary"].startswith("--attention-backend FLASHMLA does not run on sm_120")
    hopper = reader.post(CHECK, {"launch_command": launch, "gpu": "H100"}, format="json").json()
    assert hopper["gpu_requirements"] == []
