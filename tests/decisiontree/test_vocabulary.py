"""The built-in vocabulary: what users write about GPUs, flags and models, understood."""

from __future__ import annotations

import subprocess
import sys

import pytest

from decisiontree.context import build_context
from decisiontree.flags import known_flag
from decisiontree.vocabulary import load
from tests.decisiontree.conftest import shared_by_the_module

PRO_6000 = "NVIDIA RTX PRO 6000 Blackwell Server Edition"


@pytest.fixture(scope=shared_by_the_module)
def vocab():
    return load()


# ---- GPUs


@pytest.mark.parametrize(
    "written",
    [
        "RTX PRO 6000",
        "rtx pro 6000",
        "PRO 6000 Blackwell",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "NVIDIA_RTX_PRO_6000_Blackwell_Workstation_Edition",
    ],
)
def test_it_reads_every_spelling_of_rtx_pro_6000_as_sm_120(vocab, written):
    gpu = vocab.gpu(written)
    assert gpu is not None
    assert (gpu.arch, gpu.compute_capability, gpu.family) == ("sm_120", "12.0", "Blackwell")
    assert gpu.memory_gb == 96


@pytest.mark.parametrize(
    ("written", "name", "arch"),
    [
        ("H200", "NVIDIA H200", "sm_90"),
        ("H100 SXM", "NVIDIA H100 80GB HBM3", "sm_90"),
        ("NVIDIA_H100_80GB_HBM3", "NVIDIA H100 80GB HBM3", "sm_90"),
        ("b200", "NVIDIA B200", "sm_100"),
        ("4090", "NVIDIA GeForce RTX 4090", "sm_89"),
        ("A100 40GB", "NVIDIA A100-SXM4-40GB", "sm_80"),
        ("A100 80 GB", "NVIDIA A100-SXM4-80GB", "sm_80"),
        # Cards of every line since Pascal that reports name, laptop parts, Jetson modules
        ("GeForce RTX 3060 Laptop GPU", "NVIDIA GeForce RTX 3060 Laptop GPU", "sm_86"),
        ("RTX 4090 Laptop GPU", "NVIDIA GeForce RTX 4090 Laptop GPU", "sm_89"),
        ("rtx4060ti", "NVIDIA GeForce RTX 4060 Ti", "sm_89"),
        ("RTX 5060 Ti", "NVIDIA GeForce RTX 5060 Ti", "sm_120"),
        ("NVIDIA GeForce RTX 2080 Ti", "NVIDIA GeForce RTX 2080 Ti", "sm_75"),
        ("GTX 1080 Ti", "NVIDIA GeForce GTX 1080 Ti", "sm_61"),
        ("Tesla P100", "Tesla P100-PCIE-16GB", "sm_60"),
        ("Jetson AGX Orin", "NVIDIA Jetson AGX Orin", "sm_87"),
    ],
)
def test_it_maps_short_gpu_names_to_the_nvidia_smi_name(vocab, written, name, arch):
    gpu = vocab.gpu(written)
    assert gpu is not None and (gpu.name, gpu.arch) == (name, arch)


def test_it_does_not_pretend_a_bare_arch_is_a_gpu(vocab):
    assert vocab.gpu("sm_120") is None
    assert vocab.gpu("a fast card") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8x NVIDIA RTX PRO 6000 Blackwell", [(PRO_6000, 8)]),
        ("on eight RTX PRO 6000 Blackwell GPUs", [(PRO_6000, 8)]),
        ("2 x H100 80GB", [("NVIDIA H100 80GB HBM3", 2)]),
        ("a node of 4 H200s and one B200", [("NVIDIA H200", 4), ("NVIDIA B200", 1)]),
        ("B200 x 8 (HGX)", [("NVIDIA B200", 8)]),
        ("two 4090 cards", [("NVIDIA GeForce RTX 4090", 2)]),
        # Chinese counts cards with a measure word: "4 张", "8卡", "A100 4张"
        ("显卡是 4 张 A100，报错如下", [("NVIDIA A100-SXM4-80GB", 4)]),
        ("8卡H100 上启动", [("NVIDIA H100", 8)]),
        ("用 2 块 4090 跑", [("NVIDIA GeForce RTX 4090", 2)]),
    ],
)
def test_it_counts_gpus_mentioned_in_prose(vocab, text, expected):
    assert [(g.name, n) for g, n in vocab.gpus_in_text(text)] == expected


@pytest.mark.parametrize(
    "prose",
    [
        "Latency went from 4090 ms to 3080 ms after 100 requests on port 5090.",
        "Allocated 80 GB, 6000 tokens per second, 40 layers, batch 8, rank 2 of 8.",
        "The A-team reviewed PR #3090 at 10:40 and merged it.",
        "Retried 3060 times; listening on 5070, then on 4070 after the restart.",
    ],
)
def test_it_finds_no_gpu_in_ordinary_prose_with_numbers(vocab, prose):
    assert vocab.gpus_in_text(prose) == []


@pytest.mark.parametrize(
    ("text", "arch"),
    [
        ("sm120", "sm_120"),
        ("SM 120", "sm_120"),
        ("built for sm_120a", "sm_120"),
        ("compute capability 12.0", "sm_120"),
        ("compute_cap: 9.0", "sm_90"),
        ("NVIDIA GeForce RTX 5090", "sm_120"),
        ("H100", "sm_90"),
        ("sm_12", None),
        ("nothing here", None),
    ],
)
def test_it_reads_the_architecture_from_any_common_spelling(vocab, text, arch):
    assert vocab.arch_of(text) == arch


# ---- flags


@pytest.mark.parametrize(
    ("written", "framework", "canonical"),
    [
        ("kv_cache_dtype", None, "kv-cache-dtype"),
        ("--KV-CACHE-DTYPE", "vllm", "kv-cache-dtype"),
        ("--nsa-decode-backend", None, "dsa-decode-backend"),
        ("nsa_prefill_backend", "sglang", "dsa-prefill-backend"),
        ("--cuda-graph-max-bs", "sglang", "cuda-graph-max-bs-decode"),
        ("--tensor-parallel-size", "sglang", "tp-size"),
        ("-tp", "vllm", "tensor-parallel-size"),
        ("--tp", "sglang", "tp-size"),  # argparse accepts a unique prefix
        ("--disable-prefix-caching", "vllm", "enable-prefix-caching"),
    ],
)
def test_it_understands_any_spelling_of_a_flag(vocab, written, framework, canonical):
    assert known_flag(written, framework) == canonical


def test_it_knows_a_flag_belongs_to_one_framework(vocab):
    assert known_flag("mem-fraction-static", "vllm") is None
    assert known_flag("gpu-memory-utilization", "sglang") is None
    assert known_flag("--not-a-real-flag") is None


def test_it_knows_flag_types_choices_and_defaults(vocab):
    kv = vocab.flag("kv-cache-dtype", "sglang")
    assert kv is not None and kv.type == "str" and kv.default == "auto"
    assert "fp8_e4m3" in kv.choices and "bf16" in kv.choices
    assert vocab.flag("trust-remote-code", "sglang").type == "bool"
    assert vocab.flag("mem-fraction-static", "sglang").type == "float"
    assert vocab.flag("disable-cuda-graph", "sglang").deprecated


def test_it_spells_renamed_flags_for_the_release_in_use(vocab):
    assert vocab.spell("dsa-decode-backend", "sglang", "0.5.9") == "--nsa-decode-backend"
    assert vocab.spell("dsa-decode-backend", "sglang", "0.5.4.post1") == "--nsa-decode-backend"
    assert vocab.spell("nsa-decode-backend", "sglang", "0.5.23") == "--dsa-decode-backend"
    assert vocab.spell("dsa-decode-backend", "sglang", None) == "--dsa-decode-backend"
    assert vocab.spell("kv-cache-dtype", "sglang", "0.5.9") == "--kv-cache-dtype"


def test_it_records_the_release_that_last_used_an_old_name(vocab):
    spec = vocab.flag("--nsa-decode-backend", "sglang")
    assert spec.name == "dsa-decode-backend"
    assert ("nsa-decode-backend", "0.5.9") in spec.renamed


def test_it_maps_a_flag_to_its_counterpart_in_the_other_framework(vocab):
    row = vocab.equivalent_flag("--tp", "sglang", "vllm")
    assert row is not None and (row.vllm, row.relation) == ("tensor-parallel-size", "same")
    memory = vocab.equivalent_flag("mem-fraction-static", "sglang", "vllm")
    assert memory.vllm == "gpu-memory-utilization" and memory.relation == "approximate"


# ---- launch commands


def test_it_understands_an_old_sglang_launch_over_ssh(vocab):
    command = vocab.parse_launch_command(
        "ssh root@10.0.0.7 'cd /srv && SGLANG_DISABLE_DEEPGEMM=1 nohup python3 -m "
        "sglang.launch_server \\\n --model-path /models/GLM-5-NVFP4 --tp 8 --trust-remote-code \\\n"
        " --nsa-decode-backend trtllm --mem-fraction-static=0.88 > /tmp/s.log 2>&1 &'"
    )
    assert command.framework == "sglang"
    assert command.model == "/models/GLM-5-NVFP4"
    assert command.env == {"SGLANG_DISABLE_DEEPGEMM": "1"}
    assert command.flags["dsa-decode-backend"] == "trtllm"
    assert command.flags["tp-size"] == "8"
    assert command.flags["trust-remote-code"] == "true"
    assert command.flags["mem-fraction-static"] == "0.88"


def test_it_understands_vllm_serve_with_short_and_negated_flags(vocab):
    command = vocab.parse_launch_command(
        "CUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/Qwen3-30B-A3B-FP8 -tp 2 --enforce-eager "
        "--no-enable-prefix-caching --max_model_len 32k"
    )
    assert (command.framework, command.model) == ("vllm", "Qwen/Qwen3-30B-A3B-FP8")
    assert command.flags == {
        "tensor-parallel-size": "2",
        "enforce-eager": "true",
        "enable-prefix-caching": "false",
        "max-model-len": "32k",
    }
    assert command.env == {"CUDA_VISIBLE_DEVICES": "0,1"}


@pytest.mark.parametrize(
    ("cmd", "framework", "model"),
    [
        ("python -m vllm.entrypoints.openai.api_server --model m/a --port 8000", "vllm", "m/a"),
        ("sglang serve --model-path org/b --port 30000", "sglang", "org/b"),
        ("docker run --gpus all vllm/vllm-openai:v0.11.0 --model org/c", "vllm", "org/c"),
        # The image pulled through a registry or a mirror is the same image.
        ("docker run docker.io/vllm/vllm-openai:v0.11.0 --model org/e", "vllm", "org/e"),
        ("podman run mirror.lan:5000/vllm/vllm-openai --model org/f", "vllm", "org/f"),
        ('bash -c "python3 -m sglang.launch_server --model org/d"', "sglang", "org/d"),
    ],
)
def test_it_recognises_each_server_entry_point(vocab, cmd, framework, model):
    command = vocab.parse_launch_command(cmd)
    assert (command.framework, command.model) == (framework, model)


def test_it_reports_unknown_flags_instead_of_dropping_them(vocab):
    command = vocab.parse_launch_command(
        "python -m sglang.launch_server --model-path m --enable-magic 3 --kv-cache-dtype bf16"
    )
    assert command.unknown_flags == ("--enable-magic",)
    assert command.flags["kv-cache-dtype"] == "bf16"  # the unknown flag did not eat it


def test_it_treats_a_0_5_23_name_in_an_old_command_as_the_same_flag(vocab):
    launch = "python -m sglang.launch_server "
    old = vocab.parse_launch_command(launch + "--nsa-prefill-backend tilelang")
    new = vocab.parse_launch_command(launch + "--dsa-prefill-backend tilelang")
    assert old.flags == new.flags == {"dsa-prefill-backend": "tilelang"}


def test_it_infers_the_framework_from_bare_flags(vocab):
    assert vocab.parse_launch_command("--mem-fraction-static 0.8 --tp 4").framework == "sglang"
    assert vocab.parse_launch_command("--gpu-memory-utilization 0.8 -tp 4").framework == "vllm"


def test_it_keeps_every_value_of_a_list_flag(vocab):
    command = vocab.parse_launch_command("vllm serve m --cudagraph-capture-sizes 1 2 4 8 --seed 3")
    assert command.flags["cudagraph-capture-sizes"] == "1 2 4 8"
    assert command.flags["seed"] == "3"


# ---- flags in prose and logs


def test_it_finds_flags_and_values_in_a_sentence(vocab):
    found = vocab.flags_in_text(
        "Lowered --mem-fraction-static from 0.95 to 0.88, switched to --attention-backend "
        "triton and kept --kv-cache-dtype fp8_e4m3 which crashed."
    )
    assert found == [
        ("mem-fraction-static", "0.88"),
        ("attention-backend", "triton"),
        ("kv-cache-dtype", "fp8_e4m3"),
    ]


def test_it_does_not_take_an_ordinary_word_for_a_flag_value(vocab):
    found = vocab.flags_in_text("the --attention-backend and --tp-size flags matter")
    assert found == [("attention-backend", None), ("tp-size", None)]


def test_it_reads_flags_from_a_server_args_dump(vocab):
    found = dict(
        vocab.flags_in_text(
            "server_args=ServerArgs(kv_cache_dtype='fp8_e4m3', nsa_decode_backend='flashmla_kv', "
            "disable_cuda_graph=False, chunked_prefill_size=None)"
        )
    )
    assert found["kv-cache-dtype"] == "fp8_e4m3"
    assert found["dsa-decode-backend"] == "flashmla_kv"
    assert found["disable-cuda-graph"] == "false"
    assert found["chunked-prefill-size"] is None


# ---- models


@pytest.mark.parametrize(
    ("name", "family", "arch", "quantization"),
    [
        ("GLM-5-NVFP4", "glm", "glm_moe_dsa", "nvfp4"),
        ("/data/models/GLM-5-NVFP4/", "glm", "glm_moe_dsa", "nvfp4"),
        ("deepseek-ai/DeepSeek-V3.2-Exp", "deepseek", "deepseek_v32", "fp8"),
        # A class names no one checkpoint, so no precision it is published in.
        ("DeepseekV3ForCausalLM", "deepseek", "deepseek_v3", None),
        ("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "qwen", "qwen3_moe", "fp8"),
        ("Qwen/Qwen3-8B", "qwen", "qwen3", None),
        ("openai/gpt-oss-120b", "gpt-oss", "gpt_oss", "mxfp4"),
        ("moonshotai/Kimi-K2-Instruct", "kimi", "kimi_k2", "fp8"),  # published in FP8
        ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "llama", "llama", "awq"),
        # A distilled model runs its student's architecture, not DeepSeek's.
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "qwen", "qwen2", None),
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "llama", "llama", None),
        # A vision-language model is its own architecture, not the text model's.
        ("Qwen/Qwen2.5-VL-7B-Instruct", "qwen", "qwen2_5_vl", None),
        ("Qwen/Qwen3-VL-30B-A3B-Instruct", "qwen", "qwen3_vl_moe", None),
        ("google/gemma-3-27b-it", "gemma", "gemma3", None),
        ("microsoft/phi-4", "phi", "phi3", None),
        ("ibm-granite/granite-3.1-8b-instruct", "granite", "granite", None),
    ],
)
def test_it_knows_model_family_arch_and_quantization(vocab, name, family, arch, quantization):
    info = vocab.model_info(name)
    assert info is not None
    assert (info.family, info.arch, info.quantization) == (family, arch, quantization)


def test_it_admits_not_knowing_a_model(vocab):
    assert vocab.model_info("my-team/secret-model-v2") is None


def test_it_canonicalises_quantization_method_names(vocab):
    assert vocab.quantization("modelopt_fp4") == "nvfp4"
    assert vocab.quantization("gptq_marlin") == "gptq"


# ---- packaging


def test_it_loads_once_and_never_imports_django():
    code = (
        "import sys, decisiontree.vocabulary as v, decisiontree.context as c\n"
        "assert v.load() is v.load()\n"
        "c.build_context('8x H100')\n"
        "assert 'django' not in sys.modules, 'django imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("written", ["8x H100", "8× H100", "eight H100s", "8 x H100"])
def test_a_count_of_gpus_is_read_however_it_is_written(written: str) -> None:
    assert [(g.name, n) for g, n in load().gpus_in_text(written)] == [("NVIDIA H100", 8)]


def test_a_gpu_named_after_a_number_that_is_no_gpu_is_still_counted(vocab):
    text = "Latency went from 4090 ms to 3080 ms once we moved to 2x H100."
    assert [(g.name, n) for g, n in vocab.gpus_in_text(text)] == [("NVIDIA H100", 2)]


@pytest.mark.parametrize(
    ("model", "quantization"),
    [("/data/models/llama3_70b_instruct_fp8", "fp8"), ("/srv/qwen3_32b_awq", "awq")],
)
def test_a_quantization_inside_a_model_directory_written_with_underscores_is_read(
    model: str, quantization: str
) -> None:
    context = build_context(launch_command=f"vllm serve {model} --tensor-parallel-size 2")
    assert context.quantization == quantization


@pytest.mark.parametrize(
    ("written", "arch"),
    [
        ("Glm4MoeForCausalLM", "glm4_moe"),
        ("GlmMoeDsaForCausalLM", "glm_moe_dsa"),
        ("glm4_moe", "glm4_moe"),
    ],
)
def test_a_models_class_or_architecture_name_gives_its_architecture(vocab, written, arch):
    # What a config.json's "architectures" or a server log names, not the repository.
    info = vocab.model_info(written)
    assert info is not None and info.arch == arch
