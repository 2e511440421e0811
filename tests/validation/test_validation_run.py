"""A validation run end to end, in this process, against the real sshd posing as a GPU host."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import pytest
from django.db import connection

from kb import remote
from kb.models import Fix, FlagSetting, Host, ValidationRun
from kb.services import hosts, validation
from kb.services.diagnosis import fix_evidence

from .conftest import (
    FAST_LOAD,
    TOKENS_PER_S,
    TTFT_MS,
    queue_run,
    remote_group_alive,
    throughput_fits,
    wait_until,
)

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
Status = ValidationRun.Status


def test_it_measures_the_throughput_the_server_really_gives(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix], ssh_target: remote.Target
) -> None:
    run = queue_run(make_fix(), make_host())
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.PASSED, run.error + run.log
    # The fixture server's delays are floors the measurement cannot beat; a loaded machine
    # only adds to them, so the figures are checked against the floor and a wide ceiling
    # (a unit or field mix-up is off by 1000x or lands on another metric).
    assert throughput_fits(FAST_LOAD, run.metrics["throughput_tok_s"])
    assert run.metrics["completed"] == FAST_LOAD["requests"] and run.metrics["failed"] == 0
    assert TTFT_MS * 0.9 <= run.metrics["ttft_ms"] <= TTFT_MS * 20
    assert 1000 / TOKENS_PER_S * 0.9 <= run.metrics["itl_ms"] <= 1000 / TOKENS_PER_S * 20
    assert not remote_group_alive(ssh_target, run)


def test_it_launches_the_fix_spelled_for_the_hosts_release_and_records_the_host(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    host = make_host()
    run = queue_run(make_fix(), host)
    validation.run(run.pk)
    run.refresh_from_db()
    host.refresh_from_db()
    # sglang 0.5.9 still calls the decode backend flag by its old name.
    assert "--nsa-decode-backend flashmla_sparse" in run.command
    assert "--kv-cache-dtype bf16" in run.command and "fp8_e4m3" not in run.command
    assert "--tp-size 8" in run.command
    assert (run.arch, run.framework_version) == ("sm_90", "0.5.9")
    assert host.facts["gpu_name"] == "NVIDIA H200" and host.facts["cuda"] == "13.0"
    assert host.facts["packages"]["sglang"] == "0.5.9" and host.facts["python"]
    assert host.locked_by_id is None
    assert "The server is fired up" in run.log


def test_a_fix_by_a_step_runs_at_the_findings_value_moved_by_that_step(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    """ "Lower --mem-fraction-static by 0.05" stores no value; the finding launched 0.9."""
    change = {"action": "set_flag", "name": "mem-fraction-static", "value": None}
    fix = make_fix(changes=[change])
    fix.summary = "lower --mem-fraction-static by 0.05 and try again"
    fix.save()
    FlagSetting.objects.create(finding=fix.finding, name="mem-fraction-static", value="0.9")

    run = queue_run(fix, make_host())
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.PASSED, run.error + run.log
    assert "--mem-fraction-static 0.85" in run.command


def test_it_counts_a_passed_run_as_validated_evidence_on_its_architecture(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    fix = make_fix()
    run = queue_run(fix, make_host())
    validation.run(run.pk)
    evidence = fix_evidence()[fix.pk]
    assert "sm_90" in str(evidence)
    fix.refresh_from_db()
    assert fix.needs_review is False


def test_it_sends_a_resolving_fix_back_to_review_when_the_server_crashes(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix], ssh_target: remote.Target
) -> None:
    fix = make_fix()
    run = queue_run(fix, make_host(FAKE_GPU_CRASH="1"))
    validation.run(run.pk)
    run.refresh_from_db()
    fix.refresh_from_db()
    assert run.status == Status.FAILED
    assert "CUDA out of memory" in run.error and "CUDA out of memory" in run.log
    assert fix.needs_review is True
    assert not remote_group_alive(ssh_target, run)


def test_a_server_killed_by_a_gpu_fault_marks_the_host_not_the_fix(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix], ssh_target: remote.Target
) -> None:
    fix = make_fix()
    run = queue_run(fix, make_host(FAKE_GPU_CRASH="ecc"))
    validation.run(run.pk)
    run.refresh_from_db()
    fix.refresh_from_db()
    assert run.status == Status.HOST_UNHEALTHY
    assert run.error.startswith("uncorrectable ECC error encountered: the GPU's memory")
    assert fix.needs_review is False and fix.outcome == Fix.Outcome.RESOLVES
    assert not remote_group_alive(ssh_target, run)


def test_it_runs_no_command_hidden_in_a_flag_value(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix], ssh_target: remote.Target
) -> None:
    # The host policy lets no path or quote through; what it lets through (words, `;`,
    # `"`, `*`) must still reach the server as one argument, not as shell syntax.
    marker = f"pwned-{uuid.uuid4().hex[:8]}"
    nasty = f'x; touch {marker}; echo "*"'
    fix = make_fix([{"action": "set_flag", "name": "served-model-name", "value": nasty}])
    run = queue_run(fix, make_host())
    validation.run(run.pk)
    run.refresh_from_db()
    with remote.connect(ssh_target) as ssh:
        found = ssh.run(f"find ~ /tmp -name {marker} 2>/dev/null", timeout=20).stdout
    assert found.strip() == ""
    assert run.status == Status.PASSED, run.error
    # The value arrived whole, as one argument, at the server.
    assert '"--served-model-name", "x; touch ' in run.log


def test_it_refuses_to_launch_a_flag_the_framework_does_not_know(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    fix = make_fix([{"action": "set_flag", "name": "kv-cache-dtpye", "value": "bf16"}])
    run = queue_run(fix, make_host())
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.ERROR
    assert "unknown sglang flag --kv-cache-dtpye" in run.error
    assert run.command == ""


def test_it_marks_the_host_unhealthy_when_dcgmi_diag_fails(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    run = queue_run(make_fix(), make_host(FAKE_DCGMI_FAIL="1"))
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.HOST_UNHEALTHY
    assert "double-bit ECC" in run.error and run.command == ""


def test_a_gpu_whose_row_remap_waits_for_a_reset_stops_the_run_before_the_server(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    """No dcgmi on the host: nvidia-smi's memory-error fields still tell a sick GPU."""
    run = queue_run(make_fix(), make_host(FAKE_GPU_MEMORY="remap_pending"))
    validation.run(run.pk)
    run.refresh_from_db()

    assert run.status == Status.HOST_UNHEALTHY and run.command == ""
    assert "Remapped Rows / Pending: Yes on 00000000:2A:00.0" in run.error
    assert "reset it" in run.error


def test_it_times_out_a_server_that_never_becomes_healthy(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix], ssh_target: remote.Target
) -> None:
    run = queue_run(make_fix(), make_host(FAKE_GPU_STARTUP_S="120"), startup_timeout_s=3)
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.TIMED_OUT and "not healthy after 3 s" in run.error
    assert not remote_group_alive(ssh_target, run)


def test_it_stops_the_server_when_a_running_run_is_cancelled(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix], ssh_target: remote.Target
) -> None:
    slow = {"requests": 200, "concurrency": 2, "input_tokens": 8, "output_tokens": 400}
    run = queue_run(make_fix(), make_host(), load=slow)

    def run_in_thread() -> None:
        try:
            validation.run(run.pk)
        finally:
            connection.close()  # the thread's own connection would outlive the test

    worker = threading.Thread(target=run_in_thread)
    worker.start()
    assert wait_until(lambda: "healthy; load" in ValidationRun.objects.get(pk=run.pk).log, 60)
    assert validation.cancel(run.pk) is True
    worker.join(timeout=60)
    run.refresh_from_db()
    assert not worker.is_alive()
    assert run.status == Status.CANCELLED
    assert not remote_group_alive(ssh_target, run)


def test_it_runs_one_run_at_a_time_on_a_host(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    host = make_host()
    first, second = queue_run(make_fix(), host), queue_run(make_fix(), host)
    assert hosts.claim(host.pk, first.pk, lease_s=60)
    with pytest.raises(validation.HostBusy):
        validation.run(second.pk)
    second.refresh_from_db()
    assert second.status == Status.QUEUED and "busy" in second.error
    # An expired lease frees the host.
    assert hosts.claim(host.pk, first.pk, lease_s=-1)
    assert hosts.claim(host.pk, second.pk, lease_s=60)


def test_it_does_nothing_for_a_run_another_worker_claimed(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    run = queue_run(make_fix(), make_host())
    ValidationRun.objects.filter(pk=run.pk).update(status=Status.RUNNING)
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.RUNNING and run.log == "" and run.command == ""


def test_it_puts_a_run_back_in_the_queue_when_the_host_cannot_be_reached(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    host = make_host()
    Host.objects.filter(pk=host.pk).update(port=1)
    run = queue_run(make_fix(), host)
    with pytest.raises(remote.HostUnreachable):
        validation.run(run.pk)
    run.refresh_from_db()
    host.refresh_from_db()
    assert run.status == Status.QUEUED and host.locked_by_id is None


def test_it_gives_up_with_an_error_when_the_host_stays_unreachable(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    from kb.tasks import run_validation

    host = make_host()
    Host.objects.filter(pk=host.pk).update(port=1)
    run = queue_run(make_fix(), host)
    run_validation.apply(args=[run.pk])  # eager: each retry runs at once
    run.refresh_from_db()
    assert run.status == Status.ERROR
    assert run.error.startswith("gave up after retries") and "cannot reach" in run.error


@pytest.mark.parametrize(
    ("framework", "tool", "tool_name"),
    [
        ("sglang", "framework", "sglang.bench_serving"),
        ("vllm", "framework", "vllm bench serve"),
        ("vllm", "fixgraph", "fixgraph"),
    ],
)
def test_it_measures_with_either_framework_and_either_benchmark(
    make_host: Callable[..., Host],
    make_fix: Callable[..., Fix],
    framework: str,
    tool: str,
    tool_name: str,
) -> None:
    fix = make_fix(
        [
            {
                "action": "set_flag",
                "name": "max-running-requests" if framework == "sglang" else "max-num-seqs",
                "value": "64",
            }
        ]
    )
    recipe = {"framework": framework, "model": "Qwen/Qwen3-8B", "flags": {}}
    run = queue_run(fix, make_host(), load={**FAST_LOAD, "tool": tool}, **recipe)
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.PASSED, run.error + run.log
    assert run.metrics["tool"] == tool_name
    assert throughput_fits(FAST_LOAD, run.metrics["throughput_tok_s"])
    launcher = "vllm serve Qwen/Qwen3-8B" if framework == "vllm" else "sglang.launch_server"
    assert launcher in run.command and " 64" in run.command
