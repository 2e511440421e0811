"""The review queue: draft findings from ingestion, checked against their source, published.

Behind login and the `kb.change_finding` permission. Every save goes through
the models, so django-simple-history records who changed what.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from kb.forms import FixOutcomeFormSet, ReviewFindingForm
from kb.models import Finding

LOGIN_URL = "/accounts/login/"


def reviewer_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    # Logged out: to the login page. Logged in without the permission: 403, not a login loop.
    guarded = permission_required("kb.change_finding", raise_exception=True)(view)
    return login_required(guarded, login_url=LOGIN_URL)


@reviewer_only
def review_queue(request: HttpRequest) -> HttpResponse:
    drafts = (
        Finding.objects.filter(status=Finding.Status.DRAFT)
        .select_related("origin", "model")
        .order_by("created_at", "id")
    )
    return render(request, "kb/review_queue.html", {"drafts": drafts})


@reviewer_only
def review_finding(request: HttpRequest, pk: int) -> HttpResponse:
    finding = get_object_or_404(Finding.objects.select_related("origin"), pk=pk)
    form = ReviewFindingForm(request.POST or None, instance=finding)
    fixes = FixOutcomeFormSet(request.POST or None, instance=finding)
    if request.method == "POST" and form.is_valid() and fixes.is_valid():
        publish = "publish" in request.POST
        save_review(form, fixes, publish=publish)
        if publish:
            messages.success(request, f"Published “{finding.title}”.")
            return redirect("kb:review-queue")
        messages.success(request, "Saved.")
        return redirect("kb:review-finding", pk=finding.pk)
    status = 400 if request.method == "POST" else 200
    context = {"finding": finding, "form": form, "fixes": fixes}
    return render(request, "kb/review_finding.html", context, status=status)


@transaction.atomic
def save_review(form: ReviewFindingForm, fixes: FixOutcomeFormSet, *, publish: bool) -> None:
    finding = form.save(commit=False)
    if publish:
        finding.status = Finding.Status.PUBLISHED
    finding.save()
    fixes.save()
