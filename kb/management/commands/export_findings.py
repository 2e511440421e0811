"""`python manage.py export_findings [--status published|drafts|all] [--output FILE]`"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from kb.services.export import STATUSES, export_parts


class Command(BaseCommand):
    help = (
        "Write the knowledge base as FINDINGS.md (docs/findings-format.md): what `ingest` "
        "reads back, on this FixGraph or another."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--status", choices=sorted(STATUSES), default="published",
                            help="Default: published, what diagnoses use")  # fmt: skip
        parser.add_argument("--output", "-o", default="-", help="A file; - for stdout")
        parser.add_argument("--title", default="Findings", help="The file's `# ` title")

    def handle(self, *args: Any, **options: Any) -> None:
        parts = export_parts(options["status"], options["title"])
        if options["output"] == "-":
            for part in parts:
                self.stdout.write(part, ending="")
            return
        target = Path(options["output"])
        if not target.parent.is_dir():
            raise CommandError(f"no folder {str(target.parent)!r} to write {target.name} in")
        # Written whole, then moved: a reader never sees half a file.
        partial = target.with_name(f".{target.name}.partial")
        written = 0
        try:
            with partial.open("w", encoding="utf-8") as out:
                for part in parts:
                    out.write(part)
                    written += 1
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        # The first part is the file's title; each other is one finding.
        self.stderr.write(f"wrote {written - 1} findings to {target}")
