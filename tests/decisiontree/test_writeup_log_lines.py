"""A log pasted into a write-up is read as the paste parser reads it."""

from __future__ import annotations

from decisiontree.documents import extract_document
from decisiontree.traceback import parse

COMPOSE_TRACEBACK = """\
sglang-1  | Traceback (most recent call last):
sglang-1  |   File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2801, in run_scheduler_process
sglang-1  |     scheduler.event_loop_normal()
sglang-1  |   File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 1377, in set_kv_buffer
sglang-1  |     assert not self.nsa_kv_cache_store_fp8
sglang-1  | AssertionError
"""

WRITEUP = f"""\
# Compose stack on the Blackwell box falls over at the first request

We brought the stack up with docker compose, sent one chat request, and the
scheduler went down. The container log said:

{COMPOSE_TRACEBACK}
Going back to a bf16 KV cache (`--kv-cache-dtype bf16`) made it serve again.
"""


def test_a_compose_traceback_in_a_writeup_is_kept_whole() -> None:
    """Bug: stored as the one-line sample `sglang-1  | Traceback (most recent call last):`."""
    (finding,) = extract_document(WRITEUP, "compose.md").findings

    assert finding.samples, "the traceback was not found"
    sample = finding.samples[0]
    assert sample.strip() == COMPOSE_TRACEBACK.strip()
    assert parse(sample).primary is not None
    assert parse(sample).primary.type == "AssertionError"
