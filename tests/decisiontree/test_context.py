"""The diagnosis context: what a paste, a launch command and explicit fields tell us."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decisiontree.conditions import parse_line
from decisiontree.context import Context, build_context
from decisiontree.setup import State, assess
from decisiontree.vocabulary import load as load_vocabulary

ENV = Path(__file__).parent / "fixtures" / "env"


def paste(name: str) -> str:
    return (ENV / name).read_text(encoding="utf-8")


# ---- nvidia-smi


@pytest.mark.parametrize(
    ("fixture", "gpu", "count", "arch", "driver"),
    [
        ("captured_h200_nvidia_smi.txt", "NVIDIA H200", 1, "sm_90", "580.159.04"),
        ("captured_h200_query_gpu.csv", "NVIDIA H200", 1, "sm_90", "580.159.04"),
        ("captured_h200_nvidia_smi_L.txt", "NVIDIA H200", 1, "sm_90", None),
        ("nvidia_smi_h100_r535.txt", "NVIDIA H100 80GB HBM3", 4, "sm_90", "535.161.07"),
        ("nvidia_smi_query_b200.csv", "NVIDIA B200", 4, "sm_100", "580.82.07"),
        ("nvidia_smi_query_4090_nounits.txt", "NVIDIA GeForce RTX 4090", 2, "sm_89", "570.133.07"),
        ("nvidia_smi_L_a100.txt", "NVIDIA A100-SXM4-80GB", 4, "sm_80", None),
    ],
)
def test_it_reads_gpus_from_every_nvidia_smi_form(fixture, gpu, count, arch, driver):
    context = build_context(paste(fixture))
    assert context.gpus == (gpu,)
    assert (context.gpu_count, context.arch) == (count, arch)
    assert context.versions.get("driver") == driver
    assert context.sources["gpu.name"] == "nvidia-smi"


def test_it_reads_gpus_and_driver_from_nvidia_smi_q():
    queried = (
        "==============NVSMI LOG==============\n\n"
        "Driver Version                            : 550.127.05\n"
        "CUDA Version                              : 12.4\n\n"
        "Attached GPUs                             : 2\n"
        "GPU 00000000:18:00.0\n"
        "    Product Name                          : NVIDIA H100 80GB HBM3\n"
        "    Product Brand                         : NVIDIA\n"
        "GPU 00000000:2A:00.0\n"
        "    Product Name                          : NVIDIA H100 80GB HBM3\n"
    )
    context = build_context(queried)

    assert (context.gpus, context.gpu_count, context.arch) == (
        ("NVIDIA H100 80GB HBM3",),
        2,
        "sm_90",
    )
    assert context.versions["driver"] == "550.127.05"


def test_it_recognises_truncated_names_in_the_nvidia_smi_table():
    context = build_context(paste("nvidia_smi_rtx_pro_6000_x8.txt"))
    assert context.arch == "sm_120"
    assert context.gpu_count == 8
    assert context.versions["driver.cuda"] == "12.9"  # the driver's limit, not the toolkit


# ---- check_env / collect_env


def test_it_fills_gpu_arch_and_versions_from_sglang_check_env():
    context = build_context(paste("sglang_check_env_h200.txt"))
    assert (context.gpus, context.gpu_count, context.arch) == (("NVIDIA H200",), 8, "sm_90")
    assert (context.framework, context.framework_version) == ("sglang", "0.5.4.post1")
    assert context.versions["torch"] == "2.8.0+cu128"
    assert context.versions["torch.cuda"] == "12.8"
    assert context.versions["cuda"] == "12.8"
    assert context.versions["driver"] == "570.158.01"
    assert context.versions["flashinfer"] == "0.4.1"
    assert context.versions["transformers"] == "4.57.1"
    assert "vllm" not in context.versions  # "Module Not Found" is not a version


def test_it_reads_check_env_through_colour_codes_and_a_shell_prompt():
    context = build_context(paste("sglang_check_env_rtx_pro_6000.txt"))
    assert context.gpus == ("NVIDIA RTX PRO 6000 Blackwell Server Edition",)
    assert context.arch == "sm_120"
    assert context.versions["python"] == "3.12.11"
    assert context.versions["transformers"] == "5.2.0"
    assert context.get("framework.version") == "0.5.9"


@pytest.mark.parametrize(
    ("fixture", "gpu", "count", "vllm", "torch_cuda"),
    [
        ("vllm_collect_env_h100.txt", "NVIDIA H100 80GB HBM3", 2, "0.11.0", "12.8"),
        ("vllm_collect_env_4090_single.txt", "NVIDIA GeForce RTX 4090", 1, "0.10.0", "12.6"),
    ],
)
def test_it_fills_the_context_from_vllm_collect_env(fixture, gpu, count, vllm, torch_cuda):
    context = build_context(paste(fixture))
    assert (context.gpus, context.gpu_count) == ((gpu,), count)
    assert (context.framework, context.framework_version) == ("vllm", vllm)
    assert context.versions["torch.cuda"] == torch_cuda
    assert context.sources["framework"] == "collect_env"


def test_it_reads_pip_lines_of_collect_env():
    versions = build_context(paste("vllm_collect_env_h100.txt")).versions
    assert versions["flashinfer"] == "0.3.1"
    assert versions["nccl"] == "2.27.3"
    assert versions["driver"] == "550.127.08"


@pytest.mark.parametrize(
    "output",
    [
        "$ pip freeze | grep -E 'torch|vllm'\ntorch==2.5.1+cu124\nvllm==0.7.2\n",
        "Installing collected packages: torch, vllm\n"
        "Successfully installed nvidia-cublas-cu12-12.4.5.8 torch-2.5.1+cu124 vllm-0.7.2\n",
        "Name: torch\nVersion: 2.5.1+cu124\nSummary: Tensors and Dynamic neural networks\n"
        "---\nName: vllm\nVersion: 0.7.2\n",
    ],
    ids=["freeze", "install", "show"],
)
def test_pips_own_output_tells_the_versions_installed_and_the_wheels_cuda(output):
    context = build_context(output)

    assert context.versions["torch"] == "2.5.1+cu124"
    assert context.versions["torch.cuda"] == "12.4"  # the wheel's label
    assert context.versions["vllm"] == "0.7.2"
    assert context.sources["version.torch"] == "pip"


def test_text_that_only_looks_like_a_pin_is_no_version():
    context = build_context(
        "if a == b:\nmodel==meta-llama/Llama-3.1-8B\nName: x\nVersion: latest\n"
    )
    assert dict(context.versions) == {}


# ---- server logs


def test_server_args_reveal_a_kv_cache_dtype_the_launch_command_never_set():
    context = build_context(paste("sglang_server_args_glm5.log"))
    assert "kv-cache-dtype" not in context.launched_flags
    assert context.get("flag.kv-cache-dtype") == "fp8_e4m3"
    assert context.sources["flag.kv-cache-dtype"] == "log"
    assert context.get("flag.nsa-decode-backend") == "flashmla_kv"  # old spelling still works
    assert context.launched_flags["attention-backend"] == "triton"


def test_it_learns_the_model_from_a_server_log():
    context = build_context(paste("sglang_server_args_glm5.log"))
    assert context.model == "/data/models/GLM-5-NVFP4"
    assert (context.model_arch, context.quantization) == ("glm_moe_dsa", "nvfp4")
    assert context.framework == "sglang"


def test_it_reads_the_vllm_engine_config_and_version():
    context = build_context(paste("vllm_engine_start_h200.log"))
    assert (context.framework, context.framework_version) == ("vllm", "0.11.0")
    assert context.model == "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8"
    assert context.model_arch == "qwen3_moe"
    assert context.flags["tensor-parallel-size"] == "4"
    assert context.flags["max-model-len"] == "131072"
    assert context.flags["dtype"] == "bfloat16"
    assert context.flags["enable-expert-parallel"] == "true"


# ---- explicit input wins


def test_explicit_fields_win_over_the_paste():
    context = build_context(
        paste("sglang_check_env_h200.txt"),
        gpu="8x RTX PRO 6000",
        framework="SGLang",
        framework_version="v0.5.23",
        model="zai-org/GLM-5-NVFP4",
    )
    assert context.gpus == ("NVIDIA RTX PRO 6000 Blackwell Server Edition",)
    assert (context.gpu_count, context.arch) == (8, "sm_120")
    assert (context.framework, context.framework_version) == ("sglang", "0.5.23")
    assert context.sources["gpu.arch"] == "user"
    assert context.versions["torch"] == "2.8.0+cu128"  # what was not overridden stays


def test_a_launch_command_gives_flags_model_and_framework():
    context = build_context(
        launch_command="vllm serve openai/gpt-oss-120b -tp 2 --kv-cache-dtype fp8 --bogus 1"
    )
    assert (context.framework, context.model) == ("vllm", "openai/gpt-oss-120b")
    assert (context.model_arch, context.quantization) == ("gpt_oss", "mxfp4")
    assert context.get("flag.tensor-parallel-size") == "2"
    assert context.get("flag.-tp") == "2"
    assert context.unknown_flags == ("--bogus",)


def test_the_quantization_flag_beats_a_guess_from_the_name():
    context = build_context(
        launch_command="python -m sglang.launch_server --model-path org/Foo-FP8 "
        "--quantization modelopt_fp4"
    )
    assert context.quantization == "nvfp4"


def test_a_gpu_field_may_name_only_the_architecture():
    context = build_context(gpu="sm120")
    assert (context.gpus, context.arch) == ((), "sm_120")


def test_it_takes_gpus_and_model_from_prose_when_nothing_better_exists():
    context = build_context(
        "Serving zai-org/GLM-5-NVFP4 on 8x RTX PRO 6000 Blackwell crashes on the first request."
    )
    assert context.arch == "sm_120" and context.gpu_count == 8
    assert context.model == "zai-org/GLM-5-NVFP4"
    assert context.sources["gpu.arch"] == "text"


def test_prose_with_numbers_adds_no_gpu():
    context = build_context("Throughput fell from 4090 to 3080 tok/s with 8 requests in flight.")
    assert context.gpus == () and context.arch is None


def test_a_pytorch_list_of_supported_archs_is_not_the_device():
    warning = (
        "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
        "the current PyTorch installation. The current PyTorch install supports CUDA "
        "capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90."
    )
    assert build_context(warning).arch == "sm_120"
    assert build_context("supports sm_80 sm_86 sm_90").arch is None


def test_the_gpus_a_requirement_lists_are_not_the_device():
    """A kernel's refusal lists what it needs; only its "got" is the GPU it ran on."""
    assert build_context("RuntimeError: FlashInfer requires GPUs with sm75 or higher").arch is None
    assert build_context("ValueError: dequant requires SM100/SM103, got sm120").arch == "sm_120"
    assert build_context("RuntimeError: the kernel failed to launch on sm_90").arch == "sm_90"


# ---- Context behaviour


def test_get_answers_condition_keys():
    context = Context(
        gpus=("NVIDIA H200",),
        arch="sm_90",
        framework="sglang",
        framework_version="0.5.9",
        model="m",
        model_arch="glm_moe_dsa",
        quantization="nvfp4",
        flags={"kv-cache-dtype": "bf16"},
        versions={"torch": "2.9.1"},
    )
    assert context.get("gpu.arch") == "sm_90"
    assert context.get("gpu.name") == "NVIDIA H200"
    assert context.get("flag.kv_cache_dtype") == "bf16"
    assert context.get("flag.attention-backend") is None
    assert context.get("model.arch") == "glm_moe_dsa"
    assert context.get("version.torch") == "2.9.1"
    assert context.get("no.such.key") is None


def test_with_answer_fills_in_what_the_user_tells_us():
    context = Context().with_answer("gpu.name", "RTX PRO 6000")
    assert (context.arch, context.sources["gpu.name"]) == ("sm_120", "user")
    context = context.with_answer("flag.--nsa-decode-backend", "trtllm")
    assert context.flags == {"dsa-decode-backend": "trtllm"}
    context = context.with_answer("model.name", "GLM-5-NVFP4")
    assert (context.model_arch, context.quantization) == ("glm_moe_dsa", "nvfp4")
    assert context.with_answer("gpu.arch", "SM 100").arch == "sm_100"
    assert Context().get("gpu.arch") is None  # the original is untouched


def test_an_answer_about_the_framework_its_release_or_the_quantization_is_kept():
    context = (
        Context()
        .with_answer("framework", "SGLang")
        .with_answer("framework.version", "0.5.9")
        .with_answer("model.quantization", "fp8")
    )
    assert (context.framework, context.framework_version, context.quantization) == (
        "sglang",
        "0.5.9",
        "fp8",
    )
    assert context.sources["framework.version"] == "user"
    with pytest.raises(KeyError):
        Context().with_answer("model.colour", "blue")


# ---- each source on its own (nothing else in the paste says the same thing)


def test_the_model_field_alone_names_the_model() -> None:
    context = build_context("RuntimeError: the engine died", model=" org/Tiny-1B ")
    assert context.model == "org/Tiny-1B"
    assert context.sources["model.name"] == "user"


def test_a_gpu_field_with_a_count_gives_the_count() -> None:
    context = build_context(gpu="4x H100")
    assert (context.gpus, context.gpu_count, context.arch) == (("NVIDIA H100",), 4, "sm_90")


def test_a_gpu_field_written_in_words_gives_the_count() -> None:
    # "six" ends in an x, and the x of "8x" is a multiplication sign, not the number's.
    assert build_context(gpu="six H200").gpu_count == 6
    assert build_context("We serve it on six H200 cards.").gpu_count == 6


def test_a_traceback_path_gives_the_python_release() -> None:
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/vllm/engine/core.py", line 7, in run\n'
        "    step()\n"
        "ValueError: no free blocks\n"
    )
    context = build_context(paste)
    assert context.versions["python"] == "3.11"
    assert context.framework == "vllm"


def test_a_traceback_through_the_frameworks_platform_code_names_the_framework() -> None:
    """vLLM checks the GPU in `vllm/platforms/` before any engine frame runs."""
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/vllm/platforms/cuda.py", line 485, in '
        "get_attn_backend_cls\n"
        "    raise ValueError(\n"
        "ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid\n"
    )
    assert build_context(paste).framework == "vllm"
    assert build_context(paste.replace("/vllm/", "/src/")).framework is None


def test_nvidia_smi_version_lines_give_the_driver_and_its_cuda() -> None:
    printed = (
        "NVIDIA-SMI version  : 575.51.03\n"
        "NVML version        : 575.51\n"
        "DRIVER version      : 575.51.03\n"
        "CUDA Version        : 12.9\n"
    )
    versions = build_context(printed).versions
    assert (versions["driver"], versions["driver.cuda"]) == ("575.51.03", "12.9")


def test_a_gpu_the_vocabulary_does_not_know_keeps_the_name_nvidia_smi_printed() -> None:
    listed = (
        "GPU 0: NVIDIA Quasar Q9 (UUID: GPU-0a1b2c3d-0000-1111-2222-333344445555)\n"
        "GPU 1: NVIDIA Quasar Q9 (UUID: GPU-0a1b2c3d-0000-1111-2222-333344446666)\n"
    )
    context = build_context(listed)
    assert (context.gpus, context.gpu_count, context.arch) == (("NVIDIA Quasar Q9",), 2, None)


@pytest.mark.parametrize(
    ("said", "release"),
    [
        ("使用 vllm 0.8.5 启动 Qwen2.5-72B 时报错", ("vllm", "0.8.5")),
        ("I am on vLLM v0.10.1.1 with two GPUs.", ("vllm", "0.10.1.1")),
        ("sglang version 0.4.6.post1 crashes on start", ("sglang", "0.4.6.post1")),
        # An upgrade names two releases: neither is known to be the one that failed.
        ("after upgrading vllm 0.8.5 to vllm 0.9.1 it broke", (None, None)),
        ("the vllm 12 workers all died", (None, None)),
    ],
)
def test_a_release_named_in_a_sentence_is_the_frameworks(said: str, release: tuple) -> None:
    context = build_context(said)
    assert (context.framework, context.framework_version) == release
    # What a tool printed says it more firmly than the sentence.
    assert build_context(f"{said}\nvLLM Version: 0.11.0").framework_version == "0.11.0"


@pytest.mark.parametrize(
    ("log", "framework"),
    [
        # vLLM's stamp and place, behind its engine's process tag
        (
            "(EngineCore_DP0 pid=812) ERROR 12-07 01:00:05 [core.py:700] ValueError: no room",
            "vllm",
        ),
        ("INFO 12-07 01:00:01 llm_engine.py:72] Initializing an LLM engine", "vllm"),
        # SGLang's stamp with its rank tags, behind docker compose's service column
        ("sglang-1  | [2026-12-07 01:00:05 DP0 TP3] Scheduler hit an exception", "sglang"),
        # a clock in brackets or a level alone is anyone's
        ("[2026-12-07 01:00:05] Scheduler hit an exception", None),
        ("ERROR 2026-12-07 01:00:05 engine stopped", None),
        # two servers' logs, a line each: neither is the paste's
        (
            "INFO 12-07 01:00:01 [core.py:1] up\n[2026-12-07 01:00:05 TP0] Load weight begin",
            None,
        ),
    ],
)
def test_whose_log_it_is_names_the_framework(log: str, framework: str | None) -> None:
    context = build_context(log)

    assert context.framework == framework
    on_vllm = parse_line("framework = vllm")
    expected = {"vllm": State.MET, "sglang": State.CONTRADICTED, None: State.UNKNOWN}
    assert assess(on_vllm, context, load_vocabulary()) is expected[framework]


def test_the_framework_the_user_names_outranks_the_logs_shape() -> None:
    log = "ERROR 12-07 01:00:05 [core.py:700] ValueError: no room"

    assert build_context(log, framework="sglang").framework == "sglang"


def test_a_laptop_or_older_card_decides_a_condition_on_the_compute_capability() -> None:
    """A report from an RTX 3060 laptop or a Kaggle P100: its architecture is known, so a
    finding seen only below compute capability 8.0 is met on one and not the other."""
    below_ampere = parse_line("gpu.capability = <8.0")
    listed = "GPU 0: NVIDIA GeForce RTX 3060 Laptop GPU (UUID: GPU-0a1b2c3d-0000-1111-2222-3333)"
    laptop = build_context(listed)
    assert laptop.arch == "sm_86"
    assert assess(below_ampere, laptop, load_vocabulary()) is State.CONTRADICTED
    assert assess(below_ampere, build_context(gpu="Tesla P100"), load_vocabulary()) is State.MET


COLLECT_ENV = """\
PyTorch version: 2.8.0+cu128
Is debug build: False
Python version: 3.12.9 (main, Feb  4 2026, 10:11:12) [GCC 13.3.0] (64-bit runtime)
vLLM Version: 0.11.2
"""


def test_collect_env_gives_the_python_release_and_vllm() -> None:
    context = build_context(COLLECT_ENV)
    assert context.versions["python"] == "3.12.9"
    assert (context.framework, context.framework_version) == ("vllm", "0.11.2")


def test_the_vllm_in_collect_env_is_known_when_the_user_runs_sglang() -> None:
    # SGLang installs vLLM beside it; a finding may depend on the vLLM release too.
    context = build_context(COLLECT_ENV, framework="sglang", framework_version="0.5.9")
    assert context.versions["vllm"] == "0.11.2"
    assert context.versions["sglang"] == "0.5.9"


def test_server_args_alone_name_the_model() -> None:
    log = (
        "[2026-03-01 09:00:00] server_args=ServerArgs(model_path='/srv/weights/Tiny-1B', "
        "tp_size=1, kv_cache_dtype='auto')\n"
    )
    context = build_context(log)
    assert context.model == "/srv/weights/Tiny-1B"
    assert context.sources["model.name"] == "log"


@pytest.mark.parametrize("gpu", [g.name for g in load_vocabulary().gpus])
def test_every_known_gpu_is_read_from_a_query_gpu_row(gpu):
    """A CSV row is looked up only where a GPU name stands in it: no known name is missed."""
    row = f"3, {gpu}, 9.0, 81559 MiB, 0 MiB, 570.86.15\n"
    context = build_context(row)
    assert context.gpus == (gpu,)
    assert context.sources["gpu.name"] == "nvidia-smi"


@pytest.mark.parametrize("gpu", [g.name for g in load_vocabulary().gpus])
def test_every_known_gpu_is_counted_in_prose(gpu):
    """The longest name wins over a shorter alias inside it ("H100 80GB HBM3", not "H100")."""
    mentions = load_vocabulary().gpus_in_text(f"We run 8x {gpu} GPUs on one node.")
    assert [(found.name, count) for found, count in mentions] == [(gpu, 8)]


def test_the_image_tag_of_the_launch_command_is_the_release_unless_the_log_says_otherwise() -> None:
    launch = "docker run --gpus all vllm/vllm-openai:v0.9.1 --model Qwen/Qwen3-8B"

    tagged = build_context("RuntimeError: boom", launch_command=launch)
    assert (tagged.framework, tagged.framework_version) == ("vllm", "0.9.1")
    assert tagged.sources["framework.version"] == "launch_command"

    logged = build_context(
        "INFO 12-01 08:00:00 [api_server.py:1034] vLLM API server version 0.10.0\n"
        "RuntimeError: boom",
        launch_command=launch,
    )
    assert logged.framework_version == "0.10.0"  # what ran, as the server printed it


@pytest.mark.parametrize(
    ("said", "framework", "release"),
    [
        ("    Image:          vllm/vllm-openai:v0.6.3", "vllm", "0.6.3"),  # kubectl describe
        ("    image: lmsysorg/sglang:v0.4.1-cu124", "sglang", "0.4.1"),  # a compose file
    ],
)
def test_an_images_release_tag_in_the_paste_names_the_release(said, framework, release) -> None:
    context = build_context(f"{said}\n    Reason:       OOMKilled\n")
    assert (context.framework, context.framework_version) == (framework, release)


def test_an_image_without_a_release_tag_names_no_release() -> None:
    context = build_context("    Image:          vllm/vllm-openai:latest\nKilled\n")
    assert context.framework_version is None


OFFLINE_SCRIPT = """\
Traceback (most recent call last):
  File "/home/me/batch.py", line 4, in <module>
    llm = LLM(model="Qwen/Qwen2.5-72B-Instruct", tensor_parallel_size=4,
              gpu_memory_utilization=0.95, kv_cache_dtype="fp8")
  File "/opt/venv/lib/python3.12/site-packages/vllm/entrypoints/llm.py", line 243, in __init__
    engine_args = EngineArgs(model=model, **kwargs)
ValueError: No available memory for the cache blocks.
"""


def test_a_scripts_offline_engine_call_is_read_as_its_launch() -> None:
    """The keyword arguments of vLLM's LLM(...) are its flags; the variables vLLM's own
    frames pass on say nothing."""
    context = build_context(OFFLINE_SCRIPT)

    assert (context.framework, context.model) == ("vllm", "Qwen/Qwen2.5-72B-Instruct")
    assert context.flags["tensor-parallel-size"] == "4"
    assert context.flags["kv-cache-dtype"] == "fp8"
    assert context.launched_flags["gpu-memory-utilization"] == "0.95"
    assert context.found_command is None  # a script, not a command to correct


def test_sglangs_offline_engine_takes_its_own_field_names() -> None:
    script = 'import sglang as sgl\nllm = sgl.Engine(model_path="zai-org/GLM-5-FP8", tp_size=8)\n'
    context = build_context(script)

    assert (context.framework, context.model) == ("sglang", "zai-org/GLM-5-FP8")
    assert context.flags["tp-size"] == "8"


def test_a_class_named_llm_of_another_library_is_not_vllms() -> None:
    context = build_context("from otherlib import LLM\nllm = LLM(temperature=0.2)\n")
    assert context.framework is None and not context.flags


def test_an_engine_call_cut_at_its_first_line_still_gives_what_that_line_has() -> None:
    """Python before 3.11 shows a statement's first line only."""
    first_line_only = OFFLINE_SCRIPT.replace(
        '              gpu_memory_utilization=0.95, kv_cache_dtype="fp8")\n', ""
    )
    context = build_context(first_line_only)

    assert context.flags["tensor-parallel-size"] == "4"
    assert "kv-cache-dtype" not in context.flags


def test_a_traceback_escaped_into_a_json_body_gives_the_same_setup() -> None:
    escaped = "HTTP 500: " + json.dumps({"detail": OFFLINE_SCRIPT})
    context = build_context(escaped)

    assert (context.framework, context.model) == ("vllm", "Qwen/Qwen2.5-72B-Instruct")
    assert context.flags["kv-cache-dtype"] == "fp8"


def test_a_launch_given_as_an_engine_call_is_read_without_naming_the_framework() -> None:
    context = build_context(launch_command='LLM("Qwen/Qwen3-8B", max_model_len=8192)')
    assert (context.framework, context.flags["max-model-len"]) == ("vllm", "8192")


# ---- what the framework's own message states about the device and the checkpoint


@pytest.mark.parametrize(
    ("paste", "capability"),
    [
        # vLLM's and SGLang's quantization check print it as major*10+minor.
        (
            "ValueError: The quantization method awq is not supported for the current GPU. "
            "Minimum capability: 75. Current capability: 70.",
            "7.0",
        ),
        (
            "RuntimeError: Quantization scheme is not supported for the current GPU. "
            "Min capability: 80. Current capability: 75.",
            "7.5",
        ),
        (
            "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
            "8.0. Your GPU has compute capability 7.0.",
            "7.0",
        ),
        ("float8 needs compute capability >= 8.9 (current GPU compute capability: 8.6)", "8.6"),
        ("Unsupported KV cache dtype on 'NVIDIA Foo' (with compute capability 8.9)", "8.9"),
        # A capability the vocabulary has no architecture for is kept as a capability.
        ("Found GPU0 Tesla K80 which is of cuda capability 3.7.", "3.7"),
    ],
)
def test_the_devices_capability_is_read_where_the_framework_states_it(
    paste: str, capability: str
) -> None:
    assert build_context(paste).get("gpu.capability") == capability


@pytest.mark.parametrize(
    "paste",
    [
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",
        "Minimum capability: 80.",
        "This kernel requires a GPU that has compute capability 9.0 or newer.",
        "float8 requires GPU compute capability >= 8.9",
    ],
)
def test_a_required_capability_is_not_taken_for_the_devices(paste: str) -> None:
    assert build_context(paste).get("gpu.capability") is None


def test_the_quantization_method_a_message_names_outranks_the_models_name() -> None:
    paste = (
        "ValueError: The quantization method modelopt_fp8 is not supported for the current "
        "GPU. Minimum capability: 89. Current capability: 80."
    )
    context = build_context(paste, model="acme/Foo-70B-AWQ")
    assert (context.quantization, context.arch) == ("fp8", "sm_80")
    assert build_context("ValueError: no quantization method here").quantization is None
