"""“Fixed it” / “Did not help” on a suggested fix, its undo, “what worked instead?”, and a
reviewer adding a paste that a fix fixed to the finding's samples.

A vote needs a login (kb.services.feedback counts one per person, fix and paste); the
same service takes the API's and Slack's votes.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from kb.forms import FeedbackForm, WorkedInsteadForm
from kb.models import Finding, Fix, FixFeedback
from kb.roles import REVIEW_PERMISSION
from kb.services import feedback, stored_diagnoses


def fragment(request: HttpRequest, context: dict[str, Any], status: int = 200) -> HttpResponse:
    template = "kb/_feedback.html" if getattr(request, "htmx", False) else "kb/feedback.html"
    return render(request, template, context, status=status)


def voter_or_none(request: HttpRequest) -> feedback.Voter | None:
    try:
        return feedback.Voter.for_user(request.user)
    except feedback.NoVoter:
        return None


@require_POST
def fix_feedback(request: HttpRequest) -> HttpResponse:
    """A vote on a fix of a diagnosis: CSRF-protected, one per person, fix and paste."""
    form = FeedbackForm(request.POST)
    if not form.is_valid():
        return fragment(request, {"error": "the fix no longer exists"}, status=400)
    voter = voter_or_none(request)
    if voter is None:
        return fragment(request, {"login_needed": True}, status=403)
    data = form.cleaned_data
    vote, created = feedback.vote(
        data["fix_id"],
        voter,
        helped=data["helped"],
        diagnosis=stored_diagnoses.stored(data["diagnosis"]),
        fingerprint=data["fingerprint"],
        channel="web",
    )
    return fragment(request, vote_context(vote, replaced=not created))


def vote_context(vote: FixFeedback, *, replaced: bool = False) -> dict[str, Any]:
    others = Fix.objects.filter(finding_id=vote.fix.finding_id).exclude(pk=vote.fix_id)
    return {
        "vote": vote,
        "fix": vote.fix,
        "helped": vote.helped,
        "replaced": replaced,
        "instead_form": None if vote.helped else WorkedInsteadForm(),
        "other_fixes": others.order_by("position", "id"),
    }


@require_POST
def feedback_undo(request: HttpRequest, pk: int) -> HttpResponse:
    voter = voter_or_none(request)
    if voter is None:
        return fragment(request, {"login_needed": True}, status=403)
    vote = FixFeedback.objects.filter(pk=pk, voter=voter.key).select_related("fix").first()
    if vote is None or not feedback.undo(pk, voter):
        return fragment(
            request, {"error": "that vote is not yours, or was already taken back"}, 404
        )
    return fragment(request, {"undone": True, "fix": vote.fix})


@require_POST
def feedback_worked_instead(request: HttpRequest, pk: int) -> HttpResponse:
    voter = voter_or_none(request)
    if voter is None:
        return fragment(request, {"login_needed": True}, status=403)
    form = WorkedInsteadForm(request.POST)
    if not form.is_valid():
        return fragment(request, {"error": "that fix no longer exists"}, status=400)
    vote = feedback.tell_worked_instead(
        pk,
        voter,
        fix=form.cleaned_data["worked_instead_fix"],
        text=form.cleaned_data["worked_instead_text"],
    )
    if vote is None:
        return fragment(request, {"error": "that vote is not yours, or was taken back"}, 404)
    return fragment(request, {**vote_context(vote), "instead_told": True, "instead_form": None})


@require_POST
@permission_required(REVIEW_PERMISSION, raise_exception=True)
def learn_paste(request: HttpRequest, pk: int, vote_pk: int) -> HttpResponse:
    """A reviewer adds a paste that a fix fixed to the finding's samples, in one click."""
    finding = get_object_or_404(Finding, pk=pk)
    sample = feedback.learn_paste(vote_pk, finding, by=request.user)  # type: ignore[arg-type]
    if sample is None:
        messages.error(request, "That paste is already a sample, or its vote was taken back.")
    else:
        messages.success(
            request, "Added the paste to the samples: reports like it now match this finding."
        )
    return redirect(reverse("kb:finding-detail", args=[finding.pk]) + "#pastes-to-learn")
