"""`python manage.py hosts add|allow|disallow|facts|list`: the GPU host registry."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError
from django.utils import timezone

from decisiontree.server_env import env_name_problem
from kb import remote
from kb.models import Host
from kb.services import hosts


class Command(BaseCommand):
    help = "Register GPU hosts, read their facts over SSH, list them."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="Register a host and pin its SSH host key")
        add.add_argument("name")
        add.add_argument("--address", required=True)
        add.add_argument("--port", type=int, default=22)
        add.add_argument("--user", required=True, help="Login name on the host")
        add.add_argument("--key", default="", help="Private key file on the worker; omit: agent")
        add.add_argument("--accept-host-key", action="store_true",
                         help="Pin the key the host offers now (check it first)")  # fmt: skip
        add.add_argument("--host-key", default="", help="Pin this public key (OpenSSH format)")
        add.add_argument("--label", action="append", default=[], help="Repeatable; the first "
                         "label names the Celery queue whose workers reach the host")  # fmt: skip
        add.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                         help="Environment of commands on the host (repeatable)")  # fmt: skip
        add.add_argument("--allow-flag", action="append", default=[], metavar="FLAG",
                         help="Let runs on this host pass a flag the host policy refuses, "
                         "e.g. trust-remote-code (repeatable)")  # fmt: skip
        for action, says in (("allow", "Let"), ("disallow", "Stop letting")):
            edit = sub.add_parser(action, help=f"{says} runs on a host pass refused flags")
            edit.add_argument("name")
            edit.add_argument("flags", nargs="+", metavar="FLAG",
                              help="without its dashes, e.g. trust-remote-code")  # fmt: skip
        facts = sub.add_parser("facts", help="Read GPUs and versions over SSH and save them")
        facts.add_argument("name")
        sub.add_parser("list", help="Registered hosts with their GPUs and leases")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"do_{options['action']}")(options)
        except (remote.RemoteError, hosts.HostKeyNotApproved, hosts.HostEnvRefused) as exc:
            raise CommandError(str(exc)) from exc

    def do_add(self, options: dict[str, Any]) -> None:
        try:
            host = hosts.add_host(
                options["name"], address=options["address"], port=options["port"],
                username=options["user"], key_path=options["key"], labels=options["label"],
                env=parse_env(options["env"]), accept_host_key=options["accept_host_key"],
                host_key=options["host_key"],
                allowed_flags=[f.removeprefix("--") for f in options["allow_flag"]],
            )  # fmt: skip
        except IntegrityError as exc:
            raise CommandError(f"a host named {options['name']!r} exists already") from exc
        self.stdout.write(f"added {host.name} ({host.address}:{host.port}), host key "
                          f"{remote.fingerprint(host.host_key)} pinned")  # fmt: skip
        warning = remote.key_warning(host.key_path)
        if warning:
            self.stderr.write(warning)

    def do_allow(self, options: dict[str, Any]) -> None:
        self.edit_allowed(options, allow=True)

    def do_disallow(self, options: dict[str, Any]) -> None:
        self.edit_allowed(options, allow=False)

    def edit_allowed(self, options: dict[str, Any], *, allow: bool) -> None:
        host = Host.objects.filter(name=options["name"]).first()
        if host is None:
            raise CommandError(f"no host named {options['name']!r}")
        named = {flag.removeprefix("--") for flag in options["flags"]}
        current = set(host.allowed_flags or ())
        host.allowed_flags = sorted(current | named if allow else current - named)
        try:
            host.full_clean()
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        host.save(update_fields=["allowed_flags"])
        allowed = ", ".join(f"--{flag}" for flag in host.allowed_flags) or "no refused flag"
        self.stdout.write(f"{host.name} allows {allowed}")

    def do_facts(self, options: dict[str, Any]) -> None:
        host = Host.objects.filter(name=options["name"]).first()
        if host is None:
            raise CommandError(f"no host named {options['name']!r}")
        self.stdout.write(json.dumps(hosts.collect_facts(host), indent=2, sort_keys=True))

    def do_list(self, options: dict[str, Any]) -> None:
        found = list(Host.objects.all())
        if not found:
            self.stdout.write("no hosts yet: add one with `manage.py hosts add NAME --address "
                              "ADDRESS --user USER --accept-host-key`")  # fmt: skip
            return
        self.stdout.write("name\tlogin\tgpus\tlabels\tallows\tstate")
        now = timezone.now()
        for host in found:
            facts = host.facts or {}
            gpus = f"{facts.get('gpu_count', '?')}x {facts.get('gpu_name', '?')}" if facts else "?"
            holder = host.holder(now)
            busy = f"busy (run {holder})" if holder else "free"
            allows = ",".join(f"--{flag}" for flag in host.allowed_flags or ())
            self.stdout.write(f"{host.name}\t{host.username}@{host.address}:{host.port}\t{gpus}"
                              f"\t{','.join(host.labels)}\t{allows}\t{busy}")  # fmt: skip


def parse_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq or not name:
            raise CommandError(f"--env wants NAME=VALUE, not {pair!r}")
        problem = env_name_problem(name)
        if problem:
            raise CommandError(f"--env {pair!r}: {problem}")
        env[name] = value
    return env
