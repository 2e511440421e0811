"""A launch command with a fix's flag changes applied, for the copy button.

The editing is `decisiontree.launch.apply_changes`: it reads the command with the
flag tables, so `--nsa-decode-backend` in the user's command is replaced by the
fix's setting instead of being doubled, and a removed boolean flag does not take
the model after it along.
"""

from __future__ import annotations

from typing import Any

from decisiontree.launch import apply_changes, writable
from decisiontree.records import ChangeAction
from decisiontree.server_settings import is_engine_call
from kb.services.diagnosis import change_of

EDITS = (ChangeAction.SET_FLAG, ChangeAction.REMOVE_FLAG, ChangeAction.SET_ENV)


def corrected_command(
    command: str,
    fix: dict[str, Any],
    framework: str | None = None,
    version: str | None = None,
) -> str | None:
    """`command` with the fix's flag and env changes applied; None if nothing applies."""
    changes = [change_of(raw) for raw in fix.get("changes", [])]
    edits = [c for c in changes if c.action in EDITS and writable(c, framework)]
    if not command.strip() or not edits or is_engine_call(command):
        return None  # nothing to write, or a script's `LLM(...)`: no command line to edit
    return apply_changes(command, edits, framework=framework, version=version)
