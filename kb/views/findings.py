"""A finding's page: the write-up, where it happened, its fixes, runs and edit history."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from kb.models import Finding, Fix, ValidationRun
from kb.services.history import finding_edits

HISTORY_LIMIT = 50


def finding_detail(request: HttpRequest, pk: int) -> HttpResponse:
    finding = get_object_or_404(visible_findings(request), pk=pk)
    runs = ValidationRun.objects.filter(fix__finding=finding).select_related("host", "fix")
    context = {
        "finding": finding,
        "gpus": finding.findinggpu_set.select_related("hardware"),
        "runs": runs,
        "history": finding_edits(finding, limit=HISTORY_LIMIT),
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
