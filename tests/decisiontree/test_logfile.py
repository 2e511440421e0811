"""A whole server log read as a paste: the launch at its start and the crash at its end
kept, the middle left out with a marker, in whole lines, whatever the chunks."""

from __future__ import annotations

import gzip

import pytest

from decisiontree import logfile
from decisiontree.logfile import LogUnreadable, excerpt, size
from decisiontree.traceback import parse

LAUNCH = (
    "[2026-03-02 10:00:01] server_args=ServerArgs(model_path='zai-org/GLM-5-NVFP4', "
    "tp_size=8, kv_cache_dtype='fp8_e4m3', attention_backend='triton')\n"
)
REQUEST = "[2026-03-02 10:{m:02d}:{s:02d} TP0] Decode batch. #running-req: 3, #token: {n}, gen throughput (token/s): 41.2\n"
CRASH = """[2026-03-02 13:14:15 TP3] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2100, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/sgl-workspace/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 1411, in set_kv_buffer
    assert not self.nsa_kv_cache_store_fp8
AssertionError
"""


def server_log(requests: int) -> bytes:
    lines = [REQUEST.format(m=i // 60 % 60, s=i % 60, n=1000 + i) for i in range(requests)]
    return (LAUNCH + "".join(lines) + CRASH).encode()


def chunks(data: bytes, size_of: int) -> list[bytes]:
    return [data[i : i + size_of] for i in range(0, len(data), size_of)]


def test_a_log_within_the_budget_is_read_whole() -> None:
    log = server_log(10)
    found = excerpt(chunks(log, 64), budget=len(log))
    assert found.text == log.decode()
    assert found.omitted_bytes == 0 and found.describe("server.log") == ""


def test_a_large_log_keeps_the_launch_and_the_crash_in_whole_lines() -> None:
    log = server_log(50_000)  # about 5 MB
    found = excerpt(chunks(log, 1 << 20), budget=200_000)

    assert len(found.text.encode()) <= 200_000
    assert found.text.startswith(LAUNCH) and found.text.endswith(CRASH)
    marker = f"[... {found.omitted_bytes:,} bytes of the log left out ...]"
    assert found.text.count(marker) == 1
    original = set(log.decode().splitlines())
    assert all(line in original for line in found.text.splitlines() if line != marker)
    assert found.head_bytes + found.tail_bytes + found.omitted_bytes == len(log)


def test_the_excerpt_does_not_depend_on_how_the_log_arrives() -> None:
    log = server_log(3_000)
    first = excerpt(chunks(log, 1), budget=20_000)
    assert excerpt(chunks(log, 7), budget=20_000) == first
    assert excerpt(chunks(log, 65_536), budget=20_000) == first


def test_the_excerpt_is_diagnosed_like_the_crash_it_holds() -> None:
    found = excerpt(chunks(server_log(50_000), 1 << 20), budget=200_000)
    parsed = parse(found.text)
    assert [e.type for e in parsed.exceptions] == ["AssertionError"]
    assert "set_kv_buffer" in [f.function for f in parsed.exceptions[0].frames]


def test_it_says_what_it_read_in_sizes_people_use() -> None:
    found = excerpt(chunks(server_log(50_000), 1 << 20), budget=2_000_000)
    said = found.describe("server.log")
    assert said.startswith("server.log is 5.")
    assert " MB: read its first 250 KB (the launch) and its last 1.7 MB (the end), " in said
    assert said.endswith("between them left out")
    assert [size(940), size(256_000), size(48_200_000)] == ["940 bytes", "256 KB", "48.2 MB"]


def test_a_gzipd_log_is_read_as_the_log_it_holds() -> None:
    """Large logs are attached compressed: unpacked as they stream, in bounded memory."""
    log = server_log(50_000)
    packed = gzip.compress(log)
    plain = excerpt(chunks(log, 1 << 20), budget=200_000)

    found = excerpt(chunks(packed, 4096), budget=200_000)

    assert (found.text, found.total_bytes, found.stored) == (plain.text, len(log), "gzip")
    assert found.describe("server.log.gz").startswith("server.log.gz is 5.")
    assert " MB unpacked: read its first " in found.describe("server.log.gz")


def test_gzip_members_one_after_another_are_one_log() -> None:
    """`cat monday.log.gz tuesday.log.gz` is a valid gzip file of both."""
    packed = gzip.compress(LAUNCH.encode()) + gzip.compress(CRASH.encode())
    assert excerpt(chunks(packed, 10), budget=100_000).text == LAUNCH + CRASH


def test_a_damaged_or_cut_archive_is_refused_with_what_to_attach() -> None:
    packed = gzip.compress(server_log(5_000))
    with pytest.raises(LogUnreadable, match="cut short after .* its end, where a crash is"):
        excerpt([packed[: len(packed) // 2]], budget=100_000)
    with pytest.raises(LogUnreadable, match="cannot be unpacked .* attach the plain log"):
        excerpt([packed[:10] + b"not deflate data" * 10], budget=100_000)


def test_an_archive_that_unpacks_past_the_bound_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(logfile, "MAX_UNPACKED_BYTES", 1_000_000)
    bomb = gzip.compress(b"\n" * 5_000_000)  # 5 MB of nothing, packed into kilobytes
    with pytest.raises(LogUnreadable, match="unpacks to more than 1.0 MB: attach its end"):
        excerpt([bomb], budget=100_000)


def test_a_utf16_log_is_read_as_text() -> None:
    """Windows PowerShell's `>` writes UTF-16 with a byte-order mark."""
    log = (LAUNCH + CRASH).replace("\n", "\r\n").encode("utf-16")
    found = excerpt(chunks(log, 7), budget=100_000)  # odd chunks split its two-byte units
    assert found.stored == "UTF-16"
    assert found.text.replace("\r\n", "\n") == LAUNCH + CRASH
