"""Concurrent clients against POST /api/v1/diagnose/ on the production setup.

Gunicorn serving config.wsgi against PostgreSQL with the starter knowledge base
loaded and a `read` token; N client threads post real reports from
bench/corpus/reports/ (known and unrelated) for a fixed number of requests.
Prints throughput and latency percentiles per concurrency level.

    bash scripts/test-services.sh run -- .venv/bin/python bench/api_load.py \\
        [--requests 400] [--concurrency 1,4,8] [--workers 2]

Needs DATABASE_URL pointing at PostgreSQL (the script migrates that database and
loads data into it; use the throw-away one `scripts/test-services.sh` starts).
Traffic goes to 127.0.0.1 only; the run is bounded by --requests.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "bench" / "corpus" / "reports"
PY = sys.executable


def manage(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def prepare(env: dict[str, str]) -> str:
    """Migrate, load vocabulary and knowledge, and issue a read token; returns the token."""
    manage("migrate", "--noinput", env=env)
    manage("load_vocabulary", env=env)
    manage("ingest", str(ROOT / "knowledge"), "--publish", env=env)
    manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; "
        "User.objects.get_or_create(username='load-bench')",
        env=env,
    )
    out = manage("issue_token", "load-bench", "--scopes", "read", "--name", "api-load", env=env)
    return next(word for word in out.split() if word.startswith("fxg_"))


def pastes() -> list[str]:
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    files = [q for f in manifest["findings"] for q in f["query_reports"]] + manifest["unrelated"]
    return [(CORPUS / name).read_text() for name in files]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_gunicorn(env: dict[str, str], port: int, workers: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [
            PY,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--threads",
            "2",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/schema/", timeout=5)  # noqa: S310
            return server
        except OSError:
            time.sleep(0.5)
    server.kill()
    raise SystemExit("gunicorn did not come up within 60 s")


def post(url: str, token: str, text: str) -> tuple[float, int]:
    body = json.dumps({"traceback": text}).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    return (time.perf_counter() - started) * 1000, status


def drive(url: str, token: str, texts: list[str], total: int, clients: int) -> dict[str, float]:
    jobs = [texts[i % len(texts)] for i in range(total)]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        results = list(pool.map(lambda text: post(url, token, text), jobs))
    elapsed = time.perf_counter() - started
    latencies = sorted(ms for ms, _ in results)
    return {
        "clients": clients,
        "requests": total,
        "errors": sum(1 for _, status in results if status != 200),
        "rps": total / elapsed,
        "p50": statistics.median(latencies),
        "p99": latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", default="1,4,8")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit(
            "DATABASE_URL must point at PostgreSQL: run under scripts/test-services.sh"
        )
    env = {
        **os.environ,
        "DEBUG": "False",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-" * 9),
        "FIXGRAPH_API_RATE_TOKEN": "1000000/min",
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    token = prepare(env)
    port = free_port()
    server = start_gunicorn(env, port, args.workers)
    url = f"http://127.0.0.1:{port}/api/v1/diagnose/"
    texts = pastes()
    try:
        drive(url, token, texts, args.workers * 4, args.workers)  # each worker builds its graph
        rows = [
            drive(url, token, texts, args.requests, int(c)) for c in args.concurrency.split(",")
        ]
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(
        f"POST /api/v1/diagnose/ — gunicorn {args.workers} workers x 2 threads, PostgreSQL, "
        f"{len(texts)} distinct real reports"
    )
    print(f"{'clients':>8} {'requests':>9} {'errors':>7} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
    for r in rows:
        print(
            f"{r['clients']:>8} {r['requests']:>9} {r['errors']:>7} {r['rps']:>8.1f} "
            f"{r['p50']:>8.1f} {r['p99']:>8.1f}"
        )


if __name__ == "__main__":
    main()
