"""`/healthz`: for load balancers, uptime checks and whoever is on call. Served by
kb.middleware.HealthCheckMiddleware, ahead of the host check."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from kb.services import health


@require_safe
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """200 while the site can answer ("ok", or "degraded" when only what runs in the
    background is missing); 503 when it cannot. Each check says what it found."""
    found = health.report()
    return JsonResponse(found.as_json(), status=503 if found.status == "failing" else 200)
