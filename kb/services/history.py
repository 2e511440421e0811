"""Who changed a finding, when, and which fields: read from its django-simple-history rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kb.models import Finding

KINDS = {"+": "created", "~": "changed", "-": "deleted"}


@dataclass(frozen=True)
class Edit:
    history_id: int
    date: datetime
    user: str | None  # None: no logged-in user (ingestion, a command)
    kind: str  # created | changed | deleted
    title: str
    status: str
    changed: tuple[str, ...]


def finding_edits(finding: Finding, limit: int | None = None) -> list[Edit]:
    """The finding's versions, newest first, each with the fields it changed."""
    history = finding.history.select_related("history_user").order_by("-history_id")
    versions = list(history[:limit] if limit else history)
    # The oldest shown version is compared with the one before it, when there is one.
    older = [*versions[1:], None]
    return [edit_of(version, previous) for version, previous in zip(versions, older, strict=True)]


def edit_of(version: Any, previous: Any) -> Edit:
    changed = (
        tuple(change.field for change in version.diff_against(previous).changes)
        if previous is not None
        else ()
    )
    user = version.history_user
    return Edit(
        history_id=version.history_id,
        date=version.history_date,
        user=user.get_username() if user else None,
        kind=KINDS[version.history_type],
        title=version.title,
        status=version.status,
        changed=changed,
    )
