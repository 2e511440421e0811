"""Where a server's memory went on its way up, read from its start-up log."""

from __future__ import annotations

from decisiontree.server_memory import log_readings, memory_log

GIB = 1024**3

# SGLang with eight ranks: each prints its stages; TP1 has the least room when capture starts.
SGLANG_CAPTURE = """\
[2026-02-18 22:41:03 TP0] Load weight begin. avail mem=94.12 GB
[2026-02-18 22:41:03 TP1] Load weight begin. avail mem=94.12 GB
[2026-02-18 22:41:09 TP0] Load weight end. type=GlmMoeDsaForCausalLM, dtype=torch.bfloat16, avail mem=24.51 GB, mem usage=70.12 GB.
[2026-02-18 22:41:09 TP1] Load weight end. type=GlmMoeDsaForCausalLM, dtype=torch.bfloat16, avail mem=24.49 GB, mem usage=70.12 GB.
[2026-02-18 22:41:12 TP0] KV Cache is allocated. #tokens: 611840, KV size: 21.80 GB
[2026-02-18 22:41:12 TP1] KV Cache is allocated. #tokens: 611840, KV size: 21.80 GB
[2026-02-18 22:41:14 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=1.92 GB
[2026-02-18 22:41:14 TP1] Capture cuda graph begin. This can take up to several minutes. avail mem=1.80 GB
"""

VLLM_NO_ROOM = """\
(VllmWorker TP0 pid=2291) INFO 08-14 21:03:11 [gpu_model_runner.py:1892] Model loading took 30.7127 GiB and 41.022301 seconds
(VllmWorker TP0 pid=2291) INFO 08-14 21:03:29 [gpu_worker.py:255] Available KV cache memory: -1.43 GiB
(EngineCore_0 pid=2158) ERROR 08-14 21:03:29 [core.py:632] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
"""


def test_sglang_stages_are_read_per_rank_with_the_tightest_rank_beside_the_first() -> None:
    first, tightest = memory_log(SGLANG_CAPTURE)

    assert first.rank == "TP0" and [s.stage for s in first.stages] == [
        "loading weights",
        "weights loaded",
        "KV cache allocated",
        "capturing CUDA graphs",
    ]
    assert first.stages[1].used == round(70.12 * GIB) and first.stages[2].used == round(21.8 * GIB)
    assert tightest.rank == "TP1" and tightest.stages[-1].free == round(1.80 * GIB)
    assert first.describe().endswith("capturing CUDA graphs (1.92 GiB free), not finished")


def test_a_finished_capture_is_not_said_to_have_stopped() -> None:
    done = SGLANG_CAPTURE + (
        "[2026-02-18 22:42:00 TP0] Capture cuda graph end. Time elapsed: 41.27 s. "
        "mem usage=1.31 GB. avail mem=0.61 GB.\n"
    )
    first = memory_log(done)[0]

    assert not first.stopped_capturing
    assert first.stages[-1].describe() == "CUDA graphs captured (1.31 GiB, 624.64 MiB free)"


def test_ranks_that_print_alike_are_shown_once() -> None:
    alike = SGLANG_CAPTURE.replace("avail mem=1.80", "avail mem=1.92").replace("24.49", "24.51")

    assert [rank.rank for rank in memory_log(alike)] == ["TP0"]


def test_vllm_with_no_room_for_the_kv_cache_says_by_how_much_and_after_what() -> None:
    ranks = memory_log(VLLM_NO_ROOM)

    assert ranks[0].describe() == "TP0: weights loaded (30.71 GiB) → KV cache budget (-1.43 GiB)"
    [reading] = log_readings(ranks, VLLM_NO_ROOM)
    assert reading.kind == "no_kv_cache_room"
    assert "no room for the KV cache (1.43 GiB short) after the weights took 30.71 GiB" in (
        reading.text
    )


def test_a_cache_smaller_than_one_full_request_is_said_so() -> None:
    log = "INFO 11-19 09:55:31 gpu_executor.py:126] Maximum concurrency for 131072 tokens per request: 0.75x\n"

    [reading] = log_readings(memory_log(log), log)
    assert reading.kind == "request_does_not_fit"
    assert reading.text.startswith("The KV cache holds 0.75 of one 131072-token request")
    roomy = log.replace("0.75x", "12.40x")
    assert log_readings(memory_log(roomy), roomy) == ()


def test_a_log_without_memory_stages_gives_none() -> None:
    assert memory_log("[2026-02-18 22:41:03 TP0] Init torch distributed begin.\n") == ()
