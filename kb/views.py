"""Page views. Thin: they call kb.services and render."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from kb.models import Finding


def finding_list(request: HttpRequest) -> HttpResponse:
    findings = (
        Finding.objects.filter(status=Finding.Status.PUBLISHED)
        .select_related("model", "framework")
        .prefetch_related("gpus")
        .order_by("title")
    )
    return render(request, "kb/finding_list.html", {"findings": findings})
