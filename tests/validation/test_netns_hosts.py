"""Validation on several hosts: two test hosts, each a network namespace with its own
sshd, host key and hostname. Hosts are added with pinned keys, facts are read on each,
and one run goes to each host at the same time."""

from __future__ import annotations

import dataclasses
import io
import threading
import uuid
from collections.abc import Callable

import pytest
from django.core.management import call_command
from django.db import connection

from kb import remote
from kb.models import Fix, Host, ValidationRun
from kb.services import hosts, validation

from .conftest import FAST_LOAD, fake_env, queue_run, throughput_fits, wait_until

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
Status = ValidationRun.Status
# Twice the fast load: long enough (~4 s) to look at both hosts while both runs load them.
LOAD = {**FAST_LOAD, "requests": 32}


def hosts_cli(*args: str) -> str:
    out = io.StringIO()
    call_command("hosts", *args, stdout=out)
    return out.getvalue()


def add_pinned(target: remote.Target, fake_gpu_dir: str) -> Host:
    """`hosts add` with the key pinned out of band, as an operator would."""
    name = f"ns-{uuid.uuid4().hex[:8]}"
    env = [f"--env={k}={v}" for k, v in fake_env(fake_gpu_dir).items()]
    printed = hosts_cli(
        "add", name, "--address", target.address, "--port", str(target.port),
        "--user", target.username, "--key", target.key_path,
        "--host-key", target.host_key, *env,
    )  # fmt: skip
    assert f"{remote.fingerprint(target.host_key)} pinned" in printed
    return Host.objects.get(name=name)


def hostname_of(target: remote.Target) -> str:
    with remote.connect(target) as ssh:
        return ssh.run("hostname", timeout=10).stdout.strip()


def test_it_reads_facts_on_each_namespace_host_through_its_own_pinned_key(
    netns_targets: list[remote.Target], ssh_target: remote.Target, fake_gpu_dir: str
) -> None:
    first, second = (add_pinned(t, fake_gpu_dir) for t in netns_targets[:2])
    for host in (first, second):
        hosts_cli("facts", host.name)
        host.refresh_from_db()
        assert host.facts["gpu_name"] == "NVIDIA H200" and host.facts["cuda"] == "13.0"
        assert host.facts["packages"]["sglang"] == "0.5.9"
    names = {hostname_of(t) for t in (*netns_targets[:2], ssh_target)}
    assert len(names) == 3, names  # three machines as far as anyone logging in can tell
    # The first host's key does not open the second: each host is its own machine.
    swapped = dataclasses.replace(netns_targets[1], host_key=first.host_key)
    with pytest.raises(remote.HostKeyMismatch):
        remote.connect(swapped)


def run_in_thread(run_id: int, errors: list[BaseException]) -> threading.Thread:
    def work() -> None:
        try:
            validation.run(run_id)
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)
        finally:
            connection.close()  # the thread's own connection would outlive the test

    thread = threading.Thread(target=work)
    thread.start()
    return thread


def loading(run: ValidationRun) -> bool:
    return "healthy; load" in ValidationRun.objects.get(pk=run.pk).log


def overlap(a: ValidationRun, b: ValidationRun) -> float:
    """Seconds both runs were running."""
    assert a.started_at and a.finished_at and b.started_at and b.finished_at
    return (min(a.finished_at, b.finished_at) - max(a.started_at, b.started_at)).total_seconds()


def test_it_validates_on_two_hosts_at_once_one_run_per_host(
    netns_targets: list[remote.Target],
    fake_gpu_dir: str,
    make_fix: Callable[..., Fix],
) -> None:
    pair = [add_pinned(t, fake_gpu_dir) for t in netns_targets[:2]]
    runs = [queue_run(make_fix(), host, load=LOAD) for host in pair]
    errors: list[BaseException] = []
    threads = [run_in_thread(run.pk, errors) for run in runs]
    try:
        assert wait_until(lambda: all(loading(run) for run in runs), 60)
        # Each host is held by its own run; a third run finds the first host busy.
        assert [Host.objects.get(pk=h.pk).locked_by_id for h in pair] == [r.pk for r in runs]
        third = queue_run(make_fix(), pair[0], load=LOAD)
        with pytest.raises(validation.HostBusy):
            validation.run(third.pk)
        third.refresh_from_db()
        assert third.status == Status.QUEUED and "busy" in third.error
    finally:
        for thread in threads:
            thread.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads)
    for run in runs:
        run.refresh_from_db()
    for run, host, target in zip(runs, pair, netns_targets[:2], strict=True):
        assert run.status == Status.PASSED, run.error + run.log
        assert throughput_fits(LOAD, run.metrics["throughput_tok_s"])
        assert run.host_id == host.pk
        assert f"@{target.address}:22" in run.log
        assert Host.objects.get(pk=host.pk).locked_by_id is None
    assert overlap(*runs) > 1.0  # side by side, not one after the other
    assert hosts.claim(pair[0].pk, runs[1].pk, lease_s=60)  # free again for any run
