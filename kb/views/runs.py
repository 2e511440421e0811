"""Validation on the web: the GPU hosts with what they hold and the runs on them; a run's
page with what was launched where, how far it got, what it measured, why it ended and the
log, refreshed while the run is live. Behind login: hosts and logs are the team's own."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.contrib.auth.views import redirect_to_login
from django.db.models import OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from kb.filtersets import ValidationRunFilterSet
from kb.models import Host, ValidationRun
from kb.roles import VALIDATE_PERMISSION
from kb.services import health, validation
from kb.views.review import LOGIN_URL

POLL_SECONDS = 3

# Keys of ValidationRun.metrics worth a row, in the order a reader compares runs.
METRICS = (
    ("throughput_tok_s", "Output throughput", "tok/s"),
    ("total_throughput_tok_s", "Total throughput", "tok/s"),
    ("request_rate", "Requests", "req/s"),
    ("ttft_ms", "TTFT, mean", "ms"),
    ("median_ttft_ms", "TTFT, median", "ms"),
    ("p99_ttft_ms", "TTFT, p99", "ms"),
    ("itl_ms", "ITL, mean", "ms"),
    ("median_itl_ms", "ITL, median", "ms"),
    ("p99_itl_ms", "ITL, p99", "ms"),
    ("completed", "Requests completed", ""),
    ("failed", "Requests failed", ""),
    ("duration_s", "Load duration", "s"),
)


RUNS_SHOWN = 50
EARLIER_SHOWN = 5


def login_required_polled(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Login required, for a page that polls itself: a poll after the session ended sends
    the whole page to the login form (HX-Redirect), rather than swapping the login form
    into the part it polls."""

    @wraps(view)
    def guarded(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        if request.htmx:
            query = urlencode({"next": request.get_full_path()})
            return HttpResponseClientRedirect(f"{LOGIN_URL}?{query}")
        return redirect_to_login(request.get_full_path(), LOGIN_URL)

    return guarded


@login_required_polled
def run_list(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    last_run = ValidationRun.objects.filter(host=OuterRef("pk")).order_by("-created_at", "-pk")
    hosts = Host.objects.annotate(
        last_run_id=Subquery(last_run.values("pk")[:1]),
        last_status=Subquery(last_run.values("status")[:1]),
    )
    runs = ValidationRun.objects.select_related("fix__finding", "host", "created_by")
    chosen = ValidationRunFilterSet(request.GET, queryset=runs)
    # A value the page does not offer (an old link, a typo) shows every run.
    valid = chosen.is_valid()
    listed = list((chosen.qs if valid else runs)[:RUNS_SHOWN])
    workers = health.live_workers()
    context = {
        "workers": workers,
        "workers_silent": "" if workers else health.silent_workers(),
        "hosts": [(host, host.holder(now)) for host in hosts],
        "runs": listed,
        "live_listed": any(run.live for run in listed),
        "shown": RUNS_SHOWN,
        "status": chosen.form.cleaned_data.get("status", "") if valid else "",
        "statuses": chosen.filters["status"].extra["choices"],
        "poll_seconds": POLL_SECONDS,
    }
    return render(request, "kb/run_list.html", context)


@login_required_polled
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(
        ValidationRun.objects.select_related("fix__finding__framework", "host", "created_by"),
        pk=pk,
    )
    metrics = run.metrics or {}
    ended = run.finished_at or timezone.now()
    took = (ended - run.started_at).total_seconds() if run.started_at else None
    queue = validation.queue_for(run.host)
    context = {
        "run": run,
        "live": run.live,
        # A queued run nobody will take: say so, and which worker to start.
        "unheard_queue": queue
        if run.status == ValidationRun.Status.QUEUED and not health.queue_listened(queue)
        else "",
        "took": took,
        "framework": validation.framework_of(run.fix, run.recipe or {}),
        "poll_seconds": POLL_SECONDS,
        "measured": [
            (label, metrics[key], unit)
            for key, label, unit in METRICS
            if metrics.get(key) is not None
        ],
        "tool": metrics.get("tool", ""),
        "may_cancel": request.user.has_perm(VALIDATE_PERMISSION),
        # Did it get slower or start failing since? The same fix on the same host before.
        "earlier": ValidationRun.objects.filter(
            fix_id=run.fix_id, host_id=run.host_id, created_at__lt=run.created_at
        ).order_by("-created_at")[:EARLIER_SHOWN],
    }
    # htmx polls for the part that changes; the whole page otherwise.
    template = "kb/_run.html" if request.htmx else "kb/run_detail.html"
    return render(request, template, context)


@require_POST
@login_required(login_url=LOGIN_URL)
@permission_required(VALIDATE_PERMISSION, raise_exception=True)
def run_again(request: HttpRequest, pk: int) -> HttpResponse:
    """The same fix on the same host with the same recipe, after the host or the
    framework changed (a benchmark imported by hand is run for real this time)."""
    past = get_object_or_404(ValidationRun.objects.select_related("fix", "host"), pk=pk)
    recipe = {key: value for key, value in (past.recipe or {}).items() if key != "imported"}
    try:
        run = validation.start(past.fix, past.host, by=request.user, recipe=recipe)
    except validation.ValidationRefused as refused:
        messages.error(request, f"Not queued: {refused}")
        return redirect("kb:run-detail", pk=past.pk)
    messages.success(request, f"Queued run {run.pk}: run {past.pk} again on {past.host}.")
    return redirect("kb:run-detail", pk=run.pk)


@require_POST
@login_required(login_url=LOGIN_URL)
@permission_required(VALIDATE_PERMISSION, raise_exception=True)
def cancel_run(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(ValidationRun, pk=pk)
    if validation.cancel(run.pk):
        messages.success(
            request,
            f"Run {run.pk} cancelled: a server it started stops at the worker's next check.",
        )
    else:
        run.refresh_from_db()
        messages.error(request, f"Run {run.pk} had already ended ({run.get_status_display()}).")
    return redirect("kb:run-detail", pk=run.pk)
