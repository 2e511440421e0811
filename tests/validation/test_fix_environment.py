"""Nothing a fix's author writes changes what runs on a GPU host beyond vetted knobs; only
reviewed fixes run; a host's environment names reach the shell only as names.

End to end against the real sshd posing as a GPU host: each attack leaves a marker file
on the host if any of it ran.
"""

from __future__ import annotations

import io
import re
import uuid
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client

from kb import remote
from kb.models import Finding, Fix, Host, ValidationRun
from kb.services import hosts, validation

from .conftest import queue_run

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]
Status = ValidationRun.Status


def on_host(target: remote.Target, command: str) -> str:
    with remote.connect(target) as ssh:
        return ssh.run(command, timeout=20).stdout.strip()


def exists_on_host(target: remote.Target, path: str) -> bool:
    return on_host(target, f"test -e {path} && echo yes || echo no") == "yes"


def code_running_env(marker: str) -> list[dict[str, str]]:
    """The audit's attack, and its cousins: each would run code when the server starts."""
    return [
        # Python imports the warning category's module at start-up; antigravity opens
        # $BROWSER, a Perl script here, and Perl runs code from PERL5OPT before it.
        {"action": "set_env", "name": "PYTHONWARNINGS", "value": "ignore::antigravity.Warning"},
        {"action": "set_env", "name": "BROWSER", "value": "perlthanks"},
        {
            "action": "set_env",
            "name": "PERL5OPT",
            "value": f"-Mbase;system(q(touch),q({marker}));exit",
        },
        {"action": "set_env", "name": "LD_PRELOAD", "value": "/tmp/evil.so"},
        {"action": "set_env", "name": "PYTHONPATH", "value": "/tmp/evil"},
    ]


def refused_and_never_run(fix: Fix, host: Host, refusal: str) -> None:
    """Asked for through the service (the API and the CLI go this way), nothing is queued;
    a run row that got in some other way (stored before the check existed) ends refused."""
    with pytest.raises(validation.ValidationRefused, match=refusal):
        validation.start(fix, host)
    assert not ValidationRun.objects.exists()
    run = queue_run(fix, host)
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.ERROR and re.search(refusal, run.error)
    assert run.command == "" and "server started" not in run.log


def test_it_refuses_a_fix_that_sets_code_running_variables_and_runs_nothing(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix], ssh_target: remote.Target
) -> None:
    marker = f"/tmp/fixgraph-pwned-{uuid.uuid4().hex[:8]}"
    refused_and_never_run(make_fix(code_running_env(marker)), make_host(), "PYTHONWARNINGS")
    assert not exists_on_host(ssh_target, marker)


def test_it_refuses_a_fix_whose_flag_runs_code_nobody_reviewed(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    """A reviewer reads the fix, not the model repository's code --trust-remote-code runs."""
    fix = make_fix([{"action": "set_flag", "name": "trust-remote-code", "value": None}])
    refused_and_never_run(fix, make_host(), "--trust-remote-code is not run on a host")


def test_a_host_whose_operator_allows_the_flag_runs_it_and_no_other_host_does(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix], ssh_target: remote.Target
) -> None:
    fix = make_fix([{"action": "set_flag", "name": "trust-remote-code", "value": None}])
    args = ["add", "sandbox", "--address", ssh_target.address, "--port", str(ssh_target.port),
            "--user", ssh_target.username, "--key", ssh_target.key_path,
            "--host-key", ssh_target.host_key, "--allow-flag=--trust-remote-code"]  # fmt: skip
    call_command("hosts", *args, stdout=io.StringIO())
    sandbox = Host.objects.get(name="sandbox")
    # The operator's host: the fake GPU's PATH, as make_host gives every test host.
    Host.objects.filter(pk=sandbox.pk).update(env=make_host().env)
    sandbox.refresh_from_db()
    assert sandbox.allowed_flags == ["trust-remote-code"]

    run = validation.start(fix, sandbox)
    assert "--trust-remote-code" in run.command
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.PASSED, run.error + run.log
    assert '"--trust-remote-code"' in run.log  # the server was started with it

    with pytest.raises(validation.ValidationRefused, match="hosts add --allow-flag"):
        validation.start(fix, make_host())


def test_only_a_refused_flag_can_be_allowed_on_a_host(ssh_target: remote.Target) -> None:
    args = ["add", "h", "--address", ssh_target.address, "--port", str(ssh_target.port),
            "--user", ssh_target.username, "--host-key", ssh_target.host_key,
            "--allow-flag", "worker-extension-cls"]  # fmt: skip
    with pytest.raises(CommandError, match="only refused flags can be allowed on a host"):
        call_command("hosts", *args, stdout=io.StringIO())
    assert not Host.objects.exists()
    host = Host(name="h", address="a", username="u", allowed_flags=["download-dir"])
    with pytest.raises(ValidationError, match="only refused flags"):
        host.full_clean()


def test_it_runs_a_fix_of_vetted_knobs_and_shows_them_before_it_runs(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix], django_capture_on_commit_callbacks
) -> None:
    fix = make_fix(
        [
            {"action": "set_env", "name": "NCCL_P2P_DISABLE", "value": "1"},
            {
                "action": "set_env",
                "name": "PYTORCH_CUDA_ALLOC_CONF",
                "value": "expandable_segments:True",
            },
            {"action": "set_flag", "name": "kv-cache-dtype", "value": "bf16"},
        ]
    )
    host = make_host()
    with django_capture_on_commit_callbacks(execute=False):
        queued = validation.start(fix, host, recipe={"load": {"requests": 4, "concurrency": 2,
                                  "input_tokens": 8, "output_tokens": 20}, "lease_s": 6})  # fmt: skip
    planned = queued.command
    assert planned.startswith(
        "env NCCL_P2P_DISABLE=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 -m "
        "sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --host 127.0.0.1 --port "
        "'<free port>'"
    )
    assert "--kv-cache-dtype bf16" in planned
    assert f"after exporting {host.name}'s own environment: PATH, PYTHONPATH" in planned
    validation.run(queued.pk)
    queued.refresh_from_db()
    assert queued.status == Status.PASSED, queued.error + queued.log
    assert queued.command.startswith("env NCCL_P2P_DISABLE=1 PYTORCH_CUDA_ALLOC_CONF=")


def test_it_runs_no_fix_of_a_draft_finding(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix], ssh_target: remote.Target
) -> None:
    fix = make_fix()
    Finding.objects.filter(pk=fix.finding_id).update(status=Finding.Status.DRAFT)
    host = make_host()
    with pytest.raises(validation.ValidationRefused, match="a reviewer must publish it"):
        validation.start(fix, host)
    # Queued while published, sent back to draft before a worker took it.
    run = queue_run(fix, host)
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.ERROR and "draft finding" in run.error
    assert "connected to" not in run.log and run.command == ""  # refused before SSH


def test_the_validate_command_names_the_refusal_and_queues_nothing(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix]
) -> None:
    fix, host = make_fix(code_running_env("/tmp/x")), make_host()
    with pytest.raises(CommandError, match="not queued: PYTHONWARNINGS is not a vetted"):
        call_command("validate", "--fix", str(fix.pk), "--host", host.name, stdout=io.StringIO())
    assert not ValidationRun.objects.exists()


# ---------------------------------------------------------------- the host's own environment


def test_hosts_add_refuses_an_env_name_that_carries_a_command(
    ssh_target: remote.Target, fake_gpu_dir: str
) -> None:
    marker = f"/tmp/fixgraph-pwned-{uuid.uuid4().hex[:8]}"
    args = ["add", "evil-env", "--address", ssh_target.address, "--port", str(ssh_target.port),
            "--user", ssh_target.username, "--key", ssh_target.key_path,
            "--host-key", ssh_target.host_key, "--env", f"A;touch {marker};B=1"]  # fmt: skip
    with pytest.raises(CommandError, match="not an environment variable name"):
        call_command("hosts", *args, stdout=io.StringIO())
    assert not Host.objects.exists()
    assert not exists_on_host(ssh_target, marker)


def test_a_stored_host_env_name_with_a_command_never_reaches_the_shell(
    make_host: Callable[..., Host], make_fix: Callable[..., Fix], ssh_target: remote.Target
) -> None:
    marker = f"/tmp/fixgraph-pwned-{uuid.uuid4().hex[:8]}"
    host = make_host()
    # Written behind the model's back (a raw UPDATE, an old row): checked where it is used.
    env = {**host.env, f"A;touch {marker};B": "1"}
    Host.objects.filter(pk=host.pk).update(env=env)
    host.refresh_from_db()
    with pytest.raises(hosts.HostEnvRefused):
        hosts.collect_facts(host)
    run = queue_run(make_fix(), host)
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == Status.ERROR and "not an environment variable name" in run.error
    assert not exists_on_host(ssh_target, marker)


def test_the_admin_refuses_a_host_env_name_and_a_fix_env_that_runs_code(
    make_fix: Callable[..., Fix],
) -> None:
    admin = User.objects.create_superuser("root", "root@example.org", "pw-long-enough-1")
    client = Client()
    client.force_login(admin)
    response = client.post(
        "/admin/kb/host/add/",
        {
            "name": "box",
            "address": "10.200.0.9",
            "port": "22",
            "username": "gpu",
            "key_path": "",
            "host_key": "",
            "labels": "[]",
            "facts": "{}",
            "env": '{"A;touch /tmp/x;B": "1"}',
        },  # fmt: skip
    )
    assert response.status_code == 200
    assert "not an environment variable name" in response.content.decode()
    assert not Host.objects.exists()
    fix = make_fix()
    response = client.post(
        f"/admin/kb/fix/{fix.pk}/change/",
        {
            "finding": str(fix.finding_id),
            "summary": fix.summary,
            "outcome": fix.outcome,
            "position": "0",
            "changes": '[{"action": "set_env", "name": "LD_PRELOAD", "value": "/tmp/evil.so"}]',
        },  # fmt: skip
    )
    assert response.status_code == 200
    assert "LD_PRELOAD is not a vetted serving knob" in response.content.decode()
    fix.refresh_from_db()
    assert "LD_PRELOAD" not in str(fix.changes)
