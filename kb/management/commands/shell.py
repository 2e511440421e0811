"""`manage.py shell`, whose automatic imports leave out what no module holds.

django-simple-history makes each `Historical…` model at run time; no module has it as an
attribute, so Django's shell reported them on every start as "could not be automatically
imported" (`manage.py shell -c` included, which scripts read).
"""

from __future__ import annotations

from importlib import import_module

from django.core.management.commands import shell


class Command(shell.Command):
    def get_auto_imports(self) -> list[str]:
        return [path for path in super().get_auto_imports() if importable(path)]


def importable(path: str) -> bool:
    module, _, name = path.rpartition(".")
    try:
        return hasattr(import_module(module), name)
    except ImportError:
        return False
