"""Paste a traceback: ranked fixes, what is known not to help, follow-up questions.

Every diagnosis is stored (kb.services.stored_diagnoses) and gets its own page,
/diagnose/<slug>/, which renders the stored answer: the same object the REST API
returns, so the two never disagree. The form posts, then the browser is sent to
that page (Post/Redirect/Get), so the address bar holds a link to paste into a chat
thread. Answering a follow-up question is a new diagnosis that refines the first.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from decisiontree.traceback import InputRejected
from kb.clients import shared_slot, wait_before_next
from kb.forms import DiagnoseForm, answers_from, paste_too_large_message
from kb.models import StoredDiagnosis
from kb.roles import REVIEW_PERMISSION
from kb.services import occurrences, stored_diagnoses
from kb.services.diagnosis import start_finding_from_paste
from kb.services.uploads import (
    BODY_SLACK_BYTES,
    declared_length,
    log_body_too_large,
    log_too_large_message,
)

ANSWER_ANCHOR = "#diagnosis"
BUSY_MESSAGE = (
    "FixGraph is busy with other diagnoses; try again in a few seconds, or log in "
    "(bots: use the API with a token)."
)  # the verdict, with the first fix under it


# Exempt here so an oversized body is refused before anything reads it; the CSRF
# check runs right after, in `diagnose_checked`.
@csrf_exempt
@require_http_methods(["GET", "POST"])
def diagnose_page(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return page(request, blank_form(request))
    wait = wait_before_next(request, "web-diagnose", settings.FIXGRAPH_WEB_DIAGNOSE_RATE)
    if wait is not None:  # before the body is read: an abuser's 2 MB costs nothing
        response = page(request, blank_form(request), error=too_many_message(wait), status=429)
        response["Retry-After"] = str(max(1, round(wait)))
        return response
    too_large = body_too_large(request)
    if too_large:
        return page(request, blank_form(request), error=too_large, status=413)
    if request.user.is_authenticated:
        return diagnose_checked(request)
    # Anonymous diagnoses share a few places site-wide, taken before the body is read: a
    # worst-case paste costs seconds of CPU, and many clients must not be able to take
    # every web worker at once (logged-in users and API tokens keep theirs).
    with shared_slot("web-diagnose", settings.FIXGRAPH_WEB_DIAGNOSE_CONCURRENCY) as got:
        if got:
            return diagnose_checked(request)
    response = page(request, blank_form(request), error=BUSY_MESSAGE, status=503)
    response["Retry-After"] = "5"
    return response


@csrf_protect
def diagnose_checked(request: HttpRequest) -> HttpResponse:
    try:
        form = DiagnoseForm(request.POST, request.FILES, allow_log=may_attach_log(request))
    except RequestDataTooBig:
        return page(request, blank_form(request), error=paste_too_large_message(), status=413)
    if not form.is_valid():
        message = " ".join(str(e) for errors in form.errors.values() for e in errors)
        too_large = (paste_too_large_message(), log_too_large_message())
        status = 413 if any(said in message for said in too_large) else 400
        return page(request, form, error=message, status=status)
    return diagnosed(request, form)


def may_attach_log(request: HttpRequest) -> bool:
    """A whole log is a large upload: signed-in users only (bots: the API, with a token)."""
    return bool(request.user.is_authenticated)


def blank_form(request: HttpRequest) -> DiagnoseForm:
    return DiagnoseForm(allow_log=may_attach_log(request))


def too_many_message(wait: float) -> str:
    return (
        f"Too many diagnoses from you in a short time; try again in {max(1, round(wait))} s. "
        "Bots and scripts: use the API with a token."
    )


def body_too_large(request: HttpRequest) -> str:
    """Why the body is refused unread ("" when it is not): larger than any paste within the
    limit could make it (a form sends a paste URL-encoded, up to 3 bytes for each byte
    pasted; the form then counts real bytes), or than a log a signed-in user may attach."""
    if may_attach_log(request) and request.content_type == "multipart/form-data":
        return log_too_large_message() if log_body_too_large(request.META) else ""
    limit = settings.FIXGRAPH_MAX_PASTE_BYTES * 3 + BODY_SLACK_BYTES
    return paste_too_large_message() if declared_length(request.META) > limit else ""


def diagnosed(request: HttpRequest, form: DiagnoseForm) -> HttpResponse:
    data = form.cleaned_data
    try:
        record = stored_diagnoses.diagnose_and_store(
            data["text"],
            launch_command=data["launch_command"],
            gpu=data["gpu"],
            framework=data.get("framework", ""),
            framework_version=data.get("framework_version", ""),
            answers=answers_from(request.POST),
            refines=stored_diagnoses.stored(str(request.POST.get("refines", ""))),
            channel=StoredDiagnosis.Channel.WEB,
            user=request.user,
            read_from=data["read_from"],
        )
    except InputRejected as rejected:
        return page(request, form, error=str(rejected), status=400)
    except KeyError:  # an answer about a key the context does not know: forged input
        return page(request, form, error="That answer is not one FixGraph asked for.", status=400)
    return to_answer(request, record)


def to_answer(request: HttpRequest, record: StoredDiagnosis) -> HttpResponse:
    url = record.get_absolute_url() + ANSWER_ANCHOR
    if getattr(request, "htmx", False):
        # htmx (a question answered in place) follows this header with a full page load.
        response = HttpResponse()
        response["HX-Redirect"] = url
        return response
    return HttpResponseRedirect(url, status=303)


def page(
    request: HttpRequest,
    form: DiagnoseForm,
    *,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    context = {"form": form, "diagnosis": None, "answers": {}, "error": error}
    is_htmx = bool(getattr(request, "htmx", False))
    template = "kb/_diagnosis.html" if is_htmx and request.method == "POST" else "kb/diagnose.html"
    # htmx only swaps 2xx responses by default; an error fragment must still show.
    return render(request, template, context, status=200 if is_htmx else status)


@require_GET
def diagnosis_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A stored diagnosis: the answer first, then the paste, ready to edit and run again."""
    record = stored_diagnoses.stored(slug)
    if record is None:
        raise Http404("No diagnosis has this link. It may have been deleted.")
    release = f"{record.framework} {record.framework_version}".strip()
    form = DiagnoseForm(
        {
            "text": record.text,
            "launch_command": record.launch_command,
            "gpu": record.gpu,
            "release": release,
        },
        allow_log=may_attach_log(request),
    )
    form.is_valid()  # for cleaned_data: the follow-up question forms re-post it
    form.fields["text"].widget.attrs.pop("autofocus", None)  # the answer is what to read
    context: dict[str, Any] = {
        "record": record,
        "form": form,
        "diagnosis": record.answer,
        "answers": record.answers,
        "may_delete": stored_diagnoses.may_delete(record, request.user),
        "drafts": stored_diagnoses.drafts_waiting(record) if record.match == "none" else [],
        "seen": occurrences.of_fingerprint(record.fingerprint) if record.fingerprint else None,
        "pasted": stored_diagnoses.error_as_pasted(record),
        "feedback": occurrences.feedback_counts(stored_diagnoses.fix_ids(record)),
    }
    response = render(request, "kb/diagnosis_detail.html", context)
    # A paste can hold host names and paths: keep it out of shared caches and indexes.
    response["Cache-Control"] = "private, no-store"
    response["X-Robots-Tag"] = "noindex, nofollow"
    return response


@require_POST
def diagnosis_delete(request: HttpRequest, slug: str) -> HttpResponse:
    record = stored_diagnoses.stored(slug)
    if record is None:
        raise Http404("No diagnosis has this link.")
    if not stored_diagnoses.may_delete(record, request.user):
        raise PermissionDenied("Only who asked, or an admin, can delete a diagnosis.")
    stored_diagnoses.delete(record)
    messages.success(request, "Deleted the diagnosis and its paste.")
    return redirect("kb:diagnose")


@login_required(login_url="/accounts/login/")
@require_POST
def start_finding(request: HttpRequest) -> HttpResponse:
    """“Start a finding from this paste”: a draft in the review queue, by a signed-in user,
    from a stored diagnosis (its paste, launch command and GPU; the draft links it)."""
    record = stored_diagnoses.stored(str(request.POST.get("diagnosis", "")))
    if record is None:
        raise Http404("No diagnosis has this link. It may have been deleted.")
    try:
        finding = start_finding_from_paste(
            record.text,
            user=request.user,
            given=stored_diagnoses.given_with(record),
            started_from=record,
        )
    except InputRejected as rejected:
        messages.error(request, str(rejected))
        return redirect(record.get_absolute_url())
    if request.user.has_perm(REVIEW_PERMISSION):
        return redirect("kb:review-finding", pk=finding.pk)
    messages.success(request, f"Draft #{finding.pk} waits in the review queue.")
    return redirect(record.get_absolute_url())
