"""One error shape for every failure a bot can see:
`{"error": {"code": "...", "message": "...", "fields": {...}}}`."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from decisiontree.logfile import size
from kb.services.uploads import send_log_instead

log = logging.getLogger(__name__)
RETRY_AFTER_S = 30


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request is too large."
    default_code = "payload_too_large"


class InputRefused(exceptions.APIException):
    """The pasted text cannot be diagnosed (empty, binary, malformed)."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "input_rejected"


class DatabaseUnavailable(exceptions.APIException):
    """PostgreSQL cannot be reached: the same request will work once it is back."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The database is unavailable right now; try again in a minute."
    default_code = "database_unavailable"


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


def error_body(code: str, message: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        message = f"The request body is over {size(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)}"
        # A log pasted whole into JSON: an endpoint that takes a log file says so.
        takes_log = getattr(context.get("view"), "takes_log_file", False)
        exc = PayloadTooLarge(f"{message}; {send_log_instead() if takes_log else 'send less.'}")
    if isinstance(exc, OperationalError | InterfaceError):
        log.warning("database unavailable: %s", exc)
        exc = DatabaseUnavailable()
    response = exception_handler(exc, context)
    if isinstance(exc, DatabaseUnavailable) and response is not None:
        response["Retry-After"] = str(RETRY_AFTER_S)
    if response is None:
        # A bug: log it with its traceback, answer in the same shape as everything else.
        log.exception("Unhandled error in %s", context.get("view"), exc_info=exc)
        return Response(
            error_body("server_error", "The server failed on this request; it was logged."),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    response.data = shaped(exc, response.data)
    return response


def shaped(exc: Exception, data: Any) -> dict[str, Any]:
    if isinstance(exc, exceptions.ValidationError):
        fields = data if isinstance(data, dict) else {"non_field_errors": data}
        return error_body("invalid", first_message(fields), fields)
    if isinstance(exc, Http404):
        return error_body("not_found", "Not found.")
    if isinstance(exc, PermissionDenied):
        return error_body("permission_denied", "You may not do this.")
    code = exc.get_codes() if isinstance(exc, exceptions.APIException) else "error"
    message = data.get("detail", str(exc)) if isinstance(data, dict) else str(exc)
    return error_body(code if isinstance(code, str) else "error", str(message))


def first_message(fields: dict[str, Any]) -> str:
    """`traceback: This field is required.` — one line a bot can post."""
    for name, problems in fields.items():
        problem = problems[0] if isinstance(problems, list) and problems else problems
        if isinstance(problem, dict):
            return first_message(problem)
        label = "" if name == "non_field_errors" else f"{name}: "
        return f"{label}{problem}"
    return "The request is invalid."


@csrf_exempt  # a 404 for every method, never Django's CSRF page
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Unknown paths under /api/v1/ answer in JSON, not the HTML 404 page; a path that
    lacks only its final slash is named as it is written."""
    message = f"No API endpoint at {request.path}."
    if not request.path.endswith("/"):
        with_slash = f"{request.path}/"
        try:
            found = resolve(with_slash)
        except Resolver404:
            found = None
        if found is not None and found.func is not not_found:
            message += f" Did you mean {with_slash}? Every endpoint ends in a slash."
    return JsonResponse(error_body("not_found", message), status=404)
