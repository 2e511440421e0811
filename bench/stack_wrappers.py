"""Is an error told apart from another one that the same stack wrapped the same way?

Serving stacks print the same lines around every failure: vLLM's engine and worker
start-up, Ray's task error, torchrun's failure table, SGLang's scheduler, TGI's launcher,
asyncio's "Task exception was never retrieved", uvicorn's ASGI error, BuildKit's failed
step, a multiprocessing child, accelerate's launcher, systemd's journal. Two unrelated
errors inside one wrapper share those lines word for word, and the outer frames too; only
the error itself tells them apart.

For each wrapper this builds a knowledge base of one finding (one inner error, wrapped)
and diagnoses every inner error wrapped the same way, each raised from its own function.
It prints, per wrapper, how many of the unrelated pairs were answered at all ("known" or
"similar": false matches) and how many of the errors found their own finding as "known".
The inner errors and wrappers are written for this bench (the wrappers' wording is the
stacks' own); nothing comes from a report of the shared set.

    .venv/bin/python bench/stack_wrappers.py [--show]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from decisiontree.context import build_context  # noqa: E402
from decisiontree.diagnose import diagnose  # noqa: E402
from decisiontree.graph import build_graph  # noqa: E402
from decisiontree.records import FindingRecord, FixRecord, Outcome  # noqa: E402

SITE = "/usr/local/lib/python3.12/dist-packages"

# (module, line, function, the error as printed)
ERRORS = {
    "kv cache": (
        "vllm/v1/core/kv_cache_utils.py",
        700,
        "check_enough_kv_cache_memory",
        "ValueError: The model's max seq len (131072) is larger than the maximum number of "
        "tokens that can be stored in KV cache (52000). Try increasing "
        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    ),
    "missing weight": (
        "vllm/model_executor/models/qwen2_moe.py",
        480,
        "load_weights",
        "KeyError: 'model.layers.0.mlp.experts.w2_weight'",
    ),
    "architecture": (
        "vllm/model_executor/models/registry.py",
        420,
        "_raise_for_unsupported",
        "ValueError: Model architectures ['Gemma3ForConditionalGeneration'] are not "
        "supported for now.",
    ),
    "heads vs tp": (
        "vllm/config.py",
        1200,
        "verify_with_parallel_config",
        "ValueError: Total number of attention heads (40) must be divisible by tensor "
        "parallel size (3).",
    ),
    "bf16 on turing": (
        "vllm/platforms/cuda.py",
        310,
        "check_if_supports_dtype",
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
        "8.0. Your Tesla T4 GPU has compute capability 7.5.",
    ),
}


def _raised(name: str) -> str:
    module, line, function, said = ERRORS[name]
    return f'  File "{SITE}/{module}", line {line}, in {function}\n    raise\n{said}'


def _type_and_message(name: str) -> tuple[str, str]:
    exc_type, _, message = ERRORS[name][3].partition(": ")
    return exc_type, message


def vllm_engine(name: str) -> str:
    tag = "(EngineCore_DP0 pid=812) ERROR 12-07 01:00:05 [core.py:700] "
    lines = [
        "EngineCore failed to start.",
        "Traceback (most recent call last):",
        f'  File "{SITE}/vllm/v1/engine/core.py", line 691, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
        *_raised(name).splitlines(),
    ]
    return "\n".join(tag + line for line in lines) + (
        "\nTraceback (most recent call last):\n"
        f'  File "{SITE}/vllm/v1/engine/utils.py", line 600, in wait_for_engine_startup\n'
        '    raise RuntimeError("Engine core initialization failed. "\n'
        "RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}\n"
    )


def vllm_worker(name: str) -> str:
    tag = "(VllmWorker rank=0 pid=4411) ERROR 12-07 01:22:40 [multiproc_executor.py:527] "
    lines = [
        "WorkerProc failed to start.",
        "Traceback (most recent call last):",
        f'  File "{SITE}/vllm/v1/executor/multiproc_executor.py", line 501, in worker_main',
        "    worker = WorkerProc(*args, **kwargs)",
        f'  File "{SITE}/vllm/v1/worker/gpu_worker.py", line 200, in load_model',
        "    self.model_runner.load_model()",
        *_raised(name).splitlines(),
    ]
    return "\n".join(tag + line for line in lines) + (
        "\nERROR 12-07 01:22:41 [core.py:586] EngineCore failed to start.\n"
        "ERROR 12-07 01:22:41 [core.py:586] Exception: WorkerProc initialization failed due "
        "to an exception in a background process. See stack trace for root cause.\n"
    )


def ray(name: str) -> str:
    exc_type, _ = _type_and_message(name)
    return (
        f"ray.exceptions.RayTaskError({exc_type}): ray::RayWorkerWrapper.execute_method() "
        "(pid=4321, ip=10.0.0.2, actor_id=9f8e7d6c, repr=<vllm.executor.ray_utils."
        "RayWorkerWrapper object at 0x7f3a>)\n"
        f'  File "{SITE}/vllm/worker/worker_base.py", line 620, in execute_method\n'
        "    raise e\n"
        f'  File "{SITE}/vllm/worker/worker_base.py", line 611, in execute_method\n'
        "    return run_method(self, method, args, kwargs)\n" + _raised(name) + "\n"
    )


def torchrun(name: str) -> str:
    inner = "\n".join(f"[rank0]: {line}" for line in _raised(name).splitlines())
    return (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/workspace/serve.py", line 20, in <module>\n'
        "[rank0]:     main()\n" + inner + "\n"
        "E1207 01:00:05.123000 4242 torch/distributed/elastic/multiprocessing/api.py:869] "
        "failed (exitcode: 1) local_rank: 0 (pid: 4243) of binary: /usr/bin/python3\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\n"
        "serve.py FAILED\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  exitcode  : 1 (pid: 4243)\n"
        "  traceback : To enable traceback see: "
        "https://pytorch.org/docs/stable/elastic/errors.html\n"
        "============================================================\n"
    )


def sglang(name: str) -> str:
    return (
        "[2026-12-07 01:00:00 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2650, '
        "in run_scheduler_process\n"
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)\n"
        + _raised(name)
        + "\n\n[2026-12-07 01:00:00] Received sigquit from a child process. It usually means "
        "the child failed.\n"
    )


def tgi(name: str) -> str:
    return (
        "2026-12-07T01:00:00.000000Z ERROR text_generation_launcher: Error when initializing "
        "model\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.11/site-packages/text_generation_server/server.py", '
        "line 268, in serve_inner\n"
        "    model = get_model_with_lora_adapters(\n" + _raised(name) + "\n"
        "2026-12-07T01:00:01.000000Z ERROR shard-manager: text_generation_launcher: Shard "
        "complete standard error output:\n"
        "2026-12-07T01:00:01.000000Z ERROR text_generation_launcher: Shard 0 failed to start\n"
        "Error: ShardCannotStart\n"
    )


def asyncio_task(name: str) -> str:
    exc_type, message = _type_and_message(name)
    return (
        "Task exception was never retrieved\n"
        "future: <Task finished name='Task-12' coro=<AsyncLLM.output_handler() done, defined "
        f"at {SITE}/vllm/v1/engine/async_llm.py:380> exception={exc_type}('{message[:30]}')>\n"
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/vllm/v1/engine/async_llm.py", line 420, in output_handler\n'
        "    outputs = await engine_core.get_output_async()\n" + _raised(name) + "\n"
    )


def uvicorn(name: str) -> str:
    return (
        "ERROR:    Exception in ASGI application\n"
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi\n'
        "    result = await app(  # type: ignore[func-returns-value]\n"
        f'  File "{SITE}/vllm/entrypoints/openai/api_server.py", line 600, in '
        "create_chat_completion\n"
        "    generator = await handler.create_chat_completion(request, raw_request)\n"
        + _raised(name)
        + "\n"
    )


def docker_build(name: str) -> str:
    inner = "\n".join(f"#12 1.234 {line}" for line in _raised(name).splitlines())
    step = 'process "/bin/sh -c python3 -m app.check" did not complete successfully: exit code: 1'
    return (
        "#12 [stage-1 5/9] RUN python3 -m app.check\n"
        "#12 1.234 Traceback (most recent call last):\n" + inner + "\n"
        f"#12 ERROR: {step}\n"
        "------\n"
        " > [stage-1 5/9] RUN python3 -m app.check:\n"
        "------\n"
        "Dockerfile:21\n"
        "--------------------\n"
        f"ERROR: failed to solve: {step}\n"
    )


def spawned(name: str) -> str:
    return (
        "Process SpawnProcess-1:\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap\n'
        "    self.run()\n"
        '  File "/usr/lib/python3.12/multiprocessing/process.py", line 108, in run\n'
        "    self._target(*self._args, **self._kwargs)\n" + _raised(name) + "\n"
    )


def accelerate(name: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/workspace/serve.py", line 12, in <module>\n'
        "    main()\n" + _raised(name) + "\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/bin/accelerate", line 8, in <module>\n'
        "    sys.exit(main())\n"
        f'  File "{SITE}/accelerate/commands/launch.py", line 1100, in simple_launcher\n'
        "    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)\n"
        "subprocess.CalledProcessError: Command '['/usr/bin/python3', 'serve.py']' returned "
        "non-zero exit status 1.\n"
    )


def systemd(name: str) -> str:
    inner = "\n".join(
        f"Dec 07 01:00:05 gpu-node-1 vllm[4242]: {line}" for line in _raised(name).splitlines()
    )
    return (
        "Dec 07 01:00:05 gpu-node-1 vllm[4242]: Traceback (most recent call last):\n"
        + inner
        + "\nDec 07 01:00:06 gpu-node-1 systemd[1]: vllm.service: Main process exited, "
        "code=exited, status=1/FAILURE\n"
        "Dec 07 01:00:06 gpu-node-1 systemd[1]: vllm.service: Failed with result 'exit-code'.\n"
    )


WRAPPERS: dict[str, Callable[[str], str]] = {
    "vLLM engine core": vllm_engine,
    "vLLM worker start": vllm_worker,
    "Ray task error": ray,
    "torchrun failure": torchrun,
    "SGLang scheduler": sglang,
    "TGI launcher": tgi,
    "asyncio task": asyncio_task,
    "uvicorn ASGI": uvicorn,
    "docker build": docker_build,
    "multiprocessing": spawned,
    "accelerate launch": accelerate,
    "systemd journal": systemd,
}


def _finding(name: str, wrap: Callable[[str], str]) -> FindingRecord:
    return FindingRecord(
        id=1,
        title=f"{name} inside the stack's own lines",
        kind="crash",
        cause="",
        samples=(wrap(name),),
        conditions=(),
        fixes=(FixRecord(1, "the fix of this error", (), Outcome.RESOLVES),),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="list each false match")
    args = parser.parse_args()
    names = list(ERRORS)
    pairs = len(names) * (len(names) - 1)
    print(f"{len(names)} errors, each the finding once: {pairs} unrelated pairs per wrapper")
    print(f"{'wrapper':20} {'false':>7} {'known':>7}")
    for label, wrap in WRAPPERS.items():
        false, found, shown = 0, 0, []
        for known in names:
            graph = build_graph([_finding(known, wrap)])
            for pasted in names:
                paste = wrap(pasted)
                verdict = str(diagnose(paste, build_context(paste), graph).verdict)
                if pasted == known:
                    found += verdict == "known"
                elif verdict != "none":
                    false += 1
                    shown.append(f"    {pasted} -> finding of {known}: {verdict}")
        print(f"{label:20} {false:>3}/{pairs:<3} {found:>3}/{len(names):<3}")
        if args.show and shown:
            print("\n".join(shown))
    print("false = an unrelated error answered 'known' or 'similar'; known = an error")
    print("wrapped the same way found its own finding as 'known'.")


if __name__ == "__main__":
    main()
