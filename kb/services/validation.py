"""Validation runs: launch a fix on a GPU host, measure it, and feed the result back.

`run(run_id)` is what the Celery task calls. It claims the run (QUEUED -> RUNNING,
one conditional UPDATE), leases the host, and over one SSH session: checks GPU health
(`dcgmi`), reads the host's facts, starts the server with the fix applied in its own
process group under a remote watchdog, waits for health, runs the load through an SSH
tunnel, stops everything it started and records the verdict.

The watchdog is what makes a killed worker safe: the worker touches a lease file in
the run folder on every heartbeat; when it stops (worker gone, network gone), the
watchdog kills the server's process group within `lease_s`. `sweep()` marks such
runs on the database side.
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from decisiontree import conditions
from decisiontree.documents.changes import with_steps
from decisiontree.host_faults import gpu_health, host_faults
from decisiontree.recipes import (
    BenchMetrics,
    LaunchPlan,
    RecipeRefused,
    bench_argv,
    build_launch,
    lay_changes_over,
    parse_bench_console,
    parse_bench_output,
    recipe_for,
)
from decisiontree.records import Condition
from decisiontree.setup import State, on_gpu
from decisiontree.vocabulary import load as load_vocabulary
from kb import remote
from kb.models import Finding, Fix, Host, KnowledgeRevision, ValidationRun
from kb.recipes import LoadSettings, http_status, measure
from kb.services import hosts
from kb.services.diagnosis import change_of

log = logging.getLogger(__name__)
Status = ValidationRun.Status

LEASE_S = 120.0  # how long a silent worker keeps its host (and its server) alive
POLL_S = 2.0
BENCH_TIMEOUT_S = 1800.0
LOG_LIMIT = 60_000  # characters of log kept on the run row
SERVER_TAIL_BYTES = 16_000
RUNS_DIR = ".fixgraph/runs"
DEFAULT_QUEUE = "celery"


class HostBusy(Exception):
    """Another run holds the host; the task tries again later."""


class LeaseLost(Exception):
    """The worker was too slow to renew its lease and another run took the host."""


# Before anything was launched, so trying again cannot leave a server behind.
RETRYABLE = (HostBusy, remote.HostUnreachable)


# ---------------------------------------------------------------- the run's settings


@dataclass(frozen=True)
class RunSettings:
    """What a run launches and how it measures, from the finding, the fix and overrides."""

    framework: str
    model: str
    flags: dict[str, str | None]
    env: dict[str, str]
    load: LoadSettings
    startup_timeout_s: float
    bench_timeout_s: float = BENCH_TIMEOUT_S
    lease_s: float = LEASE_S
    min_throughput_tok_s: float | None = None


def settings_for(run: ValidationRun) -> RunSettings:
    """The run's settings: its fix laid over its finding, with the run's recipe."""
    return settings_for_fix(run.fix, run.recipe or {})


def settings_for_fix(fix: Fix, over: dict[str, Any]) -> RunSettings:
    """The finding's launch (model, framework, flags as launched) with the fix's changes
    laid over it. `over` (a run's recipe) may override any part: framework, model, flags,
    env, load, startup_timeout_s, bench_timeout_s, lease_s, min_throughput_tok_s."""
    finding = fix.finding
    recipe = recipe_for(framework_of(fix, over))
    base = over.get("flags")
    if base is None:
        base = {s.name: s.value or None for s in finding.flag_settings.all()}
    # A fix by a step ("lower --mem-fraction-static by 0.05") runs at the launch's own
    # value moved by that step.
    changes = with_steps([change_of(c) for c in fix.changes], fix.summary, base, recipe.framework)
    flags, env = lay_changes_over(base, over.get("env", {}), changes, framework=recipe.framework)
    model = over.get("model") or (finding.model.name if finding.model else "")
    model = model or str(flags.get("model-path") or flags.get("model") or "")
    return RunSettings(
        framework=recipe.framework,
        model=model,
        flags=flags,
        env=env,
        load=LoadSettings.from_dict(over.get("load", {})),
        startup_timeout_s=float(over.get("startup_timeout_s", recipe.startup_timeout_s)),
        bench_timeout_s=float(over.get("bench_timeout_s", BENCH_TIMEOUT_S)),
        lease_s=float(over.get("lease_s", LEASE_S)),
        min_throughput_tok_s=over.get("min_throughput_tok_s"),
    )


def framework_of(fix: Fix, over: dict[str, Any]) -> str:
    """The framework a run of `fix` launches: its recipe's (`over`), else its finding's;
    SGLang when neither says."""
    finding = fix.finding
    named = finding.framework.name if finding.framework else ""
    return str(over.get("framework") or named or "sglang")


class ValidationRefused(ValueError):
    """This fix may not run on a host (not reviewed yet, or its launch cannot be built)."""


def check_reviewed(fix: Fix) -> None:
    """Only fixes of published findings run on hosts: a reviewer has read what they change.
    Read from the database, not from `fix`, which may be older than the last review."""
    status = Finding.objects.filter(pk=fix.finding_id).values_list("status", flat=True).first()
    if status != Finding.Status.PUBLISHED:
        raise ValidationRefused(
            f"fix {fix.pk} belongs to a {status} finding; a reviewer must publish "
            "it before the fix can run on a host"
        )


def planned_command(fix: Fix, host: Host, recipe: dict[str, Any] | None = None) -> str:
    """What a run of `fix` on `host` will launch: every word and every environment variable
    (the fix's `env NAME=value`, and the names the host's environment exports first).
    The port is picked on the host when the run starts; flags are spelled for the
    framework version the host's facts last showed. Raises ValidationRefused."""
    check_reviewed(fix)
    try:
        hosts.check_env(host.env or {})
        wanted = settings_for_fix(fix, recipe or {})
        version = ((host.facts or {}).get("packages") or {}).get(wanted.framework)
        plan = launch_on(host, wanted, version=version, port=None)
    except (RecipeRefused, hosts.HostEnvRefused) as exc:
        raise ValidationRefused(str(exc)) from exc
    lines = [plan.shell()]
    if host.env:
        lines.append(f"# after exporting {host.name}'s own environment: {', '.join(host.env)}")
    return "\n".join(lines)


def launch_on(
    host: Host, wanted: RunSettings, *, version: str | None, port: int | None
) -> LaunchPlan:
    """The launch of `wanted` on `host`: its framework `version`'s spelling, the flags
    its operator allows there. Raises RecipeRefused."""
    return build_launch(
        recipe_for(wanted.framework), model=wanted.model, port=port, flags=wanted.flags,
        env=wanted.env, version=version, allowed_flags=host.allowed_flags or (),
    )  # fmt: skip


def refusals(fix: Fix, candidates: Iterable[Host]) -> dict[int, str]:
    """Why a run of `fix` would be refused on each host, by host id ("" where it may
    run), for choosing a host before asking. The launch is built once for each set of
    flags the hosts allow; the host's own release only changes spellings."""
    try:
        check_reviewed(fix)
        wanted = settings_for_fix(fix, {})
    except (ValidationRefused, RecipeRefused) as exc:
        return dict.fromkeys((host.pk for host in candidates), str(exc))
    by_allowance: dict[frozenset[str], str] = {}
    found = {}
    for host in candidates:
        allowed = frozenset(host.allowed_flags or ())
        if allowed not in by_allowance:
            try:
                launch_on(host, wanted, version=None, port=None)
                by_allowance[allowed] = ""
            except RecipeRefused as exc:
                by_allowance[allowed] = str(exc)
        found[host.pk] = by_allowance[allowed]
    return found


# ---------------------------------------------------------------- starting and cancelling


def queue_for(host: Host) -> str:
    """The Celery queue of the workers that can reach `host`.

    With FIXGRAPH_QUEUE_PER_LABEL, its first label's: a worker machine consumes the queues
    of the labels it can reach (`celery worker -Q hosts.lab-a,...`), and an unlabelled
    host goes to the default queue. Without it, every run goes to the default queue, the
    one a worker started without -Q reads (`make run`'s): a label alone must not strand a
    run where no worker listens.
    """
    labels = [str(label) for label in host.labels or [] if str(label).strip()]
    if not (settings.FIXGRAPH_QUEUE_PER_LABEL and labels):
        return DEFAULT_QUEUE
    return f"hosts.{labels[0]}"


def start(
    fix: Fix, host: Host, *, by: Any = None, recipe: dict[str, Any] | None = None
) -> ValidationRun:
    """Queue a run of `fix` on `host`; the task is sent once the row is committed.

    The run's `command` holds what will be launched (`planned_command`) until the worker
    replaces it with the command as run. Raises ValidationRefused before queueing
    anything when the fix is not reviewed or its launch cannot be built safely."""
    from config.celery import app  # the Celery app imports Django settings: import late

    command = planned_command(fix, host, recipe)
    run = ValidationRun.objects.create(
        fix=fix, host=host, recipe=recipe or {}, created_by=by, command=command
    )

    def send() -> None:
        sent = app.send_task("kb.run_validation", args=[run.pk], queue=queue_for(host))
        ValidationRun.objects.filter(pk=run.pk).update(task_id=str(sent.id or ""))

    transaction.on_commit(send)
    return run


def finding_archs(finding: Finding) -> set[str]:
    """The GPU architectures a finding was seen on or needs."""
    archs = {gpu.arch for gpu in finding.gpus.all()}
    return archs | {
        str(c.get("value"))
        for c in finding.conditions or []
        if c.get("key") == "gpu.arch" and not c.get("negate")
    }


def capability_needs(finding: Finding) -> list[Condition]:
    """The finding's conditions on the GPU's compute capability ("gpu.capability < 8.0")."""
    return [
        conditions.from_stored(c)
        for c in finding.conditions or []
        if c.get("key") == "gpu.capability"
    ]


def matching_hosts(fix: Fix) -> list[Host]:
    """Hosts whose GPUs have an architecture the fix's finding was seen on (all hosts
    with GPUs when the finding names none) and the compute capability it needs."""
    return hosts_of(finding_archs(fix.finding), capability_needs(fix.finding))


def hosts_of(archs: set[str], needs: Sequence[Condition] = ()) -> list[Host]:
    """Hosts with GPUs of one of `archs` (every host with GPUs when `archs` is empty) whose
    compute capability meets `needs` (a host whose capability is not known is kept)."""
    found = [h for h in Host.objects.all() if (h.facts or {}).get("gpu_count")]
    return [
        h
        for h in found
        if (not archs or h.facts.get("arch") in archs) and _capable(h.facts.get("arch"), needs)
    ]


def _capable(arch: str | None, needs: Sequence[Condition]) -> bool:
    """No need contradicted by a GPU of `arch` (judged as a diagnosis judges it)."""
    return State.CONTRADICTED not in on_gpu(arch, needs, load_vocabulary())


@dataclass(frozen=True)
class Started:
    """Runs queued on the matching hosts, and the hosts that refused the fix, with why."""

    runs: list[ValidationRun]
    refused: dict[str, str]  # host name -> reason

    def left_out(self) -> str:
        """ "Not on rtx-b: <reason>." for each refusing host; "" when none refused."""
        return " ".join(f"Not on {name}: {why}." for name, why in self.refused.items())


def start_on_matching(fix: Fix, *, by: Any = None, recipe: dict[str, Any] | None = None) -> Started:
    """Queue a run of `fix` on every matching host (facts must have been collected) that
    runs it: a host that refuses it (a flag its operator does not allow) is left out and
    named. Raises the first refusal when every matching host refuses."""
    runs: list[ValidationRun] = []
    refused: dict[str, ValidationRefused] = {}
    for host in matching_hosts(fix):
        try:
            runs.append(start(fix, host, by=by, recipe=recipe))
        except ValidationRefused as exc:
            refused[host.name] = exc
    if refused and not runs:
        raise next(iter(refused.values()))
    return Started(runs, {name: str(exc) for name, exc in refused.items()})


def revalidate(*, older_than_days: float = 30) -> list[ValidationRun]:
    """Run again every fix/host pair whose newest finished run is older than the limit,
    with the same recipe: frameworks and drivers move under a fix that once worked."""
    cutoff = timezone.now() - timedelta(days=older_than_days)
    newest: dict[tuple[int, int], ValidationRun] = {}
    finished = ValidationRun.objects.filter(status__in=[Status.PASSED, Status.FAILED])
    for past in finished.order_by("finished_at").select_related("fix__finding", "host"):
        newest[(past.fix_id, past.host_id)] = past
    pending = set(
        ValidationRun.objects.filter(status__in=ValidationRun.LIVE).values_list("fix_id", "host_id")
    )
    due = [
        past
        for key, past in newest.items()
        if key not in pending
        and past.finished_at
        and past.finished_at < cutoff
        and past.fix.finding.status == Finding.Status.PUBLISHED
    ]
    return [start(past.fix, past.host, recipe=past.recipe) for past in due]


def cancel(run_id: int) -> bool:
    """Cancel a queued or running run; a running one stops its server at the next beat."""
    return (
        ValidationRun.objects.filter(pk=run_id, status__in=ValidationRun.LIVE).update(
            status=Status.CANCELLED, finished_at=timezone.now()
        )
        == 1
    )


def give_up(run_id: int, reason: str) -> None:
    """The task ran out of retries (host unreachable or busy throughout)."""
    ValidationRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.ERROR, error=f"gave up after retries: {reason}", finished_at=timezone.now()
    )


def sweep(*, grace_s: float = LEASE_S) -> list[int]:
    """Mark RUNNING runs whose worker stopped renewing its lease as errors; free the host.

    The remote watchdog has already stopped their servers by then (same lease).
    """
    now = timezone.now()
    swept = []
    for run in ValidationRun.objects.filter(status=Status.RUNNING).select_related("host"):
        host = run.host
        holds = host.locked_by_id == run.pk and (host.lease_expires_at or now) > now
        recent = run.started_at and run.started_at > now - timedelta(seconds=grace_s)
        if holds or recent:
            continue
        if ValidationRun.objects.filter(pk=run.pk, status=Status.RUNNING).update(
            status=Status.ERROR,
            finished_at=now,
            error="the worker stopped renewing its lease (killed or cut off); "
            "the host's watchdog stops the server",
        ):
            hosts.release(host.pk, run.pk)
            swept.append(run.pk)
    return swept


# ---------------------------------------------------------------- the run


@dataclass(frozen=True)
class Verdict:
    status: str
    error: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)


class RunLog:
    """The worker's own lines plus the server log's tail, mirrored onto the run row."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.lines: list[str] = []
        self.server_tail = ""

    def say(self, message: str) -> None:
        self.lines.append(f"[{timezone.now():%H:%M:%S}] {message}")
        self.flush()

    def text(self) -> str:
        text = "\n".join(self.lines)
        if self.server_tail:
            text += "\n---- server log (last lines) ----\n" + self.server_tail
        return text[-LOG_LIMIT:]

    def flush(self) -> None:
        ValidationRun.objects.filter(pk=self.run_id).update(log=self.text())


def run(run_id: int) -> None:
    """Run a queued validation run to its verdict. Returns at once if it is not QUEUED."""
    started = ValidationRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=timezone.now(), error=""
    )
    if not started:
        return  # another worker got there first, or it was cancelled
    vrun = ValidationRun.objects.select_related("fix__finding", "host").get(pk=run_id)
    lease_s = float((vrun.recipe or {}).get("lease_s", LEASE_S))
    if not hosts.claim(vrun.host_id, run_id, lease_s):
        _requeue(run_id, f"host {vrun.host.name} is busy with another run")
        raise HostBusy(vrun.host.name)
    runlog = RunLog(run_id)
    try:
        verdict = _verdict_of(vrun, runlog)
    except remote.HostUnreachable as exc:
        _requeue(run_id, str(exc))
        raise
    finally:
        hosts.release(vrun.host_id, run_id)
    _finish(vrun, verdict, runlog)


def _verdict_of(vrun: ValidationRun, runlog: RunLog) -> Verdict:
    try:
        return _execute(vrun, runlog)
    except remote.HostUnreachable:
        raise
    except RecipeRefused as exc:
        return Verdict(Status.ERROR, f"recipe refused: {exc}")
    except (ValidationRefused, hosts.HostEnvRefused) as exc:
        return Verdict(Status.ERROR, f"refused: {exc}")
    except remote.HostKeyMismatch as exc:
        return Verdict(Status.ERROR, str(exc))
    except Exception as exc:
        log.exception("validation run %s failed", vrun.pk)
        return Verdict(Status.ERROR, f"{type(exc).__name__}: {exc}")


def _requeue(run_id: int, reason: str) -> None:
    ValidationRun.objects.filter(pk=run_id, status=Status.RUNNING).update(
        status=Status.QUEUED, error=f"will retry: {reason}", started_at=None
    )


def _execute(vrun: ValidationRun, runlog: RunLog) -> Verdict:
    host = vrun.host
    # Checked again here: the finding may have gone back to draft since the run was queued.
    check_reviewed(vrun.fix)
    hosts.check_env(host.env or {})
    wanted = settings_for(vrun)
    with remote.connect(hosts.target_of(host)) as ssh:
        if ssh.warning:
            runlog.say(ssh.warning)
        runlog.say(f"connected to {host.username}@{host.address}:{host.port}")
        sick = dcgm_problem(host, ssh) or gpu_memory_problem(host, ssh, runlog)
        if sick:
            runlog.say(sick.splitlines()[0])
            return Verdict(Status.HOST_UNHEALTHY, sick)
        plan = _plan(vrun, host, ssh, wanted, runlog)
        if _cancelled(vrun.pk):
            return Verdict(Status.CANCELLED)
        server = RemoteServer(ssh, host, f"{RUNS_DIR}/run-{vrun.pk}", wanted.lease_s)
        server.start(plan)
        runlog.say(f"server started in {server.run_dir} (process group {server.pgid})")
        try:
            return _supervise(vrun, server, ssh.forward(plan.port), wanted, runlog)
        finally:
            server.stop()
            runlog.server_tail = server.tail()
            runlog.say("server stopped")


def _plan(
    vrun: ValidationRun, host: Host, ssh: remote.Session, wanted: RunSettings, runlog: RunLog
) -> LaunchPlan:
    facts = hosts.collect_facts(host, ssh)
    version = (facts.get("packages") or {}).get(wanted.framework)
    runlog.say(f"host: {facts.get('gpu_count', 0)}x {facts.get('gpu_name', '?')} "
               f"({facts.get('arch') or '?'}), {wanted.framework} {version or '?'}")  # fmt: skip
    plan = launch_on(host, wanted, version=version, port=free_port(host, ssh))
    ValidationRun.objects.filter(pk=vrun.pk).update(
        command=plan.shell(), arch=facts.get("arch") or "", framework_version=version or ""
    )
    runlog.say(f"launch: {plan.shell()}")
    return plan


def dcgm_problem(host: Host, ssh: remote.Session) -> str:
    """The failing diagnostic's output when the host has `dcgmi` and it fails; else ""."""
    check = remote.sh_command(remote.script("dcgm_check.sh"))
    result = ssh.run(hosts.on_host(host, check), timeout=600)
    if result.ok:
        return ""
    return f"dcgmi diag -r 1 failed (exit {result.exit_status}):\n{result.stdout[-2000:]}"


def gpu_memory_problem(host: Host, ssh: remote.Session, runlog: RunLog) -> str:
    """The memory faults `nvidia-smi -q` shows on the host's GPUs (a row remap waiting for
    a reset, uncorrectable ECC errors since the last one); "" with none. A driver too old
    for these fields cannot tell: the run goes on, and its log says so."""
    result = ssh.run(hosts.on_host(host, hosts.GPU_HEALTH_QUERY), timeout=hosts.FACTS_TIMEOUT_S)
    if not result.ok:
        said = (result.stderr or result.stdout).strip()[-300:]
        runlog.say(f"GPU memory health not read ({hosts.GPU_HEALTH_QUERY}): {said}")
        return ""
    faults = [fault.describe() for fault in gpu_health(result.stdout) if fault.serious]
    if not faults:
        return ""
    return "GPU memory faults before the server started:\n" + "\n".join(faults)


def free_port(host: Host, ssh: remote.Session) -> int:
    """A TCP port free on the host's loopback right now, for the server to listen on."""
    result = ssh.run(hosts.on_host(host, remote.python_command("free_port.py")), timeout=60)
    if not result.ok:
        raise remote.RemoteError(f"could not pick a port on the host: {result.stderr[-500:]}")
    return int(result.stdout.split()[-1])


def _supervise(
    vrun: ValidationRun, server: RemoteServer, local_port: int, wanted: RunSettings, runlog: RunLog
) -> Verdict:
    base_url = f"http://127.0.0.1:{local_port}"
    recipe = recipe_for(wanted.framework)
    not_ready = _wait_until_ready(vrun, server, base_url + recipe.health_path, wanted, runlog)
    if not_ready is not None:
        return not_ready
    runlog.say(f"healthy; load: {wanted.load}")
    return _benchmark(vrun, server, base_url, wanted, runlog)


def _wait_until_ready(
    vrun: ValidationRun, server: RemoteServer, health_url: str, wanted: RunSettings, runlog: RunLog
) -> Verdict | None:
    deadline = time.monotonic() + wanted.startup_timeout_s
    while True:
        stopped = _heartbeat(vrun, server, wanted, runlog)
        if stopped is not None:
            return stopped
        if http_status(health_url) == 200:
            return None
        if time.monotonic() > deadline:
            return Verdict(Status.TIMED_OUT,
                           f"not healthy after {wanted.startup_timeout_s:.0f} s")  # fmt: skip
        time.sleep(POLL_S)


def _heartbeat(
    vrun: ValidationRun, server: RemoteServer, wanted: RunSettings, runlog: RunLog
) -> Verdict | None:
    """Renew both leases, mirror the log; a Verdict when the run must stop."""
    if not hosts.renew(vrun.host_id, vrun.pk, wanted.lease_s):
        raise LeaseLost(f"lost the lease on {vrun.host.name}")
    alive, tail = server.beat()
    runlog.server_tail = tail
    runlog.flush()
    if _cancelled(vrun.pk):
        return Verdict(Status.CANCELLED)
    if not alive:
        return exit_verdict(tail)
    return None


def exit_verdict(tail: str) -> Verdict:
    """A server that exited failed the fix, unless its output shows the GPU or its driver
    failing under it (an Xid, an uncorrectable ECC error): that says nothing of the fix, so
    the host is marked unhealthy and the fix keeps its evidence."""
    if serious := [fault for fault in host_faults(tail) if fault.serious]:
        return Verdict(Status.HOST_UNHEALTHY, f"{serious[0].describe()}\n{tail[-3000:]}")
    return Verdict(Status.FAILED, "the server exited:\n" + tail[-3000:])


def _benchmark(
    vrun: ValidationRun, server: RemoteServer, base_url: str, wanted: RunSettings, runlog: RunLog
) -> Verdict:
    pool = ThreadPoolExecutor(max_workers=1)
    if wanted.load.tool == "framework":
        future = pool.submit(framework_bench, server, vrun, wanted)
    else:
        future = pool.submit(measure, base_url, wanted.load)
    deadline = time.monotonic() + wanted.bench_timeout_s
    try:
        while True:
            try:
                return _judge(future.result(timeout=POLL_S), wanted, runlog)
            except FutureTimeout:
                pass
            stopped = _heartbeat(vrun, server, wanted, runlog)
            if stopped is not None:
                return stopped
            if time.monotonic() > deadline:
                return Verdict(Status.TIMED_OUT, f"benchmark ran past {wanted.bench_timeout_s} s")
    finally:
        # Requests still in flight end when the server is stopped; do not wait for them.
        pool.shutdown(wait=False, cancel_futures=True)


def framework_bench(server: RemoteServer, vrun: ValidationRun, wanted: RunSettings) -> BenchMetrics:
    """The framework's own benchmark, run on the host; its printout parsed."""
    load = wanted.load
    argv = bench_argv(
        wanted.framework, model=wanted.model, port=server.port, requests=load.requests,
        concurrency=load.concurrency, input_tokens=load.input_tokens,
        output_tokens=load.output_tokens,
    )  # fmt: skip
    command = " ".join(shlex.quote(word) for word in argv)
    done = server.ssh.run(hosts.on_host(server.host, command), timeout=wanted.bench_timeout_s)
    if not done.ok:
        raise remote.RemoteError(
            f"{argv[0]} {argv[2]} failed: {(done.stderr or done.stdout)[-2000:]}"
        )
    return parse_bench_console(done.stdout)


def _judge(metrics: BenchMetrics, wanted: RunSettings, runlog: RunLog) -> Verdict:
    found = metrics.as_dict()
    runlog.say(f"measured: {found}")
    if not metrics.completed or metrics.failed:
        return Verdict(Status.FAILED, f"{metrics.failed} of "
                       f"{(metrics.completed or 0) + (metrics.failed or 0)} requests failed",
                       found)  # fmt: skip
    floor = wanted.min_throughput_tok_s
    if floor is not None and (metrics.output_throughput_tok_s or 0) < floor:
        return Verdict(Status.FAILED, f"throughput below the required {floor} tok/s", found)
    return Verdict(Status.PASSED, "", found)


def _cancelled(run_id: int) -> bool:
    return ValidationRun.objects.filter(pk=run_id, status=Status.CANCELLED).exists()


def _finish(vrun: ValidationRun, verdict: Verdict, runlog: RunLog) -> None:
    now = timezone.now()
    decided = ValidationRun.objects.filter(pk=vrun.pk, status=Status.RUNNING).update(
        status=verdict.status, error=verdict.error, metrics=verdict.metrics, finished_at=now
    )
    runlog.flush()
    if not decided:
        # Cancelled meanwhile: keep that status, but keep what was measured.
        ValidationRun.objects.filter(pk=vrun.pk).update(metrics=verdict.metrics)
        return
    feed_back(vrun.fix, verdict.status)


def feed_back(fix: Fix, status: str) -> None:
    """A finished run changes the evidence diagnosis reads; a failed `resolves` fix
    goes back to a reviewer."""
    if fix.outcome == Fix.Outcome.PROPOSED and status in (Status.PASSED, Status.FAILED):
        # A proposal validated on a host is evidence now: it helped there, or it did not.
        fix.outcome = Fix.Outcome.RESOLVES if status == Status.PASSED else Fix.Outcome.NO_EFFECT
        fix.save(update_fields=["outcome", "updated_at"])  # moves the revision too
    elif status == Status.FAILED and fix.outcome == Fix.Outcome.RESOLVES:
        fix.needs_review = True
        fix.save(update_fields=["needs_review", "updated_at"])  # moves the revision too
    elif status in (Status.PASSED, Status.FAILED):
        KnowledgeRevision.bump_evidence()


def import_result(fix: Fix, host: Host, text: str, *, by: Any = None) -> ValidationRun:
    """A benchmark run by hand (any supported format) recorded as a finished run."""
    metrics = parse_bench_output(text)
    passed = bool(metrics.completed or metrics.output_throughput_tok_s) and not metrics.failed
    run = ValidationRun.objects.create(
        fix=fix, host=host, created_by=by, metrics=metrics.as_dict(),
        status=Status.PASSED if passed else Status.FAILED,
        arch=(host.facts or {}).get("arch") or "", log=text[-LOG_LIMIT:],
        recipe={"imported": metrics.tool}, started_at=timezone.now(), finished_at=timezone.now(),
    )  # fmt: skip
    feed_back(fix, run.status)
    return run


# ---------------------------------------------------------------- the server on the host

# The scripts run on the host live in kb/remote_scripts/ (shellcheck lints them). The
# watchdog and the beat need leader_alive.sh in front of them.


def watchdog_script() -> str:
    return remote.script("leader_alive.sh") + remote.script("watchdog.sh")


def beat_script() -> str:
    return remote.script("leader_alive.sh") + remote.script("beat.sh")


class RemoteServer:
    """The framework's server on the host, in the run folder, watched by the watchdog."""

    def __init__(self, ssh: remote.Session, host: Host, run_dir: str, lease_s: float) -> None:
        self.ssh, self.host, self.run_dir = ssh, host, run_dir
        self.lease_s = max(int(lease_s), 5)
        self.pgid: int | None = None
        self.port = 0

    def _script(self, script: str, *args: str, timeout: float = 60) -> remote.CommandResult:
        command = remote.sh_command(script, *args)
        return self.ssh.run(hosts.on_host(self.host, command), timeout=timeout)

    def start(self, plan: LaunchPlan) -> None:
        # The watchdog's script travels as a value in the environment of the launch.
        launch = remote.sh_command(remote.script("launch.sh"), self.run_dir, str(self.lease_s),
                                   *plan.words())  # fmt: skip
        command = f"WATCHDOG={shlex.quote(watchdog_script())} {launch}"
        started = self.ssh.run(hosts.on_host(self.host, command), timeout=60)
        if not started.ok or not started.stdout.strip().isdigit():
            raise remote.RemoteError(f"could not start the server: {started.stderr[-1000:]}")
        self.pgid, self.port = int(started.stdout.strip()), plan.port

    def beat(self) -> tuple[bool, str]:
        """Renew the remote lease; (is the server's group alive, the log's tail)."""
        result = self._script(beat_script(), self.run_dir, str(SERVER_TAIL_BYTES))
        first, _, tail = result.stdout.partition("\n")
        return first.strip() == "alive", tail

    def stop(self) -> None:
        try:
            self._script(remote.script("stop.sh"), self.run_dir, timeout=60)
        except remote.RemoteError:
            log.warning("could not stop %s on %s; its watchdog will", self.run_dir, self.host)

    def tail(self) -> str:
        try:
            return self.beat()[1]
        except remote.RemoteError:
            return ""
