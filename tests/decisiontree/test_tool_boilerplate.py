"""What a tool prints around every failure is nobody's error.

torch.compile ends each Dynamo or Inductor failure with the same advice (where to turn
logging up, how to fall back to eager); pip and uv frame each package that failed to
build the same way; Ray wraps whatever a vLLM worker raised in the same task error, and
vLLM's engine reports any worker that failed to start in the same words. Two unrelated failures share those lines word for word; what tells
them apart is what failed.
"""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.diagnose import Diagnosis, diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, FindingRecord, FixRecord, Outcome
from decisiontree.traceback import parse

ADVICE = """
Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information


You can suppress this exception and fall back to eager by setting:
    import torch._dynamo
    torch._dynamo.config.suppress_errors = True
"""


# Another error than any finding below holds, and where vLLM raises it.
HEADS_VS_TP = "ValueError: Total number of attention heads (40) must be divisible by tp (3)."
HEADS_FRAME = (
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/config.py", line 1200, in verify'
)


def _against(finding: FindingRecord, paste: str) -> Diagnosis:
    """The answer to `paste` from a knowledge base of `finding` alone."""
    return diagnose(paste, build_context(paste), build_graph([finding]))


def _fp8_on_ampere(caller: str, line: int) -> str:
    """Triton refusing FP8 e4m3 on a GPU older than Ada, inside an Inductor kernel."""
    return (
        "Traceback (most recent call last):\n"
        f'  File "{caller}", line {line}, in forward\n'
        "    hidden = self.mlp(hidden)\n"
        '  File "/opt/venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py", '
        "line 655, in _fn\n"
        "    return fn(*args, **kwargs)\n"
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        "CompilationError: at 8:11:\n"
        "    xoffset = tl.program_id(0) * XBLOCK\n"
        "           ^\n"
        'ValueError("type fp8e4nv not supported in this architecture. The supported fp8 '
        "dtypes are ('fp8e4b15', 'fp8e5')\")\n" + ADVICE
    )


SHAPE_MISMATCH = (
    "Traceback (most recent call last):\n"
    '  File "/srv/bench/run.py", line 30, in <module>\n'
    "    out = compiled(batch)\n"
    '  File "/opt/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", '
    "line 600, in _fn\n"
    "    return fn(*args, **kwargs)\n"
    "torch._dynamo.exc.TorchRuntimeError: Failed running call_function <built-in function "
    "linear>(*(FakeTensor(..., size=(4, 4096)), Parameter(FakeTensor(..., size=(11008, "
    "4095)))), **{}):\n"
    "a and b must have same reduction dim, but got [4, 4096] X [4095, 11008].\n"
    "\n"
    "from user code:\n"
    '   File "/srv/bench/model.py", line 52, in forward\n'
    "    return self.up(x)\n" + ADVICE
)

FP8_FINDING = FindingRecord(
    id=1,
    title="Triton has no FP8 e4m3 kernels before Ada",
    kind="crash",
    cause="Triton compiles fp8e4nv only for compute capability 8.9 and newer",
    samples=(_fp8_on_ampere("/opt/venv/lib/python3.12/site-packages/app/model.py", 120),),
    conditions=(),
    fixes=(
        FixRecord(
            1,
            "keep the KV cache in FP8 e5m2",
            (Change(ChangeAction.SET_FLAG, "kv-cache-dtype", "fp8_e5m2"),),
            Outcome.RESOLVES,
        ),
    ),
)


def test_an_unrelated_compile_failure_is_not_known_by_the_advice_both_end_with() -> None:
    result = _against(FP8_FINDING, SHAPE_MISMATCH)

    assert result.verdict == "none"
    assert not result.fixes


def test_the_same_compile_failure_from_other_code_is_still_found() -> None:
    paste = _fp8_on_ampere("/workspace/serve/layers.py", 48)

    result = _against(FP8_FINDING, paste)

    assert result.verdict == "known"
    assert result.fixes[0].finding.id == FP8_FINDING.id


def _failed_build(package: str, said: str) -> str:
    """pip's frame around a package whose build failed, with what the build printed."""
    return (
        f"  Building wheel for {package} (setup.py) ... error\n"
        "  error: subprocess-exited-with-error\n"
        "\n"
        "  × python setup.py bdist_wheel did not run successfully.\n"
        "  │ exit code: 1\n"
        "  ╰─> [12 lines of output]\n"
        f"      {said}\n"
        "      [end of output]\n"
        "\n"
        "  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
        f"  ERROR: Failed building wheel for {package}\n"
        f"Failed to build {package}\n"
    )


NO_CUDA_HOME = (
    "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root."
)
BUILD_FINDING = FindingRecord(
    id=2,
    title="flash-attn builds from source and finds no CUDA toolkit",
    kind="crash",
    cause="the image has the CUDA runtime but not the toolkit nvcc comes with",
    samples=(_failed_build("flash-attn", NO_CUDA_HOME),),
    conditions=(),
    fixes=(FixRecord(1, "install a prebuilt wheel", (), Outcome.RESOLVES),),
)


def test_another_packages_failed_build_is_not_known_by_pips_frame() -> None:
    paste = _failed_build("deepspeed", "error: command 'gcc' failed: No such file or directory")

    result = _against(BUILD_FINDING, paste)

    assert result.verdict == "none"


def test_the_same_failed_build_is_still_known() -> None:
    paste = _failed_build("flash_attn", NO_CUDA_HOME)

    result = _against(BUILD_FINDING, paste)

    assert result.verdict == "known"
    assert result.fixes[0].finding.id == BUILD_FINDING.id


AMPERE_FINDING = FindingRecord(
    id=3,
    title="flash-attn's kernels need compute capability 8.0",
    kind="crash",
    cause="flash-attn has no kernels for GPUs older than Ampere",
    samples=(
        '  File "/usr/lib/python3/dist-packages/flash_attn/flash_attn_interface.py", line 91\n'
        "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n",
    ),
    conditions=(),
    fixes=(FixRecord(1, "uninstall flash-attn", (), Outcome.RESOLVES),),
)


def test_a_failed_build_that_shares_only_the_packages_name_is_not_known() -> None:
    """Its parts ("flash", "attn") side by side are one name, not a phrase of the message:
    a build that failed for any reason is not the package's GPU check."""
    paste = (
        "  Building wheel for flash-attn (setup.py) ... error\n"
        "  ERROR: Failed building wheel for flash-attn\n"
        "Failed to build flash-attn\n"
    )

    result = _against(AMPERE_FINDING, paste)

    assert result.verdict != "known"


def _through_ray(raised: str) -> str:
    """What a vLLM worker raised, as Ray's executor hands it back to the engine."""
    exc_type = raised.partition(":")[0]
    return (
        f"ray.exceptions.RayTaskError({exc_type}): ray::RayWorkerWrapper.execute_method() "
        "(pid=4321, ip=10.0.0.2, actor_id=9f8e7d6c, repr=<vllm.executor.ray_utils."
        "RayWorkerWrapper object at 0x7f3a>)\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/worker/worker_base.py", '
        "line 620, in execute_method\n"
        "    raise e\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/worker/worker_base.py", '
        "line 611, in execute_method\n"
        "    return run_method(self, method, args, kwargs)\n"
        f"{raised}\n"
    )


KV_TOO_SMALL = (
    "ValueError: The model's max seq len (131072) is larger than the maximum number of "
    "tokens that can be stored in KV cache (52000)."
)
RAY_FINDING = FindingRecord(
    id=3,
    title="The KV cache holds fewer tokens than one request of the model's full length",
    kind="crash",
    cause="max_model_len defaults to the model's full context",
    samples=(_through_ray(KV_TOO_SMALL),),
    conditions=(),
    fixes=(FixRecord(1, "lower --max-model-len", (), Outcome.RESOLVES),),
)


def test_another_workers_error_through_ray_is_not_known_by_rays_wrapper() -> None:
    paste = _through_ray(HEADS_VS_TP)

    result = _against(RAY_FINDING, paste)

    assert result.verdict == "none"


def test_the_same_workers_error_through_ray_is_still_known() -> None:
    paste = _through_ray(KV_TOO_SMALL.replace("52000", "48112"))

    result = _against(RAY_FINDING, paste)

    assert result.verdict == "known"


def _worker_failed(frame: str, raised: str) -> str:
    """vLLM (V1) reporting a worker that failed to start: the worker's traceback under its
    log prefix, then the engine's own words, the same whatever the worker raised."""
    tag = "(VllmWorker rank=0 pid=4411) ERROR 12-07 01:22:40 [multiproc_executor.py:527] "
    worker = [
        "WorkerProc failed to start.",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/'
        'multiproc_executor.py", line 501, in worker_main',
        "    worker = WorkerProc(*args, **kwargs)",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", '
        "line 200, in load_model",
        "    self.model_runner.load_model()",
        frame,
        "    raise",
        raised,
    ]
    return "\n".join(tag + line for line in worker) + (
        "\nERROR 12-07 01:22:41 [core.py:586] EngineCore failed to start.\n"
        "ERROR 12-07 01:22:41 [core.py:586] Exception: WorkerProc initialization failed due "
        "to an exception in a background process. See stack trace for root cause.\n"
    )


KV_FRAME = (
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", '
    "line 700, in check_enough_kv_cache_memory"
)
WORKER_FINDING = FindingRecord(
    id=4,
    title="No room in the KV cache for one request of the model's full length",
    kind="crash",
    cause="max_model_len defaults to the model's full context",
    samples=(_worker_failed(KV_FRAME, KV_TOO_SMALL),),
    conditions=(),
    fixes=(FixRecord(1, "lower --max-model-len", (), Outcome.RESOLVES),),
)


def test_the_engines_words_point_at_the_workers_error() -> None:

    primary = parse(_worker_failed(HEADS_FRAME, HEADS_VS_TP)).primary

    assert primary is not None and primary.type == "ValueError"


def test_another_workers_error_is_not_known_by_the_engines_words_around_it() -> None:
    paste = _worker_failed(HEADS_FRAME, HEADS_VS_TP)

    result = _against(WORKER_FINDING, paste)

    assert result.verdict == "none"
    [near] = result.nearest
    assert near.finding.id == WORKER_FINDING.id
    assert near.why_not.startswith("same error class (ValueError), another message")


def test_the_same_workers_error_is_still_known_in_the_engines_words() -> None:
    paste = _worker_failed(KV_FRAME, KV_TOO_SMALL.replace("52000", "48112"))

    result = _against(WORKER_FINDING, paste)

    assert result.verdict == "known"


LOAD_WEIGHTS_FRAME = (
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/qwen2_moe.py", '
    "line 480, in load_weights"
)


def test_a_missing_weight_is_not_known_by_the_engines_words_around_another_error() -> None:
    # The message is nothing but the key: the key's words are what it says.
    paste = _worker_failed(LOAD_WEIGHTS_FRAME, "KeyError: 'model.layers.0.mlp.experts.w2_weight'")

    result = _against(WORKER_FINDING, paste)

    assert result.verdict == "none"


def test_a_missing_weight_of_another_layer_is_still_known() -> None:
    finding = FindingRecord(
        id=5,
        title="The checkpoint's expert weights are named as a newer release names them",
        kind="crash",
        cause="expert weights renamed between releases",
        samples=(
            _worker_failed(LOAD_WEIGHTS_FRAME, "KeyError: 'model.layers.0.mlp.experts.w2_weight'"),
        ),
        conditions=(),
        fixes=(FixRecord(1, "upgrade vLLM", (), Outcome.RESOLVES),),
    )
    paste = _worker_failed(LOAD_WEIGHTS_FRAME, "KeyError: 'model.layers.17.mlp.experts.w13_weight'")

    result = _against(finding, paste)

    assert result.verdict == "known"
