"""`python manage.py users add|grant|revoke|list`: the team's accounts and their roles."""

from __future__ import annotations

import getpass
import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from kb.roles import ROLES, grant, revoke, roles_of

ROLE_NAMES = sorted(ROLES)


class Command(BaseCommand):
    help = "Create team accounts (a password asked, never an argument) and grant roles."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="Create an account; asks its password twice")
        add.add_argument("username")
        add.add_argument("--email", default="")
        for name, role in sorted(ROLES.items()):
            add.add_argument(f"--{name}", action="store_true", help=f"A {name}: {role.means}")
        add.add_argument("--admin", action="store_true",
                         help="Every permission and the admin pages (/admin/)")  # fmt: skip
        add.add_argument("--password-stdin", action="store_true",
                         help="Read the password from stdin's first line")  # fmt: skip
        for action, verb in (("grant", "Give"), ("revoke", "Take back")):
            cmd = sub.add_parser(action, help=f"{verb} a role: {', '.join(ROLE_NAMES)}")
            cmd.add_argument("username")
            cmd.add_argument("role", choices=ROLE_NAMES)
        sub.add_parser("list", help="Accounts with their roles")

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"do_{options['action']}")(options)

    def do_add(self, options: dict[str, Any]) -> None:
        users = get_user_model()
        name = options["username"]
        if users.objects.filter(username=name).exists():
            raise CommandError(f"a user named {name!r} exists already (grant it a role instead)")
        candidate = users(username=name, email=options["email"])
        password = self._password(options["password_stdin"])
        try:
            validate_password(password, candidate)
        except ValidationError as exc:
            raise CommandError("password refused: " + " ".join(exc.messages)) from exc
        with transaction.atomic():
            if options["admin"]:
                user = users.objects.create_superuser(name, options["email"], password)
            else:
                user = users.objects.create_user(name, options["email"], password)
            for role_name, role in ROLES.items():
                if options[role_name]:
                    grant(user, role)
        self.stdout.write(f"added {name}: {describe(self._user(name))}")

    def do_grant(self, options: dict[str, Any]) -> None:
        name = options["username"]
        grant(self._user(name), ROLES[options["role"]])
        self.stdout.write(f"{name}: {describe(self._user(name))}")

    def do_revoke(self, options: dict[str, Any]) -> None:
        name = options["username"]
        revoke(self._user(name), ROLES[options["role"]])
        user = self._user(name)  # read afresh: permissions are cached on a user object
        self.stdout.write(f"{name}: {describe(user)}")
        if options["role"] in roles_of(user):
            self.stderr.write(
                f"{name} still holds the {options['role']} permissions "
                "(as an admin, or granted one by one in the admin pages)"
            )

    def do_list(self, options: dict[str, Any]) -> None:
        found = list(get_user_model().objects.order_by("username"))
        if not found:
            self.stdout.write("no accounts yet: add one with `manage.py users add NAME --reviewer`")
            return
        self.stdout.write("user\troles\tactive\tlast login")
        for user in found:
            last = f"{user.last_login:%Y-%m-%d %H:%M}" if user.last_login else "never"
            active = "yes" if user.is_active else "no"
            self.stdout.write(f"{user.username}\t{describe(user)}\t{active}\t{last}")

    def _user(self, name: str) -> Any:
        """The account, read afresh (a user object caches its permissions)."""
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise CommandError(f"no user named {name!r}: add it with `manage.py users add {name}`")
        return user

    def _password(self, from_stdin: bool) -> str:
        if from_stdin:
            password = sys.stdin.readline().rstrip("\r\n")
        elif sys.stdin.isatty():
            password = getpass.getpass("Password: ")
            if getpass.getpass("Password (again): ") != password:
                raise CommandError("the two passwords differ; nothing was added")
        else:
            raise CommandError("no terminal to ask a password on: pass --password-stdin")
        if not password:
            raise CommandError("an empty password; nothing was added")
        return password


def describe(user: Any) -> str:
    roles = ["admin"] if user.is_superuser else roles_of(user)
    return ", ".join(roles) or "member (search, diagnose, vote, start drafts)"
