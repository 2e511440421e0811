"""The host registry and the CLI: key pinning on first contact, facts over SSH, imports."""

from __future__ import annotations

import asyncio
import io
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from kb import remote
from kb.models import Fix, Host, ValidationRun
from kb.services import hosts, validation

from .conftest import fake_env, queue_run

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
BENCH = Path(__file__).parent / "fixtures" / "bench"
Status = ValidationRun.Status


def hosts_cli(*args: str) -> str:
    out = io.StringIO()
    call_command("hosts", *args, stdout=out)
    return out.getvalue()


def add_args(target: remote.Target, name: str) -> list[str]:
    return [
        "add",
        name,
        "--address",
        target.address,
        "--port",
        str(target.port),
        "--user",
        target.username,
        "--key",
        target.key_path,
    ]


def other_key(folder: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / "k")],
        check=True,
        capture_output=True,
    )
    return (folder / "k.pub").read_text().strip()


def test_it_shows_the_fingerprint_but_pins_nothing_without_approval(
    ssh_target: remote.Target,
) -> None:
    with pytest.raises(CommandError, match="--accept-host-key") as refused:
        hosts_cli(*add_args(ssh_target, "h200-a"))
    assert remote.fingerprint(ssh_target.host_key) in str(refused.value)
    assert not Host.objects.filter(name="h200-a").exists()


def test_it_reads_the_host_key_for_a_caller_that_runs_an_event_loop(
    ssh_target: remote.Target,
) -> None:
    async def async_caller() -> str:
        return remote.fetch_host_key(ssh_target.address, ssh_target.port)

    # In a thread of its own: this one may run Playwright's loop already (browser tests).
    with ThreadPoolExecutor(1) as pool:
        offered = pool.submit(asyncio.run, async_caller()).result()

    assert offered.split()[:2] == ssh_target.host_key.split()[:2]


def test_it_pins_the_offered_key_on_approval_and_reads_facts(
    ssh_target: remote.Target, fake_gpu_dir: str
) -> None:
    env = [f"--env={k}={v}" for k, v in fake_env(fake_gpu_dir, FAKE_GPU_COUNT="8").items()]
    added = hosts_cli(
        *add_args(ssh_target, "h200-b"), "--accept-host-key", "--label", "lab-a", *env
    )
    host = Host.objects.get(name="h200-b")
    assert host.host_key.split()[:2] == ssh_target.host_key.split()[:2]
    assert remote.fingerprint(ssh_target.host_key) in added
    assert '"gpu_count": 8' in hosts_cli("facts", "h200-b")
    host.refresh_from_db()
    assert host.facts["arch"] == "sm_90" and host.facts["driver"] == "580.159.04"
    listed = hosts_cli("list")
    assert "h200-b" in listed and "8x NVIDIA H200" in listed and "lab-a" in listed


def test_it_refuses_a_host_whose_key_changed(
    ssh_target: remote.Target,
    make_host: Callable[..., Host],
    make_fix: Callable[..., Fix],
    tmp_path: Path,
) -> None:
    host = make_host()
    Host.objects.filter(pk=host.pk).update(host_key=other_key(tmp_path))
    with pytest.raises(CommandError, match="changed"):
        hosts_cli("facts", host.name)
    run = queue_run(make_fix(), host)
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.ERROR
    assert "host key" in run.error and "refusing to connect" in run.error
    assert run.command == ""


def test_it_imports_a_benchmark_run_by_hand(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    host, fix = make_host(), make_fix()
    out = io.StringIO()
    call_command(
        "validate",
        "--fix",
        str(fix.pk),
        "--host",
        host.name,
        "--import",
        str(BENCH / "sglang_bench_serving.txt"),
        stdout=out,
    )
    run = ValidationRun.objects.get(fix=fix)
    assert run.status == Status.PASSED and run.metrics["throughput_tok_s"] == 543.99
    assert "throughput_tok_s: 543.99" in out.getvalue()


def test_it_sends_a_fix_to_review_when_an_imported_run_had_failures(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    fix = make_fix()
    with pytest.raises(CommandError, match="failed"):
        call_command(
            "validate",
            "--fix",
            str(fix.pk),
            "--host",
            make_host().name,
            "--import",
            str(BENCH / "vllm_bench_serve.txt"),
            stdout=io.StringIO(),
        )
    fix.refresh_from_db()
    assert fix.needs_review is True


def test_it_cancels_a_queued_run_before_any_worker_touches_it(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    run = queue_run(make_fix(), make_host())
    out = io.StringIO()
    call_command("validate", "--cancel", str(run.pk), stdout=out)
    validation.run(run.pk)
    run.refresh_from_db()
    assert out.getvalue().strip() == "cancelled"
    assert run.status == Status.CANCELLED and run.log == ""


def test_it_sweeps_only_runs_whose_lease_ran_out(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    live, dead = make_host(), make_host()
    alive_run, dead_run = queue_run(make_fix(), live), queue_run(make_fix(), dead)
    ValidationRun.objects.filter(pk__in=[alive_run.pk, dead_run.pk]).update(status=Status.RUNNING)
    assert hosts.claim(live.pk, alive_run.pk, lease_s=60)
    assert hosts.claim(dead.pk, dead_run.pk, lease_s=-1)  # already expired
    assert validation.sweep(grace_s=0) == [dead_run.pk]
    assert ValidationRun.objects.get(pk=alive_run.pk).status == Status.RUNNING
    assert Host.objects.get(pk=dead.pk).locked_by_id is None


def test_it_routes_a_run_to_the_queue_of_its_hosts_first_label_when_asked(
    make_host: Callable[..., Host], settings
) -> None:
    labelled, plain = make_host(labels=("rack-7", "h200")), make_host()
    # By default one queue, the one a worker started without -Q reads (make run's): a
    # label alone sends nothing where no worker listens.
    assert validation.queue_for(labelled) == validation.queue_for(plain) == "celery"
    settings.FIXGRAPH_QUEUE_PER_LABEL = True
    assert validation.queue_for(labelled) == "hosts.rack-7"
    assert validation.queue_for(plain) == "celery"


def test_it_queues_a_fix_on_every_host_of_the_architecture_it_was_seen_on(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    fix = make_fix()
    finding = fix.finding
    finding.conditions = [{"key": "gpu.arch", "value": "sm_120"}]
    finding.save()
    blackwell, hopper, unknown = make_host(), make_host(), make_host()
    Host.objects.filter(pk=blackwell.pk).update(facts={"gpu_count": 8, "arch": "sm_120"})
    Host.objects.filter(pk=hopper.pk).update(facts={"gpu_count": 1, "arch": "sm_90"})
    out = io.StringIO()
    call_command("validate", "--fix", str(fix.pk), "--all-matching", stdout=out)
    queued = ValidationRun.objects.filter(fix=fix)
    assert [run.host_id for run in queued] == [blackwell.pk]
    assert blackwell.name in out.getvalue() and unknown.name not in out.getvalue()

    # A matching host whose operator does not allow a flag of the fix is named, not run on.
    sandbox = make_host()
    Host.objects.filter(pk=sandbox.pk).update(
        facts={"gpu_count": 8, "arch": "sm_120"}, allowed_flags=["trust-remote-code"]
    )
    fix.changes = [*fix.changes, {"action": "set_flag", "name": "trust-remote-code"}]
    fix.save()
    out = io.StringIO()
    call_command("validate", "--fix", str(fix.pk), "--all-matching", stdout=out)
    assert f"queued on {sandbox.name}" in out.getvalue()
    assert f"not queued on {blackwell.name}: --trust-remote-code is not run" in out.getvalue()


def test_a_finding_for_older_gpus_is_validated_only_on_hosts_that_old(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    """A cause that needs compute capability below 8.0 does not reproduce on a Hopper host."""
    fix = make_fix()
    fix.finding.conditions = [{"key": "gpu.capability", "value": "<8.0"}]
    fix.finding.save()
    turing, hopper = make_host(), make_host()
    Host.objects.filter(pk=turing.pk).update(facts={"gpu_count": 1, "arch": "sm_75"})
    Host.objects.filter(pk=hopper.pk).update(facts={"gpu_count": 8, "arch": "sm_90"})

    call_command("validate", "--fix", str(fix.pk), "--all-matching", stdout=io.StringIO())

    assert [run.host_id for run in ValidationRun.objects.filter(fix=fix)] == [turing.pk]


def test_it_revalidates_only_pairs_whose_last_run_is_old(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    host, old_fix, fresh_fix = make_host(), make_fix(), make_fix()
    long_ago = timezone.now() - timedelta(days=40)
    for fix, when in ((old_fix, long_ago), (fresh_fix, timezone.now())):
        ValidationRun.objects.create(
            fix=fix,
            host=host,
            status=Status.PASSED,
            finished_at=when,
            recipe={"load": {"requests": 4}},
        )
    again = validation.revalidate(older_than_days=30)
    assert [(run.fix_id, run.status, run.recipe) for run in again] == [
        (old_fix.pk, Status.QUEUED, {"load": {"requests": 4}})
    ]
    assert validation.revalidate(older_than_days=30) == []  # already queued
