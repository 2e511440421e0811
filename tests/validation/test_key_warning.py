"""A private key others can read is used (the worker may not own the file it was given),
but never silently: the session, `hosts add` and every run's log say to chmod it."""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command

from kb import remote
from kb.models import Fix, Host
from kb.services import validation

from .conftest import queue_run

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def open_key(ssh_target: remote.Target, tmp_path: Path) -> str:
    key = tmp_path / "id_ed25519"
    shutil.copy(ssh_target.key_path, key)
    key.chmod(0o644)
    return str(key)


def test_a_readable_key_connects_with_a_warning(ssh_target: remote.Target, open_key: str) -> None:
    target = remote.Target(ssh_target.address, ssh_target.port, ssh_target.username,
                           open_key, ssh_target.host_key)  # fmt: skip
    with remote.connect(target) as ssh:
        assert ssh.run("echo ok", timeout=20).stdout.strip() == "ok"
        assert ssh.warning == (
            f"warning: the private key {open_key} is readable by others (mode 0644); "
            f"run `chmod 600 {open_key}`"
        )
    with remote.connect(ssh_target) as ssh:  # the test key is 0600
        assert ssh.warning is None


def test_hosts_add_and_the_run_log_say_so(
    ssh_target: remote.Target, open_key: str, make_host: Callable[..., Host],
    make_fix: Callable[..., Fix],
) -> None:  # fmt: skip
    err = io.StringIO()
    call_command("hosts", "add", "open-key", "--address", ssh_target.address, "--port",
                 str(ssh_target.port), "--user", ssh_target.username, "--key", open_key,
                 "--host-key", ssh_target.host_key, stdout=io.StringIO(), stderr=err)  # fmt: skip
    assert "readable by others (mode 0644)" in err.getvalue()
    host = make_host()
    Host.objects.filter(pk=host.pk).update(key_path=open_key)
    run = queue_run(make_fix(), Host.objects.get(pk=host.pk))
    validation.run(run.pk)
    run.refresh_from_db()
    assert run.status == "passed", run.error
    assert f"the private key {open_key} is readable by others" in run.log
