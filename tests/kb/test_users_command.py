"""`manage.py users`: a team member gets an account and a role without the admin pages, and
what the role allows is what the web pages then let them do."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from kb.models import Finding, Fix

pytestmark = pytest.mark.django_db
PASSWORD = "a long enough passphrase"


def users(*args: str, stdin: str = "", monkeypatch: pytest.MonkeyPatch | None = None) -> str:
    out = io.StringIO()
    if monkeypatch is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    call_command("users", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def add(name: str, *roles: str, monkeypatch: pytest.MonkeyPatch) -> str:
    flags = [f"--{role}" for role in roles]
    return users(
        "add", name, *flags, "--password-stdin", stdin=PASSWORD + "\n", monkeypatch=monkeypatch
    )


def logged_in(name: str) -> Client:
    """A browser that signed in on the site's login page."""
    client = Client()
    signed_in = client.post(reverse("login"), {"username": name, "password": PASSWORD})
    assert signed_in.status_code == 302, f"{name} could not log in"
    return client


def test_a_reviewer_added_here_can_log_in_and_open_the_review_queue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert add("alice", "reviewer", monkeypatch=monkeypatch) == "added alice: reviewer\n"

    assert logged_in("alice").get(reverse("kb:review-queue")).status_code == 200


def test_a_member_without_a_role_may_not_review(monkeypatch: pytest.MonkeyPatch) -> None:
    out = add("bob", monkeypatch=monkeypatch)

    assert out == "added bob: member (search, diagnose, vote, start drafts)\n"
    assert logged_in("bob").get(reverse("kb:review-queue")).status_code == 403


def test_a_validator_gets_the_validate_form_on_a_published_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    finding = Finding.objects.create(title="NaN decode", status=Finding.Status.PUBLISHED)
    fix = Fix.objects.create(finding=finding, summary="bf16 KV cache", outcome="resolves")
    add("carol", monkeypatch=monkeypatch)
    page = reverse("kb:finding-detail", args=[finding.pk])
    form = f'action="{reverse("kb:validate-fix", args=[finding.pk, fix.pk])}"'
    assert form not in logged_in("carol").get(page).content.decode()

    assert users("grant", "carol", "validator") == "carol: validator\n"

    assert form in logged_in("carol").get(page).content.decode()


def test_revoking_the_role_closes_the_review_queue_again(monkeypatch: pytest.MonkeyPatch) -> None:
    add("dave", "reviewer", "validator", monkeypatch=monkeypatch)

    assert users("revoke", "dave", "reviewer") == "dave: validator\n"
    assert logged_in("dave").get(reverse("kb:review-queue")).status_code == 403


def test_an_admin_reaches_the_admin_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    assert add("erin", "admin", monkeypatch=monkeypatch) == "added erin: admin\n"

    assert logged_in("erin").get("/admin/").status_code == 200


def test_a_weak_password_is_refused_and_no_account_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(CommandError, match="password refused: This password is too short"):
        users("add", "frank", "--password-stdin", stdin="abc\n", monkeypatch=monkeypatch)

    assert not get_user_model().objects.filter(username="frank").exists()


def test_without_a_terminal_the_password_must_come_on_stdin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(CommandError, match="pass --password-stdin"):
        users("add", "gina", stdin=PASSWORD + "\n", monkeypatch=monkeypatch)

    assert not get_user_model().objects.filter(username="gina").exists()


def test_adding_a_name_that_exists_keeps_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    add("hank", monkeypatch=monkeypatch)

    with pytest.raises(CommandError, match="exists already"):
        users("add", "hank", "--password-stdin", stdin="another passphrase entirely\n",
              monkeypatch=monkeypatch)  # fmt: skip

    assert logged_in("hank")


def test_list_names_each_account_with_its_roles(monkeypatch: pytest.MonkeyPatch) -> None:
    assert users("list").startswith("no accounts yet: add one with `manage.py users add")
    add("ivy", "reviewer", "validator", monkeypatch=monkeypatch)
    add("jo", monkeypatch=monkeypatch)

    rows = [line.split("\t") for line in users("list").splitlines()]

    assert rows[0] == ["user", "roles", "active", "last login"]
    assert rows[1] == ["ivy", "reviewer, validator", "yes", "never"]
    assert rows[2][:2] == ["jo", "member (search, diagnose, vote, start drafts)"]


def test_a_role_granted_to_a_missing_user_names_the_command_that_adds_one() -> None:
    with pytest.raises(CommandError, match="add it with `manage.py users add kim`"):
        users("grant", "kim", "reviewer")
