"""Abuse run: anonymous clients post worst-case pastes to the web form while a token
client diagnoses normally through the API. Does the token client still get answers?

Gunicorn (sync workers) serving config.wsgi against PostgreSQL and Redis with the
starter knowledge base. First the token client alone (idle), then the same client
while `--clients` anonymous clients, each its own address behind one proxy of ours
(FIXGRAPH_NUM_PROXIES=1, X-Forwarded-For), post 2 MB pastes of the shapes that cost
the parser most (comma-heavy lines, CRLF lines) to /diagnose/ for `--seconds`.
Prints the token client's latency idle and under abuse, and what the abusers got.

    bash scripts/test-services.sh run -- .venv/bin/python bench/abuse.py \\
        [--clients 8] [--seconds 30] [--workers 3]

Traffic goes to 127.0.0.1 only; every loop stops after --seconds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from http.cookies import SimpleCookie
from urllib.parse import urlencode

from api_load import PY, ROOT, free_port, pastes, prepare

PASTE_BYTES = 2_000_000


def worst_case_pastes() -> list[str]:
    """2 MB each: the shapes the audit found slowest to parse (seconds of CPU)."""
    commas = ("a," * 50 + "\n") * (PASTE_BYTES // 101)
    crlf = "RuntimeError: x\r\n" * (PASTE_BYTES // 17)
    return [commas[:PASTE_BYTES], crlf[:PASTE_BYTES]]


def start_gunicorn(env: dict[str, str], port: int, workers: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [PY, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--timeout", "120", "--log-level", "warning"],
        cwd=ROOT, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            status, _, _ = call(port, "GET", "/api/v1/schema/")
            if status == 200:
                return server
        except OSError:
            time.sleep(0.5)
    server.kill()
    raise SystemExit("gunicorn did not come up within 60 s")


def call(
    port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=180)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def token_client(port: int, token: str, texts: list[str], until: float) -> list[float]:
    """Diagnoses one after another until `until`; their latencies in ms (non-200s fail)."""
    latencies = []
    i = 0
    while time.monotonic() < until:
        body = json.dumps({"traceback": texts[i % len(texts)]}).encode()
        started = time.perf_counter()
        status, _, _ = call(port, "POST", "/api/v1/diagnose/", body,
                            {"Authorization": f"Token {token}",
                             "Content-Type": "application/json"})  # fmt: skip
        if status != 200:
            raise SystemExit(f"the token client got HTTP {status}")
        latencies.append((time.perf_counter() - started) * 1000)
        i += 1
    return latencies


def abuser(port: int, number: int, until: float, seen: Counter[int]) -> None:
    """One anonymous client (its own address): the form's CSRF cookie, then 2 MB pastes."""
    address = {"X-Forwarded-For": f"198.51.100.{number + 1}"}
    _, headers, _ = call(port, "GET", "/diagnose/", headers=address)
    cookie = SimpleCookie(headers.get("set-cookie", ""))
    csrf = cookie["csrftoken"].value
    # Encoded once: the abusers' own CPU shares this machine with the server.
    bodies = [urlencode({"text": text, "csrfmiddlewaretoken": csrf}).encode()
              for text in worst_case_pastes()]  # fmt: skip
    i = number
    while time.monotonic() < until:
        body = bodies[i % len(bodies)]
        try:
            status, headers, _ = call(port, "POST", "/diagnose/", body, {
                **address, "Cookie": f"csrftoken={csrf}",
                "Content-Type": "application/x-www-form-urlencoded",
            })  # fmt: skip
        except OSError:  # answered (and closed) before the whole body was sent
            status, headers = 0, {}
        seen[status] += 1
        i += 1
        if status in (429, 503):  # a polite-enough abuser: waits what it is told, at most 1 s
            time.sleep(min(float(headers.get("retry-after", "1")), 1.0))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("DATABASE_URL must point at PostgreSQL: run under test-services.sh")
    if not (os.environ.get("CACHE_URL") or os.environ.get("REDIS_URL")):
        raise SystemExit("REDIS_URL (or CACHE_URL) must be set: run under test-services.sh")
    env = {
        **os.environ,
        "DEBUG": "False",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-" * 9),
        "FIXGRAPH_API_RATE_TOKEN": "1000000/min",
        "FIXGRAPH_NUM_PROXIES": "1",
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    token = prepare(env)
    port = free_port()
    server = start_gunicorn(env, port, args.workers)
    texts = pastes()
    try:
        token_client(port, token, texts, time.monotonic() + 5)  # every worker builds its graph
        idle = token_client(port, token, texts, time.monotonic() + args.seconds)
        seen: Counter[int] = Counter()
        until = time.monotonic() + args.seconds
        threads = [threading.Thread(target=abuser, args=(port, n, until, seen))
                   for n in range(args.clients)]  # fmt: skip
        for thread in threads:
            thread.start()
        busy = token_client(port, token, texts, until)
        for thread in threads:
            thread.join(timeout=300)
    finally:
        server.terminate()
        server.wait(timeout=30)
    settings = (f"FIXGRAPH_WEB_DIAGNOSE_RATE={env.get('FIXGRAPH_WEB_DIAGNOSE_RATE', 'default')}, "
                f"FIXGRAPH_WEB_DIAGNOSE_CONCURRENCY="
                f"{env.get('FIXGRAPH_WEB_DIAGNOSE_CONCURRENCY', 'default')}")  # fmt: skip
    print(f"Abuse run: gunicorn {args.workers} sync workers, PostgreSQL, Redis; {settings}")
    print(f"token client: POST /api/v1/diagnose/, one at a time, {len(texts)} real reports")
    print(f"{'phase':<28} {'requests':>9} {'p50 ms':>8} {'p99 ms':>8}")
    for name, rows in (("idle", idle), (f"{args.clients} anonymous abusers", busy)):
        print(f"{name:<28} {len(rows):>9} {statistics.median(rows):>8.1f} "
              f"{percentile(rows, 0.99):>8.1f}")  # fmt: skip
    print(f"p99 under abuse / idle p99: {percentile(busy, 0.99) / percentile(idle, 0.99):.2f}x")
    answers = ", ".join(
        f"{status or 'closed early'}: {count}" for status, count in sorted(seen.items())
    )
    print(f"abusers' 2 MB posts to /diagnose/ in {args.seconds:g} s: {answers}")


if __name__ == "__main__":
    sys.exit(main())
