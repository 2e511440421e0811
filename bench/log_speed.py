"""How long does a whole server log take, from the file to the answer?

Writes SGLang-shaped logs (a ServerArgs printout, then request lines with varied numbers,
then the decode crash; fixed seed) of a few sizes, and times what the service does with
an attached log: read its start and end within the paste limit (decisiontree.logfile),
build the context (flags, GPUs, the command the log holds) and diagnose the excerpt.

    .venv/bin/python bench/log_speed.py                   # 1, 10 and 50 MB
    .venv/bin/python bench/log_speed.py --sizes 1,100

The knowledge base is one finding of the crash: graph size is diagnose_speed.py's subject.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from decisiontree.context import build_context  # noqa: E402
from decisiontree.diagnose import diagnose  # noqa: E402
from decisiontree.graph import build_graph  # noqa: E402
from decisiontree.logfile import excerpt  # noqa: E402
from decisiontree.records import (  # noqa: E402
    Change,
    ChangeAction,
    FindingRecord,
    FixRecord,
    Outcome,
)

PASTE_LIMIT = 2_000_000  # FIXGRAPH_MAX_PASTE_BYTES' default
CHUNK = 1 << 20
PRINTOUT = (
    "[2026-03-02 09:58:00] server_args=ServerArgs(model_path='zai-org/GLM-5-NVFP4', "
    "tokenizer_path='zai-org/GLM-5-NVFP4', trust_remote_code=True, tp_size=8, "
    "mem_fraction_static=0.87, kv_cache_dtype='fp8_e4m3', quantization='modelopt_fp4', "
    "attention_backend='nsa', nsa_decode_backend='flashmla_kv', random_seed=1234)\n"
)
CRASH = (
    "[2026-03-02 11:41:07 TP5] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", '
    "line 2711, in process_batch_result_decode\n"
    "    next_token_ids = next_token_ids.tolist()\n"
    "RuntimeError: CUDA error: device-side assert triggered\n"
    "/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:112: _assert_async_cuda_kernel: "
    "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed.\n"
)
FINDING = FindingRecord(
    id=1,
    title="First decode request kills the server",
    kind="crash",
    cause="the flashmla_kv kernel produces NaN logits on sm_120",
    samples=(CRASH,),
    conditions=(),
    fixes=(
        FixRecord(
            11,
            "Use a 16-bit KV cache",
            (Change(ChangeAction.SET_FLAG, "kv-cache-dtype", "bf16"),),
            Outcome.RESOLVES,
        ),
    ),
)

T = TypeVar("T")


def write_log(path: Path, megabytes: float, rng: random.Random) -> None:
    with path.open("w") as out:
        out.write(PRINTOUT)
        written = len(PRINTOUT)
        while written < megabytes * 1_000_000:
            line = (
                f"[2026-03-02 11:{rng.randrange(60):02d}:{rng.randrange(60):02d} "
                f"TP{rng.randrange(8)}] Decode batch. #running-req: {rng.randrange(64)}, "
                f"#token: {rng.randrange(200_000)}, token usage: {rng.random():.2f}, "
                f"gen throughput (token/s): {rng.uniform(10, 900):.2f}\n"
            )
            out.write(line)
            written += len(line)
        out.write(CRASH)


def timed(work: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    result = work()
    return result, (time.perf_counter() - start) * 1000


def measure(path: Path) -> tuple[float, float, float, str]:
    def read() -> str:
        with path.open("rb") as handle:
            return excerpt(iter(lambda: handle.read(CHUNK), b""), PASTE_LIMIT).text

    graph = build_graph([FINDING])
    text, read_ms = timed(read)
    context, context_ms = timed(lambda: build_context(text))
    result, diagnose_ms = timed(lambda: diagnose(text, context, graph))
    found = context.found_command.source if context.found_command else "none"
    answer = f"{result.match}, command from {found}"
    return read_ms, context_ms, diagnose_ms, answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,50", help="log sizes in MB, comma-separated")
    args = parser.parse_args()
    rng = random.Random(18)
    header = ("log", "read ms", "context ms", "diagnose ms", "total ms")
    print(f"{header[0]:>8} {header[1]:>9} {header[2]:>11} {header[3]:>12} {header[4]:>9}  answer")
    with tempfile.TemporaryDirectory() as folder:
        for size in (float(s) for s in args.sizes.split(",")):
            path = Path(folder) / "server.log"
            write_log(path, size, rng)
            read_ms, context_ms, diagnose_ms, answer = measure(path)
            total = read_ms + context_ms + diagnose_ms
            print(
                f"{size:>6g}MB {read_ms:>9.0f} {context_ms:>11.0f} {diagnose_ms:>12.0f} "
                f"{total:>9.0f}  {answer}"
            )


if __name__ == "__main__":
    main()
