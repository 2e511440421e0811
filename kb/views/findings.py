"""A finding's page: the write-up, where it happened, its fixes, runs and edit history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from kb.models import Finding, Fix, ValidationRun

HISTORY_LIMIT = 50


@dataclass(frozen=True)
class Edit:
    date: datetime
    user: str
    kind: str
    changed: tuple[str, ...]


def finding_detail(request: HttpRequest, pk: int) -> HttpResponse:
    finding = get_object_or_404(visible_findings(request), pk=pk)
    runs = ValidationRun.objects.filter(fix__finding=finding).select_related("host", "fix")
    context = {
        "finding": finding,
        "gpus": finding.findinggpu_set.select_related("hardware"),
        "runs": runs,
        "history": edits_of(finding),
        "conditions": finding.conditions or [],
    }
    return render(request, "kb/finding_detail.html", context)


def visible_findings(request: HttpRequest) -> QuerySet[Finding]:
    findings = Finding.objects.select_related("model", "framework", "origin").prefetch_related(
        "flag_settings",
        "sources",
        "samples",
        Prefetch("fixes", queryset=Fix.objects.order_by("position", "id")),
    )
    # Drafts are unreviewed: only people who can review them see them.
    if request.user.has_perm("kb.change_finding"):
        return findings
    return findings.exclude(status=Finding.Status.DRAFT)


def edits_of(finding: Finding) -> list[Edit]:
    versions = list(
        finding.history.select_related("history_user").order_by("-history_id")[:HISTORY_LIMIT]
    )
    older = [*versions[1:], None]
    return [edit(version, previous) for version, previous in zip(versions, older, strict=True)]


def edit(version: Any, previous: Any) -> Edit:
    changed = (
        tuple(change.field for change in version.diff_against(previous).changes)
        if previous is not None
        else ()
    )
    user = version.history_user
    return Edit(
        date=version.history_date,
        user=user.get_username() if user else "ingestion",
        kind={"+": "created", "~": "changed", "-": "deleted"}[version.history_type],
        changed=changed,
    )
