"""Fixtures for validation runs: the real sshd of `make test` dressed up as a GPU host.

The test host gets a folder of test fixtures (a fake `nvidia-smi` serving output
captured on a real H200, a fake `dcgmi`, fake `sglang`/`vllm` entry points that start
an OpenAI-compatible server streaming at a known rate), installed over SSH. The
registered Host's environment puts that folder first on PATH/PYTHONPATH; the product
code only ever runs the commands it would run on a real GPU host.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kb import remote
from kb.models import (
    Finding,
    Fix,
    FlagSetting,
    FrameworkRelease,
    Host,
    LanguageModel,
    ValidationRun,
)
from tests.services import in_ci, require_services

HERE = Path(__file__).resolve().parent
GPU_HOST = HERE / "fixtures" / "gpu_host"
CAPTURED = HERE.parent / "decisiontree" / "fixtures" / "env"
# What the fake nvidia-smi prints: captured on an H200, the `-q` memory fields of a healthy
# H100 captured, and those of a GPU waiting for a remap written.
HOST_FILES = (
    "captured_h200_query_gpu.csv",
    "captured_h200_nvidia_smi.txt",
    "captured_h100_nvidia_smi_q_health.txt",
    "nvidia_smi_q_h100_remap_pending.txt",
)
REPO = HERE.parents[1]

# The fake server streams each request at this many tokens per second.
TOKENS_PER_S = 200.0
TTFT_MS = 20.0
FAST_LOAD = {"requests": 16, "concurrency": 4, "input_tokens": 32, "output_tokens": 100}


@pytest.fixture(scope="session")
def ssh_target() -> remote.Target:
    require_services()
    env = os.environ
    return remote.Target(
        address=env["FIXGRAPH_TEST_SSH_HOST"],
        port=int(env["FIXGRAPH_TEST_SSH_PORT"]),
        username=env["FIXGRAPH_TEST_SSH_USER"],
        key_path=env["FIXGRAPH_TEST_SSH_KEY"],
        host_key=Path(env["FIXGRAPH_TEST_SSH_HOST_KEY"]).read_text().strip(),
    )


# scripts/test-services.sh puts its namespace hosts here; nothing else may be a target.
NETNS_TEST_NET = ipaddress.ip_network("10.200.0.0/16")


@pytest.fixture(scope="session")
def netns_targets(ssh_target: remote.Target) -> list[remote.Target]:
    """The test hosts in network namespaces (own sshd on port 22, own host key and
    hostname); same user, client key and home folder as the loopback host."""
    addresses = os.environ.get("FIXGRAPH_TEST_NETNS_HOSTS", "")
    if not addresses:
        hint = "no test hosts in network namespaces (make test makes them when run as root)"
        if in_ci():
            pytest.fail(hint, pytrace=False)
        pytest.skip(hint)
    keys = os.environ["FIXGRAPH_TEST_NETNS_HOST_KEYS"].split(",")
    return [
        netns_target(ssh_target, address, Path(key))
        for address, key in zip(addresses.split(","), keys, strict=True)
    ]


def netns_target(loopback: remote.Target, address: str, host_key: Path) -> remote.Target:
    assert ipaddress.ip_address(address) in NETNS_TEST_NET, f"{address} is no namespace host"
    return remote.Target(
        address=address,
        port=22,
        username=loopback.username,
        key_path=loopback.key_path,
        host_key=host_key.read_text().strip(),
    )


@pytest.fixture(scope="session")
def fake_gpu_dir(ssh_target: remote.Target) -> Iterator[str]:
    """The fixture folder installed in the test user's home, over SSH; its absolute path."""
    with remote.connect(ssh_target) as ssh:
        home = ssh.run("echo $HOME", timeout=10).stdout.strip()
        folder = f"{home}/fakegpu-{uuid.uuid4().hex[:8]}"
        files = [
            (p, p.relative_to(GPU_HOST).as_posix()) for p in GPU_HOST.rglob("*") if p.is_file()
        ]
        files += [(CAPTURED / name, f"captured/{name}") for name in HOST_FILES]
        for local, relative in files:
            upload(ssh, local, f"{folder}/{relative}")
        yield folder
        ssh.run(f"rm -rf {shlex.quote(folder)}", timeout=30)


def upload(ssh: remote.Session, local: Path, path: str) -> None:
    mode = "755" if os.access(local, os.X_OK) else "644"
    quoted = shlex.quote(path)
    command = f"mkdir -p $(dirname {quoted}) && cat > {quoted} && chmod {mode} {quoted}"
    result = ssh.run(command, timeout=30, stdin=local.read_text())
    assert result.ok, result.stderr


def fake_env(folder: str, **overrides: str) -> dict[str, str]:
    env = {
        "PATH": f"{folder}/bin:/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": f"{folder}/site",
        "FAKE_GPU_TOKENS_PER_S": str(TOKENS_PER_S),
        "FAKE_GPU_TTFT_MS": str(TTFT_MS),
        "FAKE_GPU_STARTUP_S": "1",
        "FAKE_SGLANG_VERSION": "0.5.9",
    }
    return {**env, **overrides}


@pytest.fixture
def make_host(ssh_target: remote.Target, fake_gpu_dir: str) -> Callable[..., Host]:
    def make(labels: tuple[str, ...] = (), **env: str) -> Host:
        return Host.objects.create(
            name=f"gpu-{uuid.uuid4().hex[:8]}",
            address=ssh_target.address,
            port=ssh_target.port,
            username=ssh_target.username,
            key_path=ssh_target.key_path,
            host_key=ssh_target.host_key,
            labels=list(labels),
            env=fake_env(fake_gpu_dir, **env),
        )

    return make


@pytest.fixture
def make_fix() -> Callable[..., Fix]:
    """A GLM-5-style finding launched with fp8 KV cache; the fix sets bf16 and a decode backend."""

    def make(
        changes: list[dict[str, Any]] | None = None, outcome: str = Fix.Outcome.RESOLVES
    ) -> Fix:
        finding = Finding.objects.create(
            title="fp8 KV cache assert in the sparse-attention decode path",
            status=Finding.Status.PUBLISHED,
            framework=FrameworkRelease.objects.get_or_create(name="sglang", version="0.5.9")[0],
            model=LanguageModel.objects.get_or_create(name="zai-org/GLM-5-NVFP4")[0],
        )
        FlagSetting.objects.create(finding=finding, name="tp-size", value="8")
        FlagSetting.objects.create(finding=finding, name="kv-cache-dtype", value="fp8_e4m3")
        if changes is None:
            changes = [
                {"action": "set_flag", "name": "kv-cache-dtype", "value": "bf16"},
                {"action": "set_flag", "name": "dsa-decode-backend", "value": "flashmla_sparse"},
            ]
        return Fix.objects.create(
            finding=finding, summary="bf16 KV cache", changes=changes, outcome=outcome
        )

    return make


def queue_run(fix: Fix, host: Host, **recipe: Any) -> ValidationRun:
    base = {"load": FAST_LOAD, "startup_timeout_s": 30, "lease_s": 6}
    return ValidationRun.objects.create(fix=fix, host=host, recipe={**base, **recipe})


def expected_throughput(load: dict[str, int]) -> float:
    """Output tokens per second the fake server gives this load: every stream waits TTFT,
    then sends a token every 1/rate seconds; `concurrency` streams run side by side."""
    per_request_s = TTFT_MS / 1000 + (load["output_tokens"] - 1) / TOKENS_PER_S
    return load["concurrency"] * load["output_tokens"] / per_request_s


def throughput_fits(load: dict[str, int], measured: float) -> bool:
    """Whether `measured` is what the fixture server can give `load`: never above its
    ceiling, and not so far below that a wrong field or unit was read. A loaded test
    machine only slows the streams, so there is no tight lower bound."""
    ceiling = expected_throughput(load)
    return ceiling / 4 <= measured <= ceiling * 1.10


def remote_group_alive(target: remote.Target, run: ValidationRun) -> bool:
    """Whether any process of the run's server group still exists on the host."""
    folder = f".fixgraph/runs/run-{run.pk}"
    check = f'pg=$(cat {folder}/server.pgid) && kill -0 -"$pg" 2>/dev/null && echo alive'
    with remote.connect(target) as ssh:
        return "alive" in ssh.run(check, timeout=20).stdout


def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.25) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


# ---------------------------------------------------------------- a real Celery worker


@pytest.fixture
def celery_worker(tmp_path: Path) -> Iterator[Callable[[str], int]]:
    """Start `celery worker --detach` on a queue, against the test database; its pid."""
    from django.db import connection

    started: list[Path] = []

    def start(queue: str) -> int:
        pidfile, logfile = tmp_path / f"{queue}.pid", tmp_path / f"{queue}.log"
        env = {**os.environ, "DATABASE_URL": worker_database_url(connection.settings_dict["NAME"])}
        subprocess.run(
            [
                str(REPO / ".venv/bin/celery"),
                f"--workdir={REPO}",
                "-A",
                "config",
                "worker",
                "--pool=solo",
                f"--hostname={queue}@%h",  # each worker its own node, as two on one machine need
                "--detach",
                f"--pidfile={pidfile}",
                f"--logfile={logfile}",
                "-Q",
                queue,
                "--loglevel=INFO",
            ],
            env=env,
            cwd=REPO,
            check=True,
            timeout=60,
        )
        started.append(pidfile)
        assert wait_until(lambda: bool(pid_in(pidfile)), 30), _text_of(logfile)
        assert wait_until(lambda: "ready" in _text_of(logfile), 60), _text_of(logfile)
        return int(pid_in(pidfile))

    yield start
    for pidfile in started:
        stop_worker(pidfile)


def pid_in(pidfile: Path) -> str:
    """The pid a detached worker wrote, "" while there is none: celery writes the file
    after it forks and may replace it, so it can go between a check and a read."""
    try:
        return pidfile.read_text().strip()
    except FileNotFoundError:
        return ""


def _text_of(logfile: Path) -> str:
    try:
        return logfile.read_text(errors="replace")
    except FileNotFoundError:
        return f"(no log at {logfile})"


def stop_worker(pidfile: Path) -> None:
    if not (written := pid_in(pidfile)):
        return
    pid = int(written)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if not wait_until(lambda: not pid_alive(pid), 20):
        os.kill(pid, signal.SIGKILL)


def pid_alive(pid: int) -> bool:
    """Running, not a zombie (a detached worker's parent is init, which reaps late)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def worker_database_url(name: str) -> str:
    base = os.environ["DATABASE_URL"]
    return base.rsplit("/", 1)[0] + "/" + name
