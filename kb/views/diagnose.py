"""Paste a traceback: ranked fixes, what is known not to help, follow-up questions.

The page renders `DiagnosisSerializer`'s data, the same object the REST API returns,
so the two never disagree. The form posts back to itself; a follow-up answer
re-posts the paste with the answer added (htmx swaps just the result).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from api.serializers import DiagnosisSerializer
from decisiontree.traceback import InputRejected
from kb.forms import DiagnoseForm, FeedbackForm, answers_from, paste_too_large_message
from kb.services.diagnosis import diagnose, record_feedback

BODY_SLACK_BYTES = 100_000  # room for the launch command and form fields beside the paste


# A diagnosis changes nothing, so it needs no CSRF token; that also lets the
# view refuse an oversized body before anything reads it.
@csrf_exempt
@require_http_methods(["GET", "POST"])
def diagnose_page(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return page(request, DiagnoseForm())
    if body_too_large(request):
        return page(request, DiagnoseForm(), error=paste_too_large_message(), status=413)
    try:
        form = DiagnoseForm(request.POST)
    except RequestDataTooBig:
        return page(request, DiagnoseForm(), error=paste_too_large_message(), status=413)
    if not form.is_valid():
        message = " ".join(str(e) for errors in form.errors.values() for e in errors)
        status = 413 if paste_too_large_message() in message else 400
        return page(request, form, error=message, status=status)
    return diagnosed(request, form)


def body_too_large(request: HttpRequest) -> bool:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return False
    return length > settings.FIXGRAPH_MAX_PASTE_BYTES + BODY_SLACK_BYTES


def diagnosed(request: HttpRequest, form: DiagnoseForm) -> HttpResponse:
    data = form.cleaned_data
    answers = answers_from(request.POST)
    try:
        result = diagnose(
            data["text"],
            launch_command=data["launch_command"] or None,
            gpu=data["gpu"] or None,
            answers=answers,
        )
    except InputRejected as rejected:
        return page(request, form, error=str(rejected), status=400)
    except KeyError:  # an answer about a key the context does not know: forged input
        return page(request, form, error="That answer is not one FixGraph asked for.", status=400)
    context = {"launch_command": data["launch_command"]}
    diagnosis = DiagnosisSerializer(result, context=context).data  # the API's answer
    return page(request, form, diagnosis=diagnosis, answers=answers)


def page(
    request: HttpRequest,
    form: DiagnoseForm,
    *,
    diagnosis: dict[str, Any] | None = None,
    answers: dict[str, str] | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    context = {"form": form, "diagnosis": diagnosis, "answers": answers or {}, "error": error}
    is_htmx = bool(getattr(request, "htmx", False))
    template = "kb/_diagnosis.html" if is_htmx and request.method == "POST" else "kb/diagnose.html"
    # htmx only swaps 2xx responses by default; an error fragment must still show.
    return render(request, template, context, status=200 if is_htmx else status)


@require_POST
def fix_feedback(request: HttpRequest) -> HttpResponse:
    """“Fixed it” / “did not help” on a suggested fix: CSRF-protected, becomes evidence."""
    form = FeedbackForm(request.POST)
    if not form.is_valid():
        return render(request, "kb/_feedback.html", {"error": True}, status=400)
    record_feedback(
        form.cleaned_data["fix"],
        helped=form.cleaned_data["helped"],
        fingerprint=form.cleaned_data["fingerprint"],
        channel="web",
        user=request.user,
    )
    context = {"helped": form.cleaned_data["helped"], "fix": form.cleaned_data["fix"]}
    template = "kb/_feedback.html" if getattr(request, "htmx", False) else "kb/feedback.html"
    return render(request, template, context)
