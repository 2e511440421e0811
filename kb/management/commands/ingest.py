"""`python manage.py ingest PATH... [--publish]`: load write-ups and FINDINGS.md files."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from kb.services.ingest import drafts_waiting, ingest_paths


class Command(BaseCommand):
    help = (
        "Ingest incident write-ups and FINDINGS.md files (files or folders). Idempotent: "
        "unchanged documents are skipped, edited ones update their findings; after an "
        "upgrade that reads documents differently, their error samples are read again."
    )
    # Django's system checks cost 0.9 s of each run (they import every URL module and
    # the admin); they judge the project's configuration (URLs, admin, templates,
    # security settings), which `manage.py check`, `migrate` and the server's start-up
    # check, not anything an ingest reads. Django's own `shell`, `dbshell`, `test` and
    # `createcachetable` skip them the same way.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", help="Files or folders (.md, .txt, .log)")
        parser.add_argument(
            "--publish",
            action="store_true",
            help="Publish findings from FINDINGS.md-format documents directly "
            "(free-form write-ups always wait for review)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        report = ingest_paths(options["paths"], publish=options["publish"])
        for doc in report.documents:
            self.stdout.write(describe(doc))
        totals = ", ".join(
            f"{report.count(action)} {action}"
            for action in ("created", "updated", "skipped", "failed")
        )
        self.stdout.write(f"documents: {totals}")
        waiting = drafts_waiting()
        self.stdout.write(f"{waiting} draft{'s' if waiting != 1 else ''} wait at /review/")
        if report.failed and len(report.failed) == len(report.documents):
            raise CommandError("no document could be ingested")


def describe(doc: Any) -> str:
    if doc.action == "failed":
        return f"failed   {doc.path}: {doc.reason}"
    if doc.action == "skipped":
        return f"skipped  {doc.path} ({doc.reason})"
    parts = [f"{doc.findings_created} findings created", f"{doc.findings_updated} updated"]
    if doc.findings_joined:
        parts.append(f"{doc.findings_joined} joined the finding of the same symptom")
    if doc.findings_removed:
        parts.append(f"{doc.findings_removed} retired")
    if doc.scrubbed:
        parts.append(f"replaced by [redacted]: {', '.join(doc.scrubbed)}")
    said = f" ({doc.reason})" if doc.reason else ""
    return f"{doc.action:<8} {doc.path}: {', '.join(parts)}{said}"
