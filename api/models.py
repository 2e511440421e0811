"""API tokens (stored as hashes only) and the replies remembered for idempotent POSTs."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "fxg_"  # noqa: S105 - a marker that makes leaked tokens greppable
VISIBLE_CHARS = 8


class Scope(models.TextChoices):
    READ = "read", "read: diagnose, search, list"
    WRITE = "write", "write: create and edit findings (new ones as drafts)"
    PUBLISH = "publish", "publish: publish findings, add fixes to published ones"
    VALIDATE = "validate", "validate: queue runs on GPU hosts"


def hash_token(raw: str) -> str:
    # The token carries 256 random bits: a plain digest is as strong as a slow hash here.
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiToken(models.Model):
    """A bot's credential. Shown once when issued; only its digest and prefix are kept."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True, help_text="What uses it, e.g. slack-bot")
    prefix = models.CharField(max_length=16, db_index=True, editable=False)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    scopes = models.JSONField(default=list, help_text='e.g. ["read", "write"]')
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or self.user})"

    @classmethod
    def issue(
        cls,
        user: models.Model,
        scopes: list[str],
        *,
        name: str = "",
        expires_at: object = None,
    ) -> tuple[ApiToken, str]:
        """A new token and its raw value, which is never stored and cannot be shown again."""
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(
            user=user,
            name=name,
            prefix=raw[: len(TOKEN_PREFIX) + VISIBLE_CHARS],
            digest=hash_token(raw),
            scopes=sorted(set(scopes)),
            expires_at=expires_at,
        )
        return token, raw

    @property
    def is_active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()

    def revoke(self) -> None:
        self.revoked_at = timezone.now()
        self.save(update_fields=["revoked_at"])

    def has_scope(self, scope: str) -> bool:
        return scope in (self.scopes or [])


class IdempotentReply(models.Model):
    """The reply to a POST that started work, replayed when the same key comes again."""

    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.CASCADE)
    key = models.CharField(max_length=200)
    path = models.CharField(max_length=300)
    request_digest = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    body = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["token", "key"], name="one_reply_per_token_key"),
        ]

    def __str__(self) -> str:
        return f"{self.key} -> {self.status_code}"


class Webhook(models.Model):
    """An outgoing webhook: where to POST when one of its events happens.

    Bodies are signed with HMAC-SHA256 under FIXGRAPH_WEBHOOK_SECRET (from the
    environment, never the database): `X-FixGraph-Signature: sha256=<hex>` over
    `<timestamp>.<body>`, the timestamp in `X-FixGraph-Timestamp`.
    """

    class Event(models.TextChoices):
        FINDING_PUBLISHED = "finding.published"
        VALIDATION_FINISHED = "validation.finished"

    name = models.CharField(max_length=100)
    url = models.URLField(max_length=500, help_text="http(s) URL that receives the POST")
    events = models.JSONField(default=list, help_text='e.g. ["finding.published"]')
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} → {self.url}"


class WebhookDelivery(models.Model):
    """One event sent (or being sent) to one webhook, with its attempts."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40)
    payload = models.JSONField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.event} to {self.webhook.name}: {self.status}"
