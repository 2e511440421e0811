"""The GPU host registry: adding hosts with a pinned key, collecting their facts over
SSH, and the one-run-at-a-time lease on each host."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from decisiontree.host_flags import allowed_flags_problem
from decisiontree.recipes import cuda_version, gpu_summary, parse_gpu_query
from decisiontree.server_env import env_name_problem
from kb import remote
from kb.models import Host

GPU_QUERY = (
    "nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader"
)
# The GPUs' memory-error fields: a row remap waiting for a reset, uncorrectable errors since
# the last one (read by decisiontree.host_faults.gpu_health).
GPU_HEALTH_QUERY = "nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT"
FRAMEWORK_PACKAGES = ("sglang", "vllm", "torch", "transformers", "flashinfer-python")
FACTS_TIMEOUT_S = 120.0


class HostKeyNotApproved(Exception):
    """First contact: the key is shown, not pinned, until the user approves it."""


class HostEnvRefused(ValueError):
    """A host's environment has a name a shell would read as more than a name, or the host
    is set to allow a flag that is not among the refused ones."""


def check_env(env: Mapping[str, object]) -> None:
    """Refuse environment names that are not plain identifiers (`A;touch /tmp/x;B`)."""
    for name in env:
        problem = env_name_problem(str(name))
        if problem:
            raise HostEnvRefused(f"host environment: {problem}")


def add_host(
    name: str,
    *,
    address: str,
    username: str,
    port: int = 22,
    key_path: str = "",
    labels: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
    accept_host_key: bool = False,
    host_key: str = "",
    allowed_flags: Iterable[str] = (),
) -> Host:
    """Register a host. Its key is pinned from `host_key` (checked out of band) or, with
    `accept_host_key`, from what the host offers now; otherwise nothing is saved.
    `allowed_flags`: refused flags its operator lets runs pass there (host_flags)."""
    check_env(env or {})
    allowed = sorted(set(allowed_flags))
    if problem := allowed_flags_problem(allowed):
        raise HostEnvRefused(f"--allow-flag: {problem}")
    key = host_key.strip() or remote.fetch_host_key(address, port)
    if not host_key and not accept_host_key:
        raise HostKeyNotApproved(
            f"{address}:{port} offers {key.split()[0]} key {remote.fingerprint(key)}. "
            "Check it, then add the host again with --accept-host-key to pin it."
        )
    remote.fingerprint(key)  # refuses a malformed key before it is stored
    return Host.objects.create(
        name=name, address=address, port=port, username=username, key_path=key_path,
        host_key=key, labels=list(labels), env=dict(env or {}), allowed_flags=allowed,
    )  # fmt: skip


def target_of(host: Host) -> remote.Target:
    return remote.Target(host.address, host.port, host.username, host.key_path, host.host_key)


def on_host(host: Host, command: str) -> str:
    """`command` with the host's environment exported first (values quoted, not expanded).

    The names were checked when the host was saved; they are checked again here, where
    they meet the shell, because a row can be changed behind the model's back."""
    check_env(host.env or {})
    exports = [f"export {name}={shlex.quote(str(value))};" for name, value in host.env.items()]
    return " ".join([*exports, command])


def collect_facts(host: Host, session: remote.Session | None = None) -> dict[str, Any]:
    """GPUs, driver, CUDA, Python and framework versions, read over SSH and saved."""
    if session is None:
        with remote.connect(target_of(host)) as own:
            return collect_facts(host, own)
    facts = read_facts(host, session)
    host.facts, host.facts_at = facts, timezone.now()
    host.save(update_fields=["facts", "facts_at"])
    return facts


def read_facts(host: Host, session: remote.Session) -> dict[str, Any]:
    gpus = session.run(on_host(host, GPU_QUERY), timeout=FACTS_TIMEOUT_S)
    banner = session.run(on_host(host, "nvidia-smi"), timeout=FACTS_TIMEOUT_S)
    versions = session.run(
        on_host(host, remote.python_command("host_versions.py", *FRAMEWORK_PACKAGES)),
        timeout=FACTS_TIMEOUT_S,
    )
    facts: dict[str, Any] = gpu_summary(parse_gpu_query(gpus.stdout)) if gpus.ok else {}
    if not gpus.ok:
        facts["gpu_error"] = (gpus.stderr or gpus.stdout).strip()[-500:] or "nvidia-smi failed"
    facts["cuda"] = cuda_version(banner.stdout)
    facts["packages"] = _versions(versions)
    facts["python"] = facts["packages"].pop("python", None)
    return facts


def _versions(result: remote.CommandResult) -> dict[str, str | None]:
    try:
        found = json.loads(result.stdout.strip().splitlines()[-1]) if result.ok else {}
    except (ValueError, IndexError):
        found = {}
    return {str(k): (str(v) if v else None) for k, v in found.items()}


# ---------------------------------------------------------------- the lease


def claim(host_id: int, run_id: int, lease_s: float) -> bool:
    """Take the host for a run; False if another run holds an unexpired lease.

    One conditional UPDATE, so two workers can never both win.
    """
    now = timezone.now()
    free = Q(locked_by__isnull=True) | Q(lease_expires_at__lt=now) | Q(locked_by_id=run_id)
    taken = Host.objects.filter(free, pk=host_id).update(
        locked_by_id=run_id, lease_expires_at=now + timedelta(seconds=lease_s)
    )
    return taken == 1


def renew(host_id: int, run_id: int, lease_s: float) -> bool:
    """Extend the run's lease; False if it was lost (expired and taken by another run)."""
    until = timezone.now() + timedelta(seconds=lease_s)
    return Host.objects.filter(pk=host_id, locked_by_id=run_id).update(lease_expires_at=until) == 1


def release(host_id: int, run_id: int) -> None:
    with transaction.atomic():
        Host.objects.filter(pk=host_id, locked_by_id=run_id).update(
            locked_by=None, lease_expires_at=None
        )
