"""Commands that say what is wrong: `validate` names which of --fix / --host it cannot use;
`hosts list` has a header, or says there are no hosts yet."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from kb.models import Finding, Fix, Host, ValidationRun

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def fix() -> Fix:
    finding = Finding.objects.create(title="x", status=Finding.Status.PUBLISHED)
    return Fix.objects.create(finding=finding, summary="bf16 KV cache", outcome="resolves")


def test_hosts_list_says_there_are_none_yet() -> None:
    assert run("hosts", "list").startswith("no hosts yet: add one with `manage.py hosts add")


def test_hosts_list_has_a_header() -> None:
    Host.objects.create(name="h200-a", address="10.200.0.9", username="gpu", labels=["lab"])
    lines = run("hosts", "list").splitlines()
    assert lines[0].split("\t") == ["name", "login", "gpus", "labels", "allows", "state"]
    assert lines[1].split("\t") == ["h200-a", "gpu@10.200.0.9:22", "?", "lab", "", "free"]


def test_a_hosts_operator_allows_and_disallows_a_refused_flag_later() -> None:
    Host.objects.create(name="h200-a", address="10.200.0.9", username="gpu")
    assert run("hosts", "allow", "h200-a", "trust-remote-code") == (
        "h200-a allows --trust-remote-code\n"
    )
    assert run("hosts", "list").splitlines()[1].split("\t")[4] == "--trust-remote-code"
    with pytest.raises(CommandError, match="only refused flags can be allowed"):
        run("hosts", "allow", "h200-a", "download-dir")
    assert Host.objects.get().allowed_flags == ["trust-remote-code"]
    assert run("hosts", "disallow", "h200-a", "trust-remote-code") == (
        "h200-a allows no refused flag\n"
    )


def test_hosts_list_says_busy_only_while_the_lease_runs(fix: Fix) -> None:
    host = Host.objects.create(name="h200-a", address="10.200.0.9", username="gpu")
    run_row = ValidationRun.objects.create(fix=fix, host=host, status="running")
    Host.objects.filter(pk=host.pk).update(
        locked_by=run_row, lease_expires_at=timezone.now() + timedelta(seconds=60)
    )
    assert run("hosts", "list").splitlines()[1].endswith(f"busy (run {run_row.pk})")

    # The worker died: its lease ran out, and the sweeper has not been by yet.
    Host.objects.filter(pk=host.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert run("hosts", "list").splitlines()[1].endswith("free")


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "--fix ID is missing"),
        (["--fix", "999999", "--host", "h200-a"], "--fix 999999: no fix has this id"),
        (["--fix", "FIX"], "--host NAME is missing (registered hosts: h200-a)"),
        (["--fix", "FIX", "--host", "h100"], "--host h100: no host has this name (registered"),
    ],
)
def test_validate_names_which_argument_is_wrong(fix: Fix, args: list[str], message: str) -> None:
    Host.objects.create(name="h200-a", address="10.200.0.9", username="gpu")
    args = [str(fix.pk) if a == "FIX" else a for a in args]
    with pytest.raises(CommandError) as refused:
        run("validate", *args)
    assert str(refused.value).startswith(message)
