"""Check a launch: before it runs, the known issues its setup meets.

The page renders the same object the REST API returns (POST /api/v1/check-launch/), so
the two never disagree. Nothing is stored: a launch command is not an incident.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from api.serializers import LaunchCheckSerializer
from kb.clients import wait_before_next
from kb.forms import LaunchCheckForm
from kb.services.diagnosis import check_launch


@require_http_methods(["GET", "POST"])
def launch_check_page(request: HttpRequest) -> HttpResponse:
    """A GET with `launch_command` (and `gpu`, `release`) checks too: the link a chat
    answer or the API gives opens the same check (nothing is stored, so GET is safe)."""
    data = request.POST if request.method == "POST" else request.GET
    if request.method == "GET" and "launch_command" not in data:
        return render(request, "kb/launch_check.html", {"form": LaunchCheckForm(), "check": None})
    form = LaunchCheckForm(data)
    # The diagnose form's budget: both walk the knowledge base for a client.
    wait = wait_before_next(request, "web-diagnose", settings.FIXGRAPH_WEB_DIAGNOSE_RATE)
    if wait is not None:
        error = f"Too many requests from you in a short time; try again in {max(1, round(wait))} s."
        response = render(
            request,
            "kb/launch_check.html",
            {"form": form, "check": None, "error": error},
            status=429,
        )
        response["Retry-After"] = str(max(1, round(wait)))
        return response
    if not form.is_valid():
        error = " ".join(str(e) for errors in form.errors.values() for e in errors)
        context = {"form": form, "check": None, "error": error}
        return render(request, "kb/launch_check.html", context, status=400)
    data = form.cleaned_data
    check = check_launch(
        data["launch_command"],
        gpu=data["gpu"] or None,
        framework=data.get("framework") or None,
        framework_version=data.get("framework_version") or None,
    )
    answer = LaunchCheckSerializer(check, context={"launch_command": data["launch_command"]}).data
    return render(request, "kb/launch_check.html", {"form": form, "check": answer})
