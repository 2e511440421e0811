"""A database that cannot be reached is a 503 with Retry-After, not a 500 "bug" page:
the request was fine and the same request will work once the database is back. And
/healthz, answered before anything else looks at the request."""

from __future__ import annotations

from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

RETRY_AFTER_S = 30
MESSAGE = "The database is unavailable right now; try again in a minute."


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """The answer to a request that met an unreachable database: JSON under /api/."""
    if request.path.startswith("/api/"):
        body = {"error": {"code": "database_unavailable", "message": MESSAGE, "fields": {}}}
        response: HttpResponse = JsonResponse(body, status=503)
    else:
        page = f"<!doctype html><title>FixGraph</title><h1>Try again soon</h1><p>{MESSAGE}</p>"
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


class DatabaseUnavailableMiddleware:
    """Answers 503 when a page's view fails on an unreachable database (the API's
    exception handler does the same for API views)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, OperationalError | InterfaceError):
            return database_unavailable(request)
        return None


HEALTH_PATH = "/healthz"


class HealthCheckMiddleware:
    """Answers /healthz itself, first in the chain. A probe sends the server's own address
    as its Host (not in ALLOWED_HOSTS) over plain HTTP (redirected under HTTPS): either
    would fail a healthy server. The answer carries no URL, so the host is not needed."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path == HEALTH_PATH:
            from kb.views.health import healthz

            return healthz(request)
        return self.get_response(request)
