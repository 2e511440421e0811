"""`python manage.py validate --fix ID --host NAME [--wait]`: run a fix on a GPU host."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from decisiontree.recipes import UnknownBenchFormat
from kb.models import Fix, Host, ValidationRun
from kb.services import validation


class Command(BaseCommand):
    help = "Queue a validation run of a fix on a host (or import a benchmark run by hand)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fix", type=int, help="The fix's id")
        parser.add_argument("--host", help="The host's name")
        parser.add_argument("--wait", action="store_true", help="Wait for the verdict")
        parser.add_argument("--timeout", type=float, default=3600, help="Seconds to wait")
        parser.add_argument("--recipe", default="{}", help="JSON overrides (model, flags, load…)")
        parser.add_argument("--import", dest="import_file", metavar="FILE",
                            help="Record this benchmark output instead of running one")  # fmt: skip
        parser.add_argument("--cancel", type=int, metavar="RUN_ID", help="Cancel a run")
        parser.add_argument(
            "--all-matching",
            action="store_true",
            help="Queue runs on every host whose GPU architecture the finding was seen on",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["cancel"]:
            done = validation.cancel(options["cancel"])
            self.stdout.write("cancelled" if done else "not queued or running: nothing to cancel")
            return
        if options["all_matching"]:
            self.start_everywhere(options)
            return
        fix, host = self.fix_and_host(options)
        if options["import_file"]:
            run = self.import_run(fix, host, options["import_file"])
        else:
            try:
                run = validation.start(fix, host, recipe=self.recipe(options["recipe"]))
            except validation.ValidationRefused as exc:
                raise CommandError(f"not queued: {exc}") from exc
            self.stdout.write(f"run {run.pk} queued on {validation.queue_for(host)}; it will run:")
            self.stdout.write(run.command)
            if options["wait"]:
                run = wait_for(run.pk, options["timeout"])
        self.report(run)

    def start_everywhere(self, options: dict[str, Any]) -> None:
        fix = Fix.objects.filter(pk=options["fix"]).first() if options["fix"] else None
        if fix is None:
            raise CommandError("--all-matching needs --fix ID of an existing fix")
        try:
            started = validation.start_on_matching(fix, recipe=self.recipe(options["recipe"]))
        except validation.ValidationRefused as exc:
            raise CommandError(f"not queued: {exc}") from exc
        for run in started.runs:
            self.stdout.write(f"run {run.pk} queued on {run.host.name}")
        for name, why in started.refused.items():
            self.stdout.write(f"not queued on {name}: {why}")
        if not started.runs:
            self.stdout.write("no registered host matches (collect facts with `hosts facts`)")

    def fix_and_host(self, options: dict[str, Any]) -> tuple[Fix, Host]:
        """The fix and the host named, or an error that says which of the two is wrong."""
        if not options["fix"]:
            raise CommandError("--fix ID is missing: the fix ids are on each finding's page")
        fix = Fix.objects.filter(pk=options["fix"]).first()
        if fix is None:
            raise CommandError(f"--fix {options['fix']}: no fix has this id")
        names = list(Host.objects.values_list("name", flat=True))
        known = f"registered hosts: {', '.join(names)}" if names else "no host is registered yet"
        if not options["host"]:
            raise CommandError(f"--host NAME is missing ({known})")
        host = Host.objects.filter(name=options["host"]).first()
        if host is None:
            raise CommandError(f"--host {options['host']}: no host has this name ({known})")
        return fix, host

    def recipe(self, raw: str) -> dict[str, Any]:
        try:
            recipe = json.loads(raw)
        except ValueError as exc:
            raise CommandError(f"--recipe is not JSON: {exc}") from exc
        if not isinstance(recipe, dict):
            raise CommandError("--recipe must be a JSON object")
        return recipe

    def import_run(self, fix: Fix, host: Host, path: str) -> ValidationRun:
        try:
            return validation.import_result(fix, host, Path(path).read_text(errors="replace"))
        except (OSError, UnknownBenchFormat) as exc:
            raise CommandError(f"cannot import {path}: {exc}") from exc

    def report(self, run: ValidationRun) -> None:
        self.stdout.write(f"run {run.pk}: {run.status}")
        if run.error:
            self.stdout.write(f"error: {run.error}")
        for name, value in (run.metrics or {}).items():
            if value is not None:
                self.stdout.write(f"  {name}: {value}")
        if run.live:
            return
        if run.status != ValidationRun.Status.PASSED:
            raise CommandError(f"run {run.pk} ended {run.status}")


def wait_for(run_id: int, timeout: float) -> ValidationRun:
    deadline = time.monotonic() + timeout
    while True:
        run = ValidationRun.objects.get(pk=run_id)
        if not run.live or time.monotonic() > deadline:
            return run
        time.sleep(1)
