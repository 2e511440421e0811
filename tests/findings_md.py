"""A FINDINGS.md written for a test and ingested as a team would: `manage.py ingest --publish`."""

from __future__ import annotations

from pathlib import Path

from django.core.management import call_command


def publish(path: Path, text: str) -> None:
    """Write `text` to `path` and ingest it, its findings published."""
    path.write_text(text)
    call_command("ingest", str(path), "--publish", verbosity=0)
