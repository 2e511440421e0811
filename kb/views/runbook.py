"""The runbook page and its Markdown export: thin over kb.services.runbook."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone

from kb.services.runbook import runbook_entries


def runbook(request: HttpRequest) -> HttpResponse:
    if request.GET.get("format") == "md":
        return runbook_markdown(request)
    return render(request, "kb/runbook.html", {"entries": runbook_entries()})


def runbook_markdown(request: HttpRequest) -> HttpResponse:
    """The same runbook as a Markdown file, every link absolute (it is read elsewhere)."""
    context = {"entries": runbook_entries(), "site": settings.SITE_URL, "now": timezone.now()}
    text = render_to_string("kb/runbook.md", context, request=request)
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="fixgraph-runbook.md"'
    return response
