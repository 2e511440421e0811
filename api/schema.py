"""How the OpenAPI schema describes FixGraph: the token header, Slack's signature, and
every error answer in the one error shape (api.errors)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers

ERROR_MEDIA_TYPES = ["application/json"]
BODY_METHODS = ("POST", "PUT", "PATCH")


class TokenScheme(OpenApiAuthenticationExtension):  # type: ignore[misc]
    target_class = "api.auth.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <token>`; issue one with `manage.py issue_token USERNAME`.",
        }


class SlackSignatureScheme(OpenApiAuthenticationExtension):  # type: ignore[misc]
    target_class = "api.slack.SlackSignatureAuthentication"
    name = "slackSignature"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "X-Slack-Signature",
            "description": "Slack's v0 signature: HMAC-SHA256 of `v0:<X-Slack-Request-Timestamp>"
            ":<body>` under SLACK_SIGNING_SECRET (docs/slack.md).",
        }


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable, for programs: invalid, not_found, throttled…")
    message = serializers.CharField(help_text="One line a person can read")
    fields = serializers.DictField(
        child=serializers.JSONField(),
        help_text="Per request field, what is wrong with it (400 only; else empty)",
    )


class ErrorSerializer(serializers.Serializer):
    """Every failure a client can see has this shape."""

    error = ErrorDetailSerializer()


def error_example(code: str, message: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


ERRORS: dict[int, tuple[str, dict[str, Any]]] = {
    400: (
        "The request is malformed: `fields` names each wrong field.",
        error_example(
            "invalid",
            "traceback: This field is required.",
            {"traceback": ["This field is required."]},
        ),
    ),
    401: (
        "No credentials, or a token that is unknown, revoked or expired.",
        error_example("not_authenticated", "Send an API token: `Authorization: Token <token>`."),
    ),
    403: (
        "The token lacks the scope this request needs.",
        error_example("permission_denied", "This API token lacks the `write` scope."),
    ),
    404: ("No such object.", error_example("not_found", "Not found.")),
    413: (
        "The body (or the pasted traceback) is larger than the server accepts.",
        error_example("payload_too_large", "The traceback is over 2,000,000 bytes; paste less."),
    ),
    415: (
        "The body is not JSON (or, for Slack, not a form).",
        error_example("unsupported_media_type", 'Unsupported media type "text/plain" in request.'),
    ),
    429: (
        "Too many requests for this token; wait `Retry-After` seconds.",
        error_example("throttled", "Request was throttled. Expected available in 12 seconds."),
    ),
}
RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before the next request",
        "schema": {"type": "integer"},
    }
}


class FixGraphAutoSchema(AutoSchema):  # type: ignore[misc]
    """Adds the error answers an operation can give, each in the one error shape."""

    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        operation: dict[str, Any] | None = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        responses = operation["responses"]
        for status in self.error_statuses(operation):
            responses.setdefault(str(status), self.error_response(status))
        return operation

    def error_statuses(self, operation: dict[str, Any]) -> list[int]:
        statuses = [401]
        if self.view.permission_classes:
            statuses.append(403)
        has_body = "requestBody" in operation
        params = operation.get("parameters", [])
        if has_body or any(p.get("in") == "query" for p in params):
            statuses.append(400)
        if any(p.get("in") == "path" for p in params):
            statuses.append(404)
        if has_body:
            statuses += [413, 415]
        if self.view.get_throttles():
            statuses.append(429)
        return statuses

    def error_response(self, status: int) -> dict[str, Any]:
        description, example = ERRORS[status]
        response = OpenApiResponse(
            ErrorSerializer,
            description=description,
            examples=[OpenApiExample(example["error"]["code"], value=example)],
        )
        # An error is rendered by whichever renderer was asked for: the same Error shape.
        media_types = self.map_renderers("media_type") or ERROR_MEDIA_TYPES
        body: dict[str, Any] = self._get_response_for_code(response, str(status), media_types)
        if status == 429:
            body["headers"] = RETRY_AFTER
        return body
