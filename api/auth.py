"""`Authorization: Token …` with scopes, anonymous read where allowed, throttles per token."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from rest_framework import authentication, exceptions, permissions, throttling
from rest_framework.request import Request

if TYPE_CHECKING:  # rest_framework.views imports this module through its settings
    from rest_framework.views import APIView

from api.models import ApiToken, Scope, hash_token

# last_used_at is a hint for admins, not an audit log: write it at most this often.
LAST_USED_RESOLUTION_S = 60


class TokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode("latin-1").split()
        if not header or header[0].lower() not in ("token", "bearer"):
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Send the header as `Authorization: Token <token>`."
            )
        token = ApiToken.objects.select_related("user").filter(digest=hash_token(header[1])).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Unknown API token.")
        refuse_unusable(token)
        note_use(token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def refuse_unusable(token: ApiToken) -> None:
    if token.revoked_at is not None:
        raise exceptions.AuthenticationFailed("This API token was revoked.", code="token_revoked")
    if token.expires_at is not None and token.expires_at <= timezone.now():
        raise exceptions.AuthenticationFailed("This API token has expired.", code="token_expired")
    if not token.user.is_active:
        raise exceptions.AuthenticationFailed("The token's user is inactive.")


def note_use(token: ApiToken) -> None:
    now = timezone.now()
    last = token.last_used_at
    if last is None or (now - last).total_seconds() > LAST_USED_RESOLUTION_S:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)


def scopes_of(request: Request) -> frozenset[str]:
    token = request.auth
    if isinstance(token, ApiToken):
        return frozenset(token.scopes or ())
    if getattr(settings, "FIXGRAPH_ALLOW_ANONYMOUS_API", False) and isinstance(
        request.user, AnonymousUser | type(None)
    ):
        return frozenset({Scope.READ})
    return frozenset()


class HasScope(permissions.BasePermission):
    """The view's `required_scopes` maps an action (or HTTP method) to the scope it needs."""

    message = "This API token lacks the scope this request needs."

    def has_permission(self, request: Request, view: APIView) -> bool:
        needed = required_scope(request, view)
        granted = scopes_of(request)
        if needed in granted:
            return True
        if request.auth is None and not granted:
            raise exceptions.NotAuthenticated("Send an API token: `Authorization: Token <token>`.")
        self.message = f"This API token lacks the `{needed}` scope."
        return False


def required_scope(request: Request, view: APIView) -> str:
    scopes: dict[str, str] = getattr(view, "required_scopes", {})
    action = getattr(view, "action", None)
    if action and action in scopes:
        return scopes[action]
    if request.method in permissions.SAFE_METHODS:
        return scopes.get("safe", Scope.READ)
    return scopes.get("unsafe", Scope.WRITE)


class TokenRateThrottle(throttling.SimpleRateThrottle):
    """Each token gets its own budget; anonymous callers share one per address."""

    def get_rate(self) -> str | None:
        rates: dict[str, str | None] = settings.REST_FRAMEWORK.get("DEFAULT_THROTTLE_RATES", {})
        self.scope = "token"
        return rates.get("token")

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        if isinstance(request.auth, ApiToken):
            return f"throttle_token_{request.auth.pk}"
        return None


class AnonymousRateThrottle(throttling.AnonRateThrottle):
    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        if isinstance(request.auth, ApiToken):
            return None
        return super().get_cache_key(request, view)
