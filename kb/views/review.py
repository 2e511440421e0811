"""The review queue: draft findings from ingestion, checked against their source, published,
rejected or merged into the finding they repeat.

Behind login and the `kb.change_finding` permission. Every save goes through
the models, so django-simple-history records who changed what.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from kb.forms import FixOutcomeFormSet, MergeForm, RejectForm, ReviewFindingForm
from kb.models import Finding
from kb.roles import REVIEW_PERMISSION
from kb.services import review

LOGIN_URL = "/accounts/login/"


def reviewer_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    # Logged out: to the login page. Logged in without the permission: 403, not a login loop.
    guarded = permission_required(REVIEW_PERMISSION, raise_exception=True)(view)
    return login_required(guarded, login_url=LOGIN_URL)


@reviewer_only
def review_queue(request: HttpRequest) -> HttpResponse:
    # Who wrote a draft that no document holds (a paste, the API): its first history row.
    author = (
        Finding.history.model.objects.filter(id=OuterRef("pk"))
        .order_by("history_date", "history_id")
        .values("history_user__username")[:1]
    )
    drafts = list(
        Finding.objects.filter(status=Finding.Status.DRAFT)
        .select_related("origin", "model")
        .annotate(author=Subquery(author))
        .order_by("created_at", "id")
    )
    repeated = review.repeated_findings(drafts)
    rows = [(draft, repeated.get(draft.pk)) for draft in drafts]
    return render(request, "kb/review_queue.html", {"rows": rows})


@reviewer_only
def review_finding(request: HttpRequest, pk: int) -> HttpResponse:
    finding = get_object_or_404(Finding.objects.select_related("origin"), pk=pk)
    form = ReviewFindingForm(request.POST or None, instance=finding)
    fixes = FixOutcomeFormSet(request.POST or None, instance=finding)
    if request.method == "POST" and form.is_valid() and fixes.is_valid():
        publish = "publish" in request.POST
        try:
            save_review(form, fixes, publish=publish)
        except review.ReviewRefused as refused:
            messages.error(request, str(refused))
            return redirect("kb:review-finding", pk=finding.pk)
        if publish:
            messages.success(request, f"Published “{finding.title}”.")
            return redirect("kb:review-queue")
        messages.success(request, "Saved.")
        return redirect("kb:review-finding", pk=finding.pk)
    status = 400 if request.method == "POST" else 200
    context = {
        "finding": finding,
        "form": form,
        "fixes": fixes,
        "segments": review.source_segments(finding),
        "looks_like": review.repeated_findings([finding]).get(finding.pk),
        "reject_form": RejectForm(),
        "merge_form": MergeForm(),
    }
    return render(request, "kb/review_finding.html", context, status=status)


@transaction.atomic
def save_review(form: ReviewFindingForm, fixes: FixOutcomeFormSet, *, publish: bool) -> None:
    """The finding's fields, then its fixes: dropped, re-ordered, added, moved."""
    finding = form.save(commit=False)
    if publish:
        finding.status = Finding.Status.PUBLISHED
    finding.save()
    fixes.save(commit=False)
    for dropped in fixes.deleted_objects:
        dropped.delete()
    for position, fix_form in enumerate(fixes.ordered_forms):
        fix = fix_form.instance
        fix.finding, fix.position = finding, position
        fix.save()
        target = fix_form.cleaned_data.get("move_to")
        if target is not None:
            review.move_fix(fix, Finding.objects.get(pk=target))


@require_POST
@reviewer_only
def reject_finding(request: HttpRequest, pk: int) -> HttpResponse:
    finding = get_object_or_404(Finding, pk=pk)
    form = RejectForm(request.POST)
    try:
        if not form.is_valid():
            raise review.ReviewRefused(" ".join(form.errors.get("reason", [])))
        review.reject_draft(finding, form.cleaned_data["reason"])
    except review.ReviewRefused as refused:
        messages.error(request, f"Not rejected: {refused}")
        return redirect("kb:review-finding", pk=finding.pk)
    messages.success(request, f"Rejected “{finding.title}”.")
    return redirect("kb:review-queue")


@require_POST
@reviewer_only
def merge_finding(request: HttpRequest, pk: int) -> HttpResponse:
    draft = get_object_or_404(Finding, pk=pk)
    form = MergeForm(request.POST)
    try:
        if not form.is_valid():
            raise review.ReviewRefused(" ".join(form.errors.get("target", [])))
        target = review.merge_draft(draft, form.cleaned_data["target"])
    except review.ReviewRefused as refused:
        messages.error(request, f"Not merged: {refused}")
        return redirect("kb:review-finding", pk=draft.pk)
    messages.success(request, f"Merged “{draft.title}” into #{target.pk} “{target.title}”.")
    return redirect("kb:review-queue")
