"""Request/response examples for the API docs, taken from the starter knowledge base.

`manage.py write_api_examples` writes them from the knowledge base it runs on (load the
starter one first: `make run` does); the docs show them as they are.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).resolve().parent
DIAGNOSE = FOLDER / "diagnose.json"

# A Triton-backend crash as a user on the starter knowledge base's hardware would paste it.
DIAGNOSE_REQUEST: dict[str, Any] = {
    "traceback": (
        "[2026-03-04 09:12:40 TP2] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/srv/sglang/python/sglang/srt/layers/attention/triton_backend.py", line 1020, '
        "in forward_decode\n"
        "    forward_batch.token_to_kv_pool.set_kv_buffer(\n"
        '  File "/srv/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 1498, in '
        "set_kv_buffer\n"
        "    assert not self.nsa_kv_cache_store_fp8\n"
        "AssertionError\n"
    ),
    "gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    "launch_command": (
        "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp-size 8 "
        "--quantization modelopt_fp4 --attention-backend triton --kv-cache-dtype fp8_e4m3"
    ),
}


@cache
def diagnose_example() -> dict[str, Any]:
    """{"request": ..., "response": ...}; empty when the file was never written."""
    if not DIAGNOSE.exists():
        return {}
    data: dict[str, Any] = json.loads(DIAGNOSE.read_text())
    return data
