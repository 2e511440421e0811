from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from api.models import ApiToken, Webhook, WebhookDelivery


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = [
        "prefix",
        "name",
        "user",
        "scopes",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
    ]
    list_filter = ["revoked_at"]
    search_fields = ["prefix", "name", "user__username"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    fields = ["user", "name", "scopes", "expires_at", "revoked_at", *readonly_fields]
    actions = ["revoke"]

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        # A new token: generate it, and show it once; only its digest is stored.
        token, raw = ApiToken.issue(
            obj.user, list(obj.scopes or []), name=obj.name, expires_at=obj.expires_at
        )
        obj.pk, obj.prefix, obj.digest = token.pk, token.prefix, token.digest
        # Shown on the next page only: a message would carry it in the messages cookie.
        request._issued_token = raw  # type: ignore[attr-defined]

    def response_add(
        self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None
    ) -> HttpResponse:
        raw = getattr(request, "_issued_token", None)
        if raw is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "title": "Copy the new token",
            "opts": self.model._meta,
            "token": obj,
            "raw": raw,
        }
        response = TemplateResponse(request, "admin/api/apitoken/issued.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        messages.info(request, f"Revoked {count} token(s).")


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["name", "url", "events", "active", "created_at"]
    list_filter = ["active"]


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["event", "webhook", "status", "attempts", "response_code", "created_at"]
    list_filter = ["status", "event"]
    readonly_fields = ["payload", "attempts", "response_code", "last_error", "delivered_at"]
