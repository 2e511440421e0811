"""Out-of-memory answers that only words make "known".

SGLang lists the same remedies (lower --mem-fraction-static, capture smaller batches) under
every failed CUDA-graph capture, whatever failed inside it; a finding about capture running
out of memory shares those words with a capture that hit an illegal memory access. The
words match; the failure is another, and the answer says so.

PyTorch prints one out-of-memory line wherever memory runs out: loading weights too large
for the GPU and capturing CUDA graphs without room end in the same message. Raised from
other code, that message says which error, not which failure.
"""

from __future__ import annotations

import json

import pytest

from decisiontree.answer import NO_MEMORY_RAN_OUT
from decisiontree.context import build_context
from decisiontree.diagnose import Diagnosis, diagnose
from decisiontree.fingerprint import signatures_of
from decisiontree.gpu_memory import RAN_OUT
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, FindingRecord, FixRecord, Outcome
from decisiontree.traceback import parse


def _capture_failed(said: str) -> str:
    """SGLang's CUDA-graph runner reporting a failed capture, with its list of remedies."""
    return (
        "[2026-12-07 09:12:40 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2300, '
        "in run_scheduler_process\n"
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", '
        "line 282, in __init__\n"
        "    raise Exception(\n"
        f"Exception: Capture cuda graph failed: {said}\n"
        "Possible solutions:\n"
        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
        "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
        "3. disable torch compile by not using --enable-torch-compile\n"
        "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    )


OOM = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB "
    "of which 1.21 GiB is free."
)
ILLEGAL_ACCESS = "CUDA error: an illegal memory access was encountered"
CAPTURE_ILLEGAL_ACCESS = _capture_failed(ILLEGAL_ACCESS)


def _finding(kind: str) -> FindingRecord:
    return FindingRecord(
        id=1,
        title="CUDA-graph capture runs out of memory",
        kind=kind,
        cause="the memory fraction leaves too little for the buffers capture allocates",
        samples=(_capture_failed(OOM),),
        conditions=(),
        fixes=(
            FixRecord(
                1,
                "lower --mem-fraction-static",
                (Change(ChangeAction.SET_FLAG, "mem-fraction-static", "0.8"),),
                Outcome.RESOLVES,
            ),
        ),
    )


def _against(finding: FindingRecord, paste: str) -> Diagnosis:
    return diagnose(paste, build_context(paste), build_graph([finding]))


def test_a_capture_that_hit_another_error_is_only_similar_to_the_oom_finding() -> None:
    result = _against(_finding("oom"), CAPTURE_ILLEGAL_ACCESS)

    assert result.verdict == "similar"
    assert result.no_memory_ran_out
    assert NO_MEMORY_RAN_OUT in result.verdict_label
    assert result.fixes[0].finding.id == 1  # still shown: its remedies may be worth a look


def test_a_capture_that_ran_out_of_memory_is_still_known() -> None:
    for said in (OOM.replace("2.00 GiB", "512.00 MiB"), "CUDA error: out of memory"):
        result = _against(_finding("oom"), _capture_failed(said))

        assert result.verdict == "known", said
        assert not result.no_memory_ran_out


def test_a_finding_that_did_not_run_out_of_memory_is_not_set_back_by_it() -> None:
    result = _against(_finding("crash"), CAPTURE_ILLEGAL_ACCESS)

    assert not result.no_memory_ran_out
    assert NO_MEMORY_RAN_OUT not in (result.verdict_label if result.fixes else "")


@pytest.mark.parametrize(
    "line",
    [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.",
        "RuntimeError: CUDA error: out of memory",
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.",
        "cudaErrorMemoryAllocation: out of memory",
        "terminate called after throwing an instance of 'std::bad_alloc'",
        "[E] [TRT] 2: [allocator.cpp::allocate::20] Error Code 2: OutOfMemory",
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 8192.00 MiB on device 0: "
        "cudaMalloc failed: out of memory",
        "Memory cgroup out of memory: Killed process 4242 (python3)",
        "KV cache pool is full. Retract requests.",
    ],
)
def test_memory_running_out_is_read_in_each_stacks_words(line: str) -> None:
    assert RAN_OUT.search(line)


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "Memory access fault by GPU node-2 (Agent handle: 0x55d) on address 0x7f. "
        "Reason: Page not present or supervisor privilege.",
        "INFO 12-07 09:00:01 [gpu_model_runner.py:1800] Model loading took 15.2 GiB memory",
        "Load weight end. type=Qwen2ForCausalLM, avail mem=60.10 GB, mem usage=15.30 GB.",
        "RuntimeError: CUDA error: misaligned address",
    ],
)
def test_memory_named_without_running_out_is_not_read_as_it(line: str) -> None:
    assert not RAN_OUT.search(line)


def _scheduler_raised(frames: str, raised: str) -> str:
    return (
        "[2026-12-07 09:12:40 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2300, '
        "in run_scheduler_process\n"
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
        f"{frames}{raised}\n"
    )


LOADING_FRAMES = (
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_loader/loader.py", line 380, '
    "in load_model\n"
    "    model = _initialize_model(\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/models/llama.py", line 210, in __init__\n'
    "    self.mlp = LlamaMLP(\n"
)
TORCH_OOM = f"torch.OutOfMemoryError: {OOM}"
# Where SGLang runs out of memory loading weights too large for the GPU: PyTorch's line,
# raised from the model's constructor, not from graph capture.
LOADING_OOM = _scheduler_raised(LOADING_FRAMES, TORCH_OOM.replace("2.00 GiB", "448.00 MiB"))


@pytest.mark.parametrize(
    ("raised", "ordinary"),
    [
        (TORCH_OOM, True),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", True),
        (f"Exception: Capture cuda graph failed: {OOM}", False),
        ("ValueError: No available memory for the cache blocks.", False),
    ],
)
def test_a_message_every_error_of_its_kind_prints_is_ordinary(raised: str, ordinary: bool) -> None:
    graph = build_graph([_finding("oom")])
    [signature, *_] = signatures_of(parse(_scheduler_raised(LOADING_FRAMES, raised)))

    assert graph.index.ordinary_message(signature) is ordinary


KV_CACHE = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 700, '
    "in check_enough_kv_cache_memory\n"
    "    raise ValueError(\n"
    "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens "
    "that can be stored in KV cache (52000). Try increasing `gpu_memory_utilization` or "
    "decreasing `max_model_len` when initializing the engine.\n"
)


def test_a_loggers_ordinary_line_around_the_known_error_leaves_it_known() -> None:
    # python-json-logger's record: its own message first, the traceback as one string.
    record = json.dumps(
        {
            "levelname": "ERROR",
            "message": "Server process failed",
            "exc_info": KV_CACHE.replace("52000", "48112"),
        }
    )
    finding = FindingRecord(
        id=2,
        title="No room in the KV cache for one request of the model's full length",
        kind="oom",
        cause="max_model_len defaults to the model's full context",
        samples=(KV_CACHE,),
        conditions=(),
        fixes=(FixRecord(1, "lower --max-model-len", (), Outcome.RESOLVES),),
    )

    result = _against(finding, record)

    assert result.verdict == "known"
    assert not result.ordinary_message_elsewhere
