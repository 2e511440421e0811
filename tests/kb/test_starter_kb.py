"""The starter knowledge base that `make run` loads: what it must know, loaded idempotently."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from decisiontree.answer import Verdict
from kb.models import ErrorSignature, Finding, Fix, SourceDocument
from kb.services.diagnosis import diagnose
from kb.templatetags.fixgraph import inline_markdown
from kb.views.search import PAGE_SIZE
from tests.conftest import STARTER

pytestmark = pytest.mark.django_db


def published() -> list[Finding]:
    return list(Finding.objects.filter(status=Finding.Status.PUBLISHED))


def fixes_setting(flag: str, value: str | None = None) -> list[Fix]:
    return [
        fix
        for fix in Fix.objects.filter(finding__status=Finding.Status.PUBLISHED)
        if any(
            c["action"] == "set_flag"
            and c["name"] == flag
            and (value is None or c["value"] == value)
            for c in fix.changes
        )
    ]


def test_it_knows_the_fp8_kv_decode_crash_on_sm120_and_its_fix(starter_kb: None) -> None:
    resolving = [f for f in fixes_setting("kv-cache-dtype", "bf16") if f.outcome == "resolves"]
    assert resolving, "no published fix sets --kv-cache-dtype bf16"
    finding = resolving[0].finding
    assert {"key": "gpu.arch", "value": "sm_120", "negate": False} in finding.conditions
    assert any(
        c["name"] == "dsa-decode-backend" and c["value"] == "trtllm"
        for fix in resolving
        for c in fix.changes
    )


def test_it_knows_triton_does_not_help_and_asserts_on_fp8_kv(starter_kb: None) -> None:
    assert any(f.outcome == "no_effect" for f in fixes_setting("attention-backend", "triton"))
    assert ErrorSignature.objects.filter(
        template__contains="nsa_kv_cache_store_fp8", findings__status="published"
    ).exists()


def test_it_knows_the_oom_at_graph_capture_and_mem_fraction(starter_kb: None) -> None:
    assert fixes_setting("mem-fraction-static", "0.88")
    assert any(f.kind == Finding.Kind.OOM for f in published())


def test_it_knows_the_silent_fp8_kv_auto_selection_and_independent_nsa_backend(
    starter_kb: None,
) -> None:
    texts = " ".join(f"{f.title} {f.cause} {f.body}".lower() for f in published())
    assert "flashmla_kv" in texts
    assert "auto" in texts and "fp8" in texts


def test_it_knows_flashinfer_mla_refuses_fp8_kv_and_the_decode_cast_cost(starter_kb: None) -> None:
    slow = [f for f in published() if f.kind == Finding.Kind.SLOW]
    assert slow, "the FP8→BF16 cast bottleneck is a performance finding"
    assert any(f.before_value for f in slow), "the measured cost of the cast is kept"
    assert any(fix.outcome == "partial" for f in slow for fix in f.fixes.all())
    texts = " ".join(f"{f.title} {f.cause} {f.body}" for f in published()).lower()
    assert "gather" in texts and "sizeof(dtype) == 2" in texts


def test_it_loads_twice_without_duplicates(starter_kb: None) -> None:
    counts = (Finding.objects.count(), Fix.objects.count(), SourceDocument.objects.count())
    out = StringIO()
    call_command("ingest", str(STARTER), "--publish", stdout=out)
    assert (Finding.objects.count(), Fix.objects.count(), SourceDocument.objects.count()) == counts
    assert "skipped" in out.getvalue()


def test_the_home_page_lists_the_starter_findings(starter_kb: None, client: Client) -> None:
    titles = [finding.title for finding in published()]
    assert len(titles) > PAGE_SIZE  # more than one page of results
    pages = range(1, (len(titles) + PAGE_SIZE - 1) // PAGE_SIZE + 1)
    page = "".join(client.get("/", {"page": n}).content.decode() for n in pages)
    for title in titles:  # as the list shows titles: Markdown rendered
        assert str(inline_markdown(title)) in page


# Pastes shaped as users meet these errors, each unlike the entry's own samples: another
# client, other numbers, a release that words the message otherwise.
REQUEST_TOO_LONG = {
    "sglang": '{"object":"error","message":"The input (131500 tokens) is longer than the'
    ' model\'s context length (131072 tokens).","type":"BadRequestError","param":null,"code":400}',
    "vllm": "ERROR 05-08 11:02:17 [serving_chat.py:201] ValueError: This model's maximum context"
    " length is 4096 tokens. However, you requested 4600 tokens (600 in the messages, 4000 in"
    " the completion). Please reduce the length of the messages or completion.",
}
PROFILING_RACE = """\
ERROR 05-11 09:12:33 engine.py:366]   File "/opt/venv/lib/python3.12/site-packages/vllm/worker/worker.py", line 256, in determine_num_available_blocks
ERROR 05-11 09:12:33 engine.py:366]     assert self.init_gpu_memory - free_gpu_memory > 0, (
ERROR 05-11 09:12:33 engine.py:366] AssertionError: Error in memory profiling. Initial free memory 38.5 GiB, current free memory 41.0 GiB. This happens when the GPU memory was not properly cleaned up before initializing the vLLM instance.
"""
LAUNCHED_TOO_LONG = (
    "ValueError: User-specified max_model_len (200000) is greater than the derived"
    " max_model_len (max_position_embeddings=131072 or model_max_length=None in model's"
    " config.json). To allow overriding this maximum, set the env var"
    " VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
)


@pytest.mark.parametrize("framework", ["sglang", "vllm"])
def test_a_request_longer_than_the_served_context_is_told_to_shorten_it(
    starter_kb: None, framework: str
) -> None:
    """The server is fine and the request is too long: the first fix is the request's,
    and the flag that may raise the limit is the framework's own."""
    result = diagnose(REQUEST_TOO_LONG[framework], framework=framework)

    assert result.verdict is Verdict.KNOWN
    first = result.fixes[0]
    assert "answers 400" in first.finding.title and first.finding.title.startswith(
        {"sglang": "SGLang", "vllm": "vLLM"}[framework]
    )
    assert first.fix.summary.startswith("shorten the prompt")
    raise_limit = {"sglang": "--context-length", "vllm": "--max-model-len"}[framework]
    assert any(raise_limit in fix.fix.summary for fix in result.fixes[:3])


def test_a_launch_longer_than_the_model_is_not_taken_for_a_long_request(starter_kb: None) -> None:
    result = diagnose(LAUNCHED_TOO_LONG, framework="vllm")

    assert (
        result.fixes[0].finding.title
        == "vLLM refuses a --max-model-len longer than the model's own"
    )


def test_memory_freed_during_vllm_profiling_points_at_the_other_process(starter_kb: None) -> None:
    """An older release words the assert otherwise; the finding still says what to do."""
    result = diagnose(PROFILING_RACE, framework="vllm")

    assert result.verdict is Verdict.KNOWN
    assert "Error in memory profiling" in result.fixes[0].finding.title
    summaries = [fix.fix.summary for fix in result.fixes]
    assert any("--kv-cache-memory-bytes" in summary for summary in summaries)


def test_retracted_requests_under_load_point_at_admission_not_at_a_crash(starter_kb: None) -> None:
    """A warning, no error: what the log shows when SGLang's throughput falls under load."""
    log = (
        "[2026-03-01 02:11:09 DP0 TP0 EP0] KV cache pool is full. Retract requests. "
        "#retracted_reqs: 3, #new_tokens_gained: 5120, #new_token_ratio: 0.3500 -> 0.5200\n"
    )
    result = diagnose(log, framework="sglang")

    assert result.verdict is Verdict.KNOWN
    assert result.fixes[0].finding.kind == "slow"
    assert result.fixes[0].command_changes == ("--schedule-conservativeness 1.3",)


def test_a_quantization_method_below_its_minimum_capability_gets_the_general_entry(
    starter_kb: None,
) -> None:
    """An AWQ checkpoint on a V100: the general entry comes first, and the MXFP4 entry,
    whose setup the message contradicts, is not taken for it."""
    paste = (
        "ValueError: The quantization method awq is not supported for the current GPU. "
        "Minimum capability: 75. Current capability: 70."
    )
    result = diagnose(paste)

    assert result.verdict is Verdict.KNOWN
    assert "quantization method asks for a newer GPU" in result.fixes[0].finding.title
    mxfp4 = [fix for fix in result.fixes if "MXFP4" in fix.finding.title]
    assert all(fix.finding.title != result.fixes[0].finding.title for fix in mxfp4)
    assert mxfp4 and all(fix.for_other_setup for fix in mxfp4)


@pytest.mark.parametrize(
    ("paste", "title"),
    [
        (
            "ValueError: Total number of attention heads (40) must be divisible by tensor "
            "parallel size (3).",
            "attention heads do not divide",
        ),
        (  # SGLang's form: a bare assertion while another model's attention layer is built
            "Traceback (most recent call last):\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", '
            "line 301, in initialize\n    self.load_model()\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/models/qwen2.py", line 208, in '
            "__init__\n    assert self.total_num_heads % tp_size == 0\nAssertionError\n",
            "attention heads do not divide",
        ),
        (
            "ImportError: /opt/env/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-"
            "x86_64-linux-gnu.so: undefined symbol: _ZNK3c1010TensorImpl27throw_data_ptr_access_"
            "errorEv",
            "undefined symbol",
        ),
        (
            "ValueError: World size (4) is larger than the number of available GPUs (2) in "
            "this node.",
            "More GPUs asked for than the server can see",
        ),
        (  # SGLang: the scheduler of rank 3 picks GPU 3 of two
            "[2026-12-05 11:00:01 TP3] Scheduler hit an exception: Traceback (most recent call "
            'last):\n  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/'
            'model_runner.py", line 449, in __init__\n    torch.get_device_module(self.device)'
            ".set_device(get_device().gpu_id)\nRuntimeError: CUDA error: invalid device ordinal\n",
            "More GPUs asked for than the server can see",
        ),
        (  # an older Transformers' wording of it
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file, "
            "couldn't find it in the cached files and it looks like acme/Foo-8B is not the path "
            "to a directory containing a file named config.json.",
            "The Hub cannot be reached",
        ),
        (
            "ValueError: The checkpoint you are trying to load has model type `bar_next` but "
            "Transformers does not recognize this architecture. This could be because of an "
            "issue with the checkpoint, or because your version of Transformers is out of date.",
            "no implementation of the model's architecture",
        ),
        (
            "RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't "
            "exist",
            "FlashInfer cannot compile its kernels",
        ),
        (  # a chat request to a base model, as the client prints vLLM's 400
            "openai.BadRequestError: Error code: 400 - {'error': {'message': 'As of "
            "transformers v4.44, default chat template is no longer allowed, so you must provide "
            "a chat template if the tokenizer does not define one.', 'type': 'BadRequestError', "
            "'param': None, 'code': 400}}",
            "no chat template",
        ),
        (  # the dtype check right after the capability check: not the capability's entry
            "ValueError: torch.bfloat16 is not supported for quantization method gptq. "
            "Supported dtypes: [torch.float16]",
            "float16 activations only",
        ),
        (
            "ValueError: Model architectures ['BarForConditionalGeneration'] are not supported "
            "for now. Supported architectures: dict_keys(['LlamaForCausalLM'])",
            "no implementation of the model's architecture",
        ),
        (
            "ValueError: Cannot find model module. 'BarForCausalLM' is not a registered model in "
            "the Transformers library (only relevant if the model is meant to be in Transformers) "
            "and 'AutoModel' is not present in the model config's 'auto_map' (relevant if the "
            "model is custom).",
            "no implementation of the model's architecture",
        ),
        (  # PyTorch 2.1's wording, on a set_device of vLLM's worker
            'Traceback (most recent call last):\n  File "/opt/venv/lib/python3.10/site-packages/'
            'torch/cuda/__init__.py", line 298, in _lazy_init\n    torch._C._cuda_init()\n'
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11080). "
            "Please update your GPU driver by downloading and installing a new version from the "
            "URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: "
            "https://pytorch.org to install a PyTorch version that has been compiled with your "
            "version of the CUDA driver.",
            "The NVIDIA driver is older than the CUDA the wheels were built with",
        ),
        (
            'docker: Error response from daemon: could not select device driver "nvidia" with '
            "capabilities: [[gpu]].",
            "No GPU inside the container or job",
        ),
        (  # sgl-kernel 0.3's wording (no CUDA line), built against another PyTorch
            "ImportError:\n[sgl_kernel] CRITICAL: Could not load any common_ops library!\n\n"
            "Attempted locations:\n1. Architecture-specific pattern: /opt/conda/lib/python3.11/"
            "site-packages/sgl_kernel/sm90/common_ops.* - found files: ['/opt/conda/lib/"
            "python3.11/site-packages/sgl_kernel/sm90/common_ops.abi3.so']\n\nError details "
            "from previous import attempts:\n- ImportError: /opt/conda/lib/python3.11/"
            "site-packages/sgl_kernel/sm90/common_ops.abi3.so: undefined symbol: "
            "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib\n",
            "SGLang's kernel package cannot load its ops",
        ),
        (  # a CPU-only torch, where SGLang first picks its GPU
            '  File "/usr/lib/python3/dist-packages/torch/cuda/__init__.py", line 404, in '
            "set_device\n    torch._C._cuda_setDevice(device)\nAttributeError: module "
            "'torch._C' has no attribute '_cuda_setDevice'\n",
            "PyTorch is a build without CUDA",
        ),
        (
            "Exception: data did not match any variant of untagged enum ModelWrapper at line "
            "1217944 column 3",
            "The tokenizer file is newer than the tokenizers library",
        ),
        (
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
            "`cublasCreate(handle)`",
            "cuBLAS cannot create its handle",
        ),
        (  # a Triton wheel older than the B200 it compiles for
            "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n"
            "`ptxas` stderr:\nptxas fatal   : Value 'sm_100a' is not defined for option "
            "'gpu-name'\n\nRepro command: /opt/venv/lib/python3.12/site-packages/triton/"
            "backends/nvidia/bin/ptxas -lineinfo -v --gpu-name=sm_100a /tmp/k.ptx -o /tmp/k.o\n",
            "Triton's ptxas is older than the GPU",
        ),
        (  # PyTorch's warning before any kernel fails, on another GPU than the entry's
            "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:215: UserWarning:\n"
            "NVIDIA B200 with CUDA capability sm_100 is not compatible with the current "
            "PyTorch installation.\nThe current PyTorch install supports CUDA capabilities "
            "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\nIf you want to use the NVIDIA B200 "
            "GPU with PyTorch, please check the instructions at "
            "https://pytorch.org/get-started/locally/\n\n  warnings.warn(\n",
            "a build without this GPU's architecture",
        ),
        (  # raised through PyTorch from a Triton kernel of another framework
            'Traceback (most recent call last):\n  File "/opt/venv/lib/python3.12/site-packages/'
            'sglang/srt/layers/quantization/fp8_kernel.py", line 512, in '
            "per_token_group_quant_fp8\n    _per_token_group_quant_fp8[(M,)](\n"
            "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported "
            "toolchain.\n",
            "The driver cannot load PTX from a newer CUDA",
        ),
        (  # gcc's refusal alone, from another temporary file than the entry's
            "/tmp/tmpa81kd0f2/cuda_utils.c:1:10: fatal error: Python.h: No such file or "
            "directory\n    1 | #include <Python.h>\n      |          ^~~~~~~~~~\n"
            "compilation terminated.\n",
            "Triton cannot build its launcher",
        ),
        (  # the linker's line alone (once ordinary output in the background)
            "/usr/bin/ld: cannot find -lcuda: No such file or directory\n"
            "collect2: error: ld returned 1 exit status\n",
            "cannot find -lcuda",
        ),
        (  # a user's own worker, not vLLM's
            'Traceback (most recent call last):\n  File "/home/me/serve.py", line 22, in worker\n'
            '    x = torch.ones(4, device="cuda")\n  File "/usr/local/lib/python3.10/dist-'
            'packages/torch/cuda/__init__.py", line 284, in _lazy_init\n    raise RuntimeError(\n'
            "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method\n",
            "A worker forked after CUDA started",
        ),
        # the bare line, which names one cause (once ordinary output in the background)
        ("OSError: [Errno 98] Address already in use", "The server cannot bind its port"),
        (  # vLLM's loader over a Git LFS pointer (once ordinary output in the background)
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/model_loader/'
            'weight_utils.py", line 523, in safetensors_weights_iterator\n'
            '    with safe_open(st_file, framework="pt") as f:\n'
            "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge\n",
            "A weights file is not whole safetensors",
        ),
        (  # vLLM 0.6's KV cache check, worded by tokens, from a rank's log
            "[rank0]: ValueError: The model's max seq len (131072) is larger than the maximum "
            "number of tokens that can be stored in KV cache (41664). Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
            "one request of the model's full length does not fit",
        ),
        (  # torchvision left behind by an upgrade of torch, reached through vLLM's CLI
            'Traceback (most recent call last):\n  File "/opt/venv/bin/vllm", line 5, in <module>\n'
            "    from vllm.entrypoints.cli.main import main\n"
            '  File "/opt/venv/lib/python3.12/site-packages/transformers/image_utils.py", line 55,'
            " in <module>\n    from torchvision.transforms import InterpolationMode\n"
            '  File "/opt/venv/lib/python3.12/site-packages/torchvision/_meta_registrations.py",'
            ' line 164, in <module>\n    @torch.library.register_fake("torchvision::nms")\n'
            "RuntimeError: operator torchvision::nms does not exist\n",
            "torchvision does not match the installed PyTorch",
        ),
        (  # flash-attn's forward on a Turing GPU, called from a model's own attention
            '  File "/usr/local/lib/python3.10/dist-packages/transformers/models/llama/modeling_'
            'llama.py", line 514, in forward\n    attn_output = _flash_attention_forward(\n'
            '  File "/usr/local/lib/python3.10/dist-packages/flash_attn/flash_attn_interface.py",'
            " line 91, in _flash_attn_forward\n"
            "    out, softmax_lse, S_dmask, rng_state = flash_attn_cuda.fwd(\n"
            "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n",
            "flash-attn's kernels need compute capability 8.0",
        ),
        (  # the check as raised before vLLM's configuration became pydantic dataclasses
            "(APIServer pid=1) ValueError: max_num_batched_tokens (8192) is smaller than "
            "max_model_len (32768). This effectively limits the maximum sequence length to "
            "max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
            "max_num_batched_tokens or decrease max_model_len.\n",
            "--max-num-batched-tokens is below --max-model-len",
        ),
        (  # NCCL's CUDA failure without the error number, from a user's own all-reduce
            "[rank1]: Traceback (most recent call last):\n"
            '[rank1]:   File "/workspace/serve.py", line 30, in <module>\n'
            "[rank1]:     dist.all_reduce(t)\n"
            "[rank1]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/"
            "distributed/c10d/NCCLUtils.hpp:317, unhandled cuda error (run with NCCL_DEBUG=INFO"
            " for details), NCCL version 2.26.2\n"
            "[rank1]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
            "[rank1]: Last error:\n"
            "[rank1]: Cuda failure 'peer access is not supported between these two devices'\n",
            "NCCL cannot open peer access between two GPUs",
        ),
        # pip with no wheel for this Python, for the other framework than the entry's sample.
        (
            "$ pip install sglang==0.5.23\n"
            "ERROR: Could not find a version that satisfies the requirement sglang==0.5.23"
            " (from versions: 0.1.0, 0.1.1, 0.1.2)\n"
            "ERROR: No matching distribution found for sglang==0.5.23\n",
            "pip has no build of the release for this Python or system",
        ),
        # A chat template's refusal as vLLM's server log and its 400 body show it.
        (
            'INFO:     127.0.0.1:51234 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'
            '{"object":"error","message":"Conversation roles must alternate user/assistant/'
            'user/assistant/...","type":"BadRequestError","param":null,"code":400}\n',
            "chat template refuses the conversation",
        ),
        # A tokenizer class misnamed in an early LLaMA conversion's tokenizer_config.json.
        (
            "Traceback (most recent call last):\n"
            '  File "/opt/conda/lib/python3.10/site-packages/transformers/models/auto/'
            'tokenization_auto.py", line 784, in from_pretrained\n'
            "    raise ValueError(\n"
            "ValueError: Tokenizer class LLaMATokenizer does not exist or is not currently"
            " imported.\n",
            "tokenizer class is one this Transformers does not have",
        ),
        # flash-attn's setup.py finds no prebuilt wheel and no nvcc to build one.
        (
            "  Building wheel for flash-attn (setup.py) ... error\n"
            "  error: subprocess-exited-with-error\n"
            "  ╰─> [8 lines of output]\n"
            "      torch.__version__  = 2.6.0+cu124\n"
            "      Guessing wheel URL:  https://github.com/Dao-AILab/flash-attention/releases/"
            "download/v2.7.4.post1/flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE-cp312-"
            "cp312-linux_x86_64.whl\n"
            "      Precompiled wheel not found. Building from source...\n"
            "      error: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'\n"
            "      [end of output]\n"
            "  ERROR: Failed building wheel for flash-attn\n",
            "flash-attn does not build from source",
        ),
        # A second node of an SGLang server that cannot reach the first one's address.
        (
            "[W1207 08:01:02.000000 socket.cpp:752] [c10d] The client socket has failed to"
            " connect to [node-0.cluster.local]:20000 (errno: 110 - Connection timed out).\n"
            "torch.distributed.DistNetworkError: The client socket has timed out after"
            " 1800000ms while trying to connect to (node-0.cluster.local, 20000).\n",
            "cannot reach the distributed start-up's address",
        ),
        # SGLang's loader on a folder that holds only the config and tokenizer.
        (
            '  File "/sgl-workspace/sglang/python/sglang/srt/model_loader/loader.py", line 581,'
            " in _prepare_weights\n"
            "    raise RuntimeError(\n"
            "RuntimeError: Cannot find any model weights with `/data/models/Qwen3-8B`\n",
            "loader finds no weights in the model's folder",
        ),
        # A full disk under the compile cache, not the weights' download.
        (
            '  File "/usr/lib/python3.12/shutil.py", line 1061, in copyfile\n'
            "OSError: [Errno 28] No space left on device: '/root/.triton/cache/3f2a/kernel.cubin'\n",
            "No space left on device",
        ),
        # TLS interception on the way to the Hub, as huggingface_hub's httpx client says it.
        (
            "httpx.ConnectError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed:"
            " unable to get local issuer certificate (_ssl.c:1010)\n",
            "HTTPS fails TLS verification behind a proxy",
        ),
        # vLLM's compiled ops in a container started without the GPUs.
        (
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/_custom_ops.py", line 12, in'
            " <module>\n"
            "ImportError: libcuda.so.1: cannot open shared object file: No such file or"
            " directory\n",
            "No GPU inside the container or job",
        ),
    ],
)
def test_everyday_start_up_errors_get_their_entry(starter_kb: None, paste: str, title: str) -> None:
    result = diagnose(paste)

    assert result.verdict is Verdict.KNOWN
    assert title in result.fixes[0].finding.title


def test_cublas_failing_to_start_lowers_the_memory_share_of_the_users_framework(
    starter_kb: None,
) -> None:
    paste = (
        '  File "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/linear.py", line 134, '
        "in forward\n    return F.linear(input, self.weight, self.bias)\n"
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"
    )
    result = diagnose(
        paste, launch_command="vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.95"
    )

    assert result.verdict is Verdict.KNOWN
    assert result.fixes[0].command_changes == ("--gpu-memory-utilization 0.90",)
    changes = [change for fix in result.fixes for change in fix.command_changes]
    assert not any(change.startswith("--mem-fraction-static") for change in changes)


def test_flashinfers_build_with_an_nvcc_older_than_the_gpu_gets_the_toolkit_first(
    starter_kb: None,
) -> None:
    paste = (
        "RuntimeError: Ninja build failed. Ninja output:\n"
        "ninja: Entering directory `/root/.cache/flashinfer/0.7.2/120a/cached_ops'\n"
        "[1/3] /usr/local/cuda/bin/nvcc -gencode=arch=compute_120a,code=sm_120a -c "
        "batch_decode.cu -o batch_decode.cuda.o\n"
        "FAILED: batch_decode.cuda.o\n"
        "nvcc fatal   : Unsupported gpu architecture 'compute_120a'\n"
        "ninja: build stopped: subcommand failed.\n"
    )

    result = diagnose(paste, gpu="RTX PRO 6000")

    assert result.verdict is Verdict.KNOWN
    assert result.fixes[0].finding.title.startswith("nvcc does not build for the GPU's")
    assert "CUDA 12.8 or newer" in result.fixes[0].fix.summary


def test_a_kernel_package_built_for_another_cuda_gets_the_general_entry_outside_sglang(
    starter_kb: None,
) -> None:
    """sgl-kernel's own entry quotes the same loader line; once the framework is known to be
    another, the entry about any compiled package and its CUDA major comes first."""
    paste = (
        'Traceback (most recent call last):\n  File "/home/ml/serve.py", line 3, in <module>\n'
        "    import flashinfer\n"
        '  File "/home/ml/.venv/lib/python3.11/site-packages/flashinfer/__init__.py", line 18,'
        " in <module>\n    from ._kernels import *\n"
        "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n"
    )

    unknown = diagnose(paste)
    answered = diagnose(paste, answers={"framework": "vllm"})

    assert [q.key for q in unknown.questions] == ["framework"]
    assert answered.verdict is Verdict.KNOWN
    assert answered.fixes[0].finding.title.startswith("A compiled package looks for another CUDA")


def test_a_refusal_of_another_setting_is_not_the_token_budget_entry(starter_kb: None) -> None:
    """vLLM's check of its token budget ends with "Please increase ... or decrease ...", as
    many checks of other settings do: that advice alone does not make them that error."""
    paste = (
        "ValueError: max_loras (8) is larger than max_cpu_loras (4). "
        "Please increase max_cpu_loras or decrease max_loras.\n"
    )

    result = diagnose(paste, launch_command="vllm serve Qwen/Qwen3-8B")

    assert not any("--max-num-batched-tokens" in fix.finding.title for fix in result.fixes)


def test_another_packages_failed_build_is_not_the_flash_attn_build_entry(starter_kb: None) -> None:
    """pip's frame around a failed build is the same for every package: a package without
    a compiler is not flash-attn's missing wheel."""
    paste = (
        "  Building wheel for deepspeed (setup.py) ... error\n"
        "  error: subprocess-exited-with-error\n"
        "\n"
        "  × python setup.py bdist_wheel did not run successfully.\n"
        "  │ exit code: 1\n"
        "  ╰─> [10 lines of output]\n"
        "      error: command 'gcc' failed: No such file or directory\n"
        "      [end of output]\n"
        "\n"
        "  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
        "  ERROR: Failed building wheel for deepspeed\n"
        "Failed to build deepspeed\n"
    )

    result = diagnose(paste)

    assert result.verdict is not Verdict.KNOWN
    assert all("flash-attn does not build" not in f.finding.title for f in result.fixes[:1])
