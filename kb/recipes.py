"""FixGraph's own load generator, and the small HTTP checks a validation run needs.

It talks to an OpenAI-compatible server (SGLang, vLLM) through the SSH tunnel,
streams completions and times every chunk, so throughput, TTFT and ITL come from
one tool whatever the framework. Threads, not asyncio: the SSH session already
runs its own loop, and a few dozen concurrent streams are what a check needs.
"""

from __future__ import annotations

import http.client
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from statistics import fmean
from typing import Any
from urllib.parse import urlsplit

from decisiontree.recipes import BenchMetrics

WORDS = [
    "gpu", "kernel", "tensor", "cache", "batch", "token", "layer", "weight", "expert", "router",
    "prefill", "decode", "memory", "stream", "graph", "capture", "shard", "rank", "attention",
]  # fmt: skip


@dataclass(frozen=True)
class LoadSettings:
    """The load: `requests` completions, `concurrency` at a time, lengths in tokens.

    `tool` "fixgraph" drives it from the worker through the tunnel; "framework" runs the
    framework's own benchmark on the host (`sglang.bench_serving`, `vllm bench serve`).
    """

    tool: str = "fixgraph"
    requests: int = 64
    concurrency: int = 8
    input_tokens: int = 256
    output_tokens: int = 256
    request_timeout_s: float = 300.0

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> LoadSettings:
        known = {k: raw[k] for k in cls.__dataclass_fields__ if k in raw}
        return cls(**known)


@dataclass(frozen=True)
class RequestTiming:
    ok: bool
    started: float
    finished: float
    first_token: float | None
    chunk_times: tuple[float, ...]
    output_tokens: int
    error: str = ""


def http_status(url: str, *, timeout: float = 5.0) -> int | None:
    """The status of GET `url`; None when nothing answers (still starting, or gone)."""
    try:
        conn = _connection(url, timeout)
        conn.request("GET", urlsplit(url).path or "/")
        status = conn.getresponse().status
        conn.close()
        return status
    except (OSError, http.client.HTTPException):
        return None


def served_model(base_url: str, *, timeout: float = 10.0) -> str:
    """The first model id of GET /v1/models (the name requests must use)."""
    conn = _connection(base_url, timeout)
    conn.request("GET", "/v1/models")
    data = json.loads(conn.getresponse().read())
    conn.close()
    return str(data["data"][0]["id"])


def measure(base_url: str, settings: LoadSettings) -> BenchMetrics:
    """Run the load against `base_url` and summarise it in FixGraph's metric schema."""
    model = served_model(base_url)
    with ThreadPoolExecutor(max_workers=settings.concurrency) as pool:
        timings = list(pool.map(lambda i: one_completion(base_url, model, i, settings),
                                range(settings.requests)))  # fmt: skip
    return summarise(timings)


def one_completion(base_url: str, model: str, index: int, settings: LoadSettings) -> RequestTiming:
    """One streamed completion, timing each chunk as it arrives."""
    started = time.monotonic()
    try:
        conn = _connection(base_url, settings.request_timeout_s)
        conn.request("POST", "/v1/completions", body=_completion_body(model, index, settings),
                     headers={"Content-Type": "application/json"})  # fmt: skip
        response = conn.getresponse()
        if response.status != 200:
            return _failed(started, f"HTTP {response.status}: {response.read()[:200]!r}")
        chunk_times, tokens = _read_stream(response)
        conn.close()
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return _failed(started, str(exc))
    first = chunk_times[0] if chunk_times else None
    return RequestTiming(bool(chunk_times), started, time.monotonic(), first,
                         tuple(chunk_times), tokens)  # fmt: skip


def _completion_body(model: str, index: int, settings: LoadSettings) -> str:
    # Distinct prompts so a prefix cache cannot make later requests look faster.
    words = [WORDS[(index * 7 + i) % len(WORDS)] for i in range(settings.input_tokens)]
    return json.dumps({
        "model": model,
        "prompt": f"request {index}: " + " ".join(words),
        "max_tokens": settings.output_tokens,
        "temperature": 0,
        "ignore_eos": True,  # a fixed output length makes runs comparable
        "stream": True,
        "stream_options": {"include_usage": True},
    })  # fmt: skip


def _read_stream(response: http.client.HTTPResponse) -> tuple[list[float], int]:
    """Chunk arrival times and the output token count (from `usage` when sent)."""
    times: list[float] = []
    usage_tokens: int | None = None
    for raw in response:
        line = raw.decode(errors="replace").strip()
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            break
        event = json.loads(payload)
        if any(choice.get("text") for choice in event.get("choices") or ()):
            times.append(time.monotonic())
        if event.get("usage"):
            usage_tokens = int(event["usage"].get("completion_tokens") or 0)
    return times, usage_tokens if usage_tokens is not None else len(times)


def _failed(started: float, error: str) -> RequestTiming:
    return RequestTiming(False, started, time.monotonic(), None, (), 0, error)


def summarise(timings: list[RequestTiming]) -> BenchMetrics:
    """Throughput over the wall time of the whole load; TTFT and ITL as means."""
    done = [t for t in timings if t.ok]
    if not done:
        errors = {t.error for t in timings if t.error}
        return BenchMetrics(tool="fixgraph", completed=0, failed=len(timings),
                            extra={"errors": len(errors)})  # fmt: skip
    duration = max(t.finished for t in done) - min(t.started for t in timings)
    tokens = sum(t.output_tokens for t in done)
    gaps = [b - a for t in done for a, b in zip(t.chunk_times, t.chunk_times[1:], strict=False)]
    firsts = [(t.first_token or t.started) - t.started for t in done]
    return BenchMetrics(
        tool="fixgraph",
        output_throughput_tok_s=round(tokens / duration, 2),
        request_rate=round(len(done) / duration, 3),
        ttft_ms=round(fmean((t.first_token or t.started) - t.started for t in done) * 1000, 2),
        itl_ms=round(fmean(gaps) * 1000, 2) if gaps else None,
        completed=len(done),
        failed=len(timings) - len(done),
        duration_s=round(duration, 2),
        # The runbook's table shows the middle and the tail, as serving benchmarks do.
        extra={
            "median_ttft_ms": round(percentile(firsts, 0.5) * 1000, 2),
            "p99_ttft_ms": round(percentile(firsts, 0.99) * 1000, 2),
            **(
                {
                    "median_itl_ms": round(percentile(gaps, 0.5) * 1000, 2),
                    "p99_itl_ms": round(percentile(gaps, 0.99) * 1000, 2),
                }
                if gaps
                else {}
            ),
        },
    )


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank value below which `share` of `values` lie."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _connection(url: str, timeout: float) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80,
                                      timeout=timeout)  # fmt: skip
