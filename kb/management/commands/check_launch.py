"""`python manage.py check_launch [--gpu NAME] [--framework "sglang 0.5.9"] [--json] -- COMMAND...`.

Before a server starts: the known issues its setup meets, each with its fix applied to the
command. Prints the API's answer (POST /api/v1/check-launch/) as plain text, or as JSON.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from kb.management.commands.diagnose import render_known_good, split_framework
from kb.services.diagnosis import check_launch


class Command(BaseCommand):
    help = "Check a launch command before it runs: the known issues its setup meets."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "launch", nargs="+", help="The launch command (quote it, or put it after --)"
        )
        parser.add_argument("--gpu", help='GPU name, e.g. "RTX PRO 6000" or "H200"')
        parser.add_argument("--model", help="Model repository id or name")
        parser.add_argument("--framework", help="sglang or vllm, optionally with a version")
        parser.add_argument("--framework-version", help="e.g. 0.5.9")
        parser.add_argument("--json", action="store_true", help="Print the API's JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        words = options["launch"]
        launch = words[0] if len(words) == 1 else shlex.join(words)
        if not launch.strip():
            raise CommandError("Give the launch command to check.")
        framework, version = split_framework(options["framework"], options["framework_version"])
        check = check_launch(
            launch,
            gpu=options["gpu"],
            model=options["model"],
            framework=framework,
            framework_version=version,
        )
        from api.serializers import LaunchCheckSerializer  # the API's own shape

        answer = LaunchCheckSerializer(check, context={"launch_command": launch}).data
        if options["json"]:
            self.stdout.write(json.dumps(answer, indent=2))
        else:
            self.stdout.write("\n".join(render_check(answer)))


def render_check(answer: dict[str, Any]) -> list[str]:
    lines = [answer["summary"]]
    for problem in answer["flag_problems"]:
        instead = f"; use {problem['instead']}" if problem["instead"] else ""
        lines.append(f"  {problem['flag']}: {problem['problem']}{instead}")
    if answer["gpu_requirements"]:
        lines += ["", "Backends that do not run on this GPU:"]
        lines += [f"  {reading['text']}" for reading in answer["gpu_requirements"]]
    if weights := answer["weights"]:
        lines += ["", weights["text"]]
        if weights["corrected_command"]:
            lines.append(f"  {weights['corrected_command']}")
    for number, risk in enumerate(answer["risks"], start=1):
        lines += ["", f"{number}. [{risk['kind']}] {risk['finding']['title']}"]
        met = ", ".join(c["in_words"] for c in risk["met"])
        lines.append(f"   meets: {met}")
        if risk["open"]:
            left = ", ".join(c["in_words"] for c in risk["open"])
            lines.append(f"   not settled by the launch: {left}")
        if risk["fixes"]:
            fix = risk["fixes"][0]
            lines.append(
                f"   fix: {' '.join(fix['fix']['command_changes']) or fix['fix']['summary']}"
            )
            if fix["corrected_command"] and not fix["already_applied"]:
                lines.append(f"     {fix['corrected_command']}")
        lines.append(f"   {risk['finding']['html_url']}")
    if answer["more"]:
        lines += [
            "",
            f"{answer['more']} more not shown: give the GPU and the release to narrow them.",
        ]
    if answer["known_good"]:
        lines += render_known_good(answer["known_good"])
    return lines
