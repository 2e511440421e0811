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


def main() -> None:
    load_env_file()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A setting is missing or wrong: one line that says which, not a traceback.
        sys.exit(f"FixGraph is not configured: {exc}")


if __name__ == "__main__":
    main()
