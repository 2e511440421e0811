#!/usr/bin/env python
"""Django's command-line utility for FixGraph.

It reads a `.env` file beside it first (FIXGRAPH_ENV_FILE names another), so the
README's commands work in any terminal as `make run` set them up; variables already
in the environment win over the file.
"""

import os
import sys
from pathlib import Path


def load_env_file() -> None:
    from dotenv import load_dotenv

    default = Path(__file__).resolve().parent / ".env"
    load_dotenv(os.environ.get("FIXGRAPH_ENV_FILE") or default, override=False)


# What SQLite and PostgreSQL say when a table or column is missing: the database was never
# migrated, or not since the code last changed.
MISSING = ("no such table", "no such column", "does not exist")


def main() -> None:
    load_env_file()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line
    from django.db import OperationalError, ProgrammingError

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A setting is missing or wrong: one line that says which, not a traceback.
        sys.exit(f"FixGraph is not configured: {exc}")
    except (OperationalError, ProgrammingError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        if not any(words in first for words in MISSING):
            raise
        # A fresh checkout before `make run`, or a pull with a new migration: say what to
        # run, not a traceback.
        applied, behind = migration_state()
        if applied and behind:
            sys.exit(
                f"FixGraph's database is behind this code ({first}; {len(behind)} migration(s) "
                f"not applied, e.g. {behind[0]}). Run `.venv/bin/python manage.py migrate` "
                "(`make run` does it), then this command again."
            )
        sys.exit(
            f"FixGraph's database has no tables yet ({first}). Run `make run` once, or "
            "`.venv/bin/python manage.py migrate`, then this command again."
        )


def migration_state() -> tuple[int, list[str]]:
    """What /healthz reads too: (applied, pending); nothing known when it cannot be read."""
    from django.db import DatabaseError

    from kb.services.health import migration_state as read

    try:
        return read()
    except DatabaseError:
        return 0, []


if __name__ == "__main__":
    main()
