"""`python manage.py diagnose [--gpu NAME] [--launch-cmd CMD] [--json] [FILE]`."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from decisiontree.diagnose import render_text
from decisiontree.traceback import InputRejected
from kb.services.diagnosis import diagnose


class Command(BaseCommand):
    help = "Diagnose a traceback (from FILE or standard input): the ordered fixes, and why."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", help="Traceback file; standard input if omitted")
        parser.add_argument("--gpu", help='GPU name, e.g. "RTX PRO 6000" or "H200"')
        parser.add_argument("--launch-cmd", dest="launch_command", help="The launch command")
        parser.add_argument("--model", help="Model repository id or name")
        parser.add_argument("--framework", help="sglang or vllm, optionally with a version")
        parser.add_argument("--framework-version", help="e.g. 0.5.9")
        parser.add_argument("--json", action="store_true", help="Print the API's JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        text = read_input(options["file"])
        framework, version = split_framework(options["framework"], options["framework_version"])
        try:
            result = diagnose(
                text,
                launch_command=options["launch_command"],
                gpu=options["gpu"],
                model=options["model"],
                framework=framework,
                framework_version=version,
            )
        except InputRejected as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            from api.serializers import DiagnosisSerializer  # the API's own shape

            context = {"launch_command": options["launch_command"] or ""}
            answer = DiagnosisSerializer(result, context=context).data
            self.stdout.write(json.dumps(answer, indent=2))
        else:
            self.stdout.write(render_text(result))


def read_input(path: str | None) -> str:
    limit = settings.FIXGRAPH_MAX_PASTE_BYTES
    try:
        if path:
            with open(path, "rb") as handle:
                data = handle.read(limit + 1)
        else:
            data = sys.stdin.buffer.read(limit + 1)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(data) > limit:
        raise CommandError(
            f"the traceback is larger than {limit:,} bytes: paste the error and the lines "
            "around it, not the whole log"
        )
    return data.decode("utf-8", errors="replace")


def split_framework(framework: str | None, version: str | None) -> tuple[str | None, str | None]:
    """Accept "sglang 0.5.9" or "sglang==0.5.9" as well as --framework-version."""
    if framework and not version:
        for separator in ("==", " ", "@"):
            if separator in framework.strip():
                name, _, rest = framework.strip().partition(separator)
                return name.strip(), rest.strip() or None
    return framework, version
