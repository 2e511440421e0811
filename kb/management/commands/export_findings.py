"""`python manage.py export_findings [--status published|drafts|all] [--output FILE|DIR]`"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from decisiontree.documents import MAX_DOCUMENT_BYTES
from kb.services.export import STATUSES, export_parts

PART_NAME = "findings-{:04d}.md"  # in a folder: parts `ingest FOLDER` reads in this order


class Command(BaseCommand):
    help = (
        "Write the knowledge base as FINDINGS.md (docs/findings-format.md): what `ingest` "
        "reads back, on this FixGraph or another. Into a folder, in parts `ingest` takes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--status", choices=sorted(STATUSES), default="published",
                            help="Default: published, what diagnoses use")  # fmt: skip
        parser.add_argument("--output", "-o", default="-",
                            help="A file, a folder (parts of 5 MB at most), or -")  # fmt: skip
        parser.add_argument("--title", default="Findings", help="The file's `# ` title")

    def handle(self, *args: Any, **options: Any) -> None:
        parts = export_parts(options["status"], options["title"])
        target = Path(options["output"])
        if options["output"] == "-":
            for part in parts:
                self.stdout.write(part, ending="")
            return
        if target.is_dir():
            files, count = write_folder(parts, target)
            where = f"{target} ({files} file{'' if files == 1 else 's'})"
        else:
            if not target.parent.is_dir():
                raise CommandError(f"no folder {str(target.parent)!r} to write {target.name} in")
            count = write_file(parts, target)
            where = str(target)
        self.stderr.write(f"wrote {count} findings to {where}")


def write_file(parts: Iterator[str], target: Path) -> int:
    """The whole export in one file, written then moved (a reader never sees half of it);
    refused past the size `ingest` reads in one document. Returns the findings written."""
    partial = target.with_name(f".{target.name}.partial")
    header, count, size = next(parts), 0, 0
    try:
        with partial.open("w", encoding="utf-8") as out:
            out.write(header)
            size = len(header.encode())
            for part in parts:
                size += len(part.encode())
                if size > MAX_DOCUMENT_BYTES:
                    raise CommandError(
                        f"the export passed {MAX_DOCUMENT_BYTES // 2**20} MB, the most `ingest` "
                        "reads in one document: give a folder (-o DIR), which gets it in parts"
                    )
                out.write(part)
                count += 1
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return count


def write_folder(parts: Iterator[str], folder: Path) -> tuple[int, int]:
    """The export in parts of at most the size `ingest` reads in one document, each with
    the title; earlier parts in the folder are replaced once all new ones are written.
    Returns (files, findings)."""
    header = next(parts)
    written: list[Path] = []
    out = None
    size, count = 0, 0
    try:
        for part in parts:
            length = len(part.encode())
            if out is None or size + length > MAX_DOCUMENT_BYTES:
                if out is not None:
                    out.close()
                written.append(folder / f".{PART_NAME.format(len(written) + 1)}.partial")
                out = written[-1].open("w", encoding="utf-8")
                out.write(header)
                size = len(header.encode())
            out.write(part)
            size += length
            count += 1
        if out is not None:
            out.close()
        for old in folder.glob(PART_NAME.replace("{:04d}", "[0-9][0-9][0-9][0-9]")):
            old.unlink()
        for number, partial in enumerate(written, start=1):
            partial.replace(folder / PART_NAME.format(number))
    finally:
        if out is not None and not out.closed:
            out.close()
        for partial in written:
            partial.unlink(missing_ok=True)
    return len(written), count
