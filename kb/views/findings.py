"""A finding's page: the write-up, where it happened, how often it is met, its fixes with
what users said of them, runs and edit history; reviewers queue a validation run."""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from decisiontree.spelling import condition_in_words, spell_flag
from kb.models import Finding, Fix, Host, ValidationRun
from kb.roles import REVIEW_PERMISSION, VALIDATE_PERMISSION
from kb.services import changes, export, feedback, occurrences, runbook, sources, validation
from kb.services.history import finding_edits
from kb.views.review import LOGIN_URL

HISTORY_LIMIT = 50


def finding_detail(request: HttpRequest, pk: int) -> HttpResponse:
    finding = get_object_or_404(visible_findings(request), pk=pk)
    fixes = list(finding.fixes.all())
    runs = ValidationRun.objects.filter(fix__finding=finding).select_related("host", "fix")
    may_validate = request.user.has_perm(VALIDATE_PERMISSION)
    archs = validation.finding_archs(finding) if may_validate else set()
    framework, version = release_of(finding)
    reviewer = request.user.has_perm(REVIEW_PERMISSION)
    to_learn = feedback.pastes_to_learn(finding) if reviewer else []
    registered = list(Host.objects.order_by("name")) if may_validate else []
    refused = {fix.pk: validation.refusals(fix, registered) for fix in fixes} if registered else {}
    context = {
        "finding": finding,
        "fixes": [changes.fix_line(fix, framework, version) for fix in fixes],
        "feedback": occurrences.feedback_counts(fix.pk for fix in fixes),
        "occurrences": occurrences.of_finding(finding),
        "fingerprints": occurrences.fingerprints_of(finding),
        "write_up": write_up(finding),
        "excerpts": [sources.excerpt(doc, finding) for doc in finding.sources.all()],
        "gpus": finding.findinggpu_set.select_related("hardware"),
        "runs": runs,
        "history": finding_edits(finding, limit=HISTORY_LIMIT),
        # What the cause needs, and (derived ones) only where the finding was seen;
        # flags named as the finding's release writes them, as its fixes are.
        "conditions": conditions_in_words(finding, derived=False),
        "flags": [
            (setting, spell_flag(setting.name, framework, version))
            for setting in finding.flag_settings.all()
        ],
        "seen_with": conditions_in_words(finding, derived=True),
        "works": runbook.whole_works_command(finding),
        "hosts": registered,
        # Per fix: why a host would refuse its run (host id -> reason, "" where it runs).
        "refused": refused,
        "refusal_reasons": {
            pk: sorted({r for r in by_host.values() if r}) for pk, by_host in refused.items()
        },
        "matching": (
            validation.hosts_of(archs, validation.capability_needs(finding))
            if may_validate and fixes
            else []
        ),
        "archs": sorted(archs),
        "pastes_to_learn": to_learn,
        "lessons": {vote.pk: feedback.lesson_of(vote) for vote in to_learn},
    }
    return render(request, "kb/finding_detail.html", context)


def conditions_in_words(finding: Finding, *, derived: bool) -> list[tuple[dict[str, Any], str]]:
    framework, version = release_of(finding)
    return [
        (c, condition_in_words(c, framework, version))
        for c in finding.conditions or []
        if bool(c.get("derived")) is derived
    ]


def release_of(finding: Finding) -> tuple[str | None, str | None]:
    if finding.framework is None:
        return None, None
    return finding.framework.name, finding.framework.version or None


def visible_findings(request: HttpRequest) -> QuerySet[Finding]:
    findings = Finding.objects.select_related("model", "framework", "origin").prefetch_related(
        "flag_settings",
        "sources",
        "samples",
        Prefetch("fixes", queryset=Fix.objects.order_by("position", "id")),
    )
    # Drafts are unreviewed: only people who can review them see them.
    if request.user.has_perm(REVIEW_PERMISSION):
        return findings
    return findings.exclude(status=Finding.Status.DRAFT)


FENCED_BLOCK = re.compile(r"^[ ]{0,3}(```|~~~)[^\n]*\n(.*?)^[ ]{0,3}\1[ \t]*$", re.S | re.M)


def write_up(finding: Finding) -> str:
    """The body, less what the page already shows above and below it: a first paragraph
    that only repeats the summary, and code blocks that are the error samples."""
    samples = {words(sample.text) for sample in finding.samples.all()}
    body = FENCED_BLOCK.sub(
        lambda block: "" if words(block.group(2)) in samples else block.group(0), finding.body
    ).strip()
    first, *rest = re.split(r"\n\s*\n", body, maxsplit=1)
    if finding.summary and words(first) == words(finding.summary):
        return rest[0].strip() if rest else ""
    return body


def words(text: str) -> str:
    return " ".join(text.split()).lower()


@require_POST
@login_required(login_url="/accounts/login/")
@permission_required(VALIDATE_PERMISSION, raise_exception=True)
def validate_fix(request: HttpRequest, pk: int, fix_pk: int) -> HttpResponse:
    """Queue a run of the fix on the chosen registered host (kb.services.validation)."""
    fix = get_object_or_404(Fix.objects.select_related("finding"), pk=fix_pk, finding_id=pk)
    host_id = str(request.POST.get("host", ""))
    if host_id == MATCHING:
        return validate_on_matching(request, fix)
    host = Host.objects.filter(pk=int(host_id)).first() if host_id.isdigit() else None
    if host is None:
        messages.error(request, "Choose a registered host to validate on.")
    else:
        try:
            run = validation.start(fix, host, by=request.user)
        except validation.ValidationRefused as refused:
            messages.error(request, f"Not queued: {refused}")
        else:
            messages.success(request, f"Queued validation run {run.pk} of fix {fix.pk} on {host}.")
            return redirect("kb:run-detail", pk=run.pk)  # to follow it
    return redirect(f"/findings/{pk}/#fix-{fix.pk}")


MATCHING = "matching"  # the host choice that means every host of the finding's GPU


def validate_on_matching(request: HttpRequest, fix: Fix) -> HttpResponse:
    """Queue a run on every host whose GPU architecture the finding was seen on."""
    back = redirect(f"/findings/{fix.finding_id}/#fix-{fix.pk}")
    try:
        started = validation.start_on_matching(fix, by=request.user)
    except validation.ValidationRefused as refused:
        messages.error(request, f"Not queued: {refused}")
        return back
    runs = started.runs
    if not runs:
        messages.error(request, "No registered host has the finding's GPU architecture.")
        return back
    names = ", ".join(run.host.name for run in runs)
    queued = f"Queued {len(runs)} run{'s' if len(runs) > 1 else ''} of fix {fix.pk}, on {names}."
    messages.success(request, " ".join(filter(None, [queued, started.left_out()])))
    return redirect(f"{reverse('kb:run-list')}?status=live#runs")


@login_required(login_url=LOGIN_URL)
@permission_required(REVIEW_PERMISSION, raise_exception=True)
def findings_markdown(request: HttpRequest) -> HttpResponse:
    """The published knowledge base as FINDINGS.md (`manage.py export_findings`): for the
    team's repository, or to ingest into another FixGraph. Reviewers only: samples learned
    from use are users' pastes."""
    parts = export.export_parts()
    response = StreamingHttpResponse(parts, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="FINDINGS.md"'
    return response
