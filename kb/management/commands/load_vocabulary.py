"""`python manage.py load_vocabulary`: GPUs and launch flags from the shipped data files."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from kb.services.vocabulary import load_vocabulary


class Command(BaseCommand):
    help = "Load the built-in vocabulary (GPUs, SGLang and vLLM flags). Idempotent."

    def handle(self, *args: Any, **options: Any) -> None:
        for name, counts in load_vocabulary().items():
            self.stdout.write(
                f"{name}: {counts.created} created, {counts.updated} updated, "
                f"{counts.unchanged} unchanged"
            )
