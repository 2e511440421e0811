"""`python manage.py reindex_search [--all]`: rebuild search documents after a bulk load."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from kb.search import build_missing_documents, rebuild_all


class Command(BaseCommand):
    help = (
        "Build the search documents of findings that have none or a stale one (rows written "
        "without signals: bulk loads, raw SQL, a restore). --all rebuilds every document."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--all", action="store_true", help="Rebuild every document")

    def handle(self, *args: Any, **options: Any) -> None:
        count = rebuild_all() if options["all"] else build_missing_documents()
        self.stdout.write(f"search documents rebuilt: {count}")
