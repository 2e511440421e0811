"""`Authorization: Token …` with scopes, anonymous diagnose and search where allowed, and
throttles counted in the shared cache (Redis in production), per token or per client."""

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
from kb.clients import client_address, count_in_window
from kb.roles import REVIEW_PERMISSION, VALIDATE_PERMISSION

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


def scopes_of(request: Request, view: APIView | None = None) -> frozenset[str]:
    """The scopes of the request's token, or of a logged-in user (`session_scopes`).
    Without either, `read` only for what a view
    lists in `anonymous_actions` (diagnose and search), and only when
    FIXGRAPH_ALLOW_ANONYMOUS_API is on: drafts, hosts, runs and votes stay closed."""
    token = request.auth
    if isinstance(token, ApiToken):
        return frozenset(token.scopes or ())
    if request.user is not None and request.user.is_authenticated:
        return session_scopes(request.user)
    if (
        getattr(settings, "FIXGRAPH_ALLOW_ANONYMOUS_API", False)
        and isinstance(request.user, AnonymousUser | type(None))
        and view is not None
        and action_of(request, view) in getattr(view, "anonymous_actions", ())
    ):
        return frozenset({Scope.READ})
    return frozenset()


# A logged-in browser (the browsable API) gets the scopes its user's permissions give.
PERMISSION_SCOPES = {
    REVIEW_PERMISSION: (Scope.WRITE, Scope.PUBLISH),
    VALIDATE_PERMISSION: (Scope.VALIDATE,),
}


def session_scopes(user: Any) -> frozenset[str]:
    """`read` for anyone logged in, more by permission: as the web pages allow."""
    granted = {Scope.READ.value}
    for permission, scopes in PERMISSION_SCOPES.items():
        if user.has_perm(permission):
            granted.update(scope.value for scope in scopes)
    return frozenset(granted)


def may_publish(request: Request) -> bool:
    """Whether this caller may make knowledge count: a token with the `publish` scope."""
    return Scope.PUBLISH in scopes_of(request)


def action_of(request: Request, view: APIView) -> str:
    """A viewset's action (`list`), else the HTTP method in lower case (`post`)."""
    return getattr(view, "action", None) or (request.method or "").lower()


class HasScope(permissions.BasePermission):
    """The view's `required_scopes` maps an action (or HTTP method) to the scope it needs."""

    message = "This API token lacks the scope this request needs."

    def has_permission(self, request: Request, view: APIView) -> bool:
        needed = required_scope(request, view)
        granted = scopes_of(request, view)
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


class SharedCacheThrottle(throttling.SimpleRateThrottle):
    """A request budget counted in the default cache, which every web worker shares
    (Redis where CACHE_URL/REDIS_URL is set), by one atomic increment per request.

    DRF's own throttles keep a list of timestamps that each worker reads and writes
    back, so two workers both let the same request through; an `incr` cannot. The
    budget is per fixed window (`rate`'s period): at most `num_requests` in each.
    Subclasses say whose budget a request spends (`get_cache_key`) and its `scope`.
    """

    cache_format = "throttle:%(scope)s:%(ident)s"
    window_end = 0.0

    def get_rate(self) -> str | None:
        rates: dict[str, str | None] = settings.REST_FRAMEWORK.get("DEFAULT_THROTTLE_RATES", {})
        return rates.get(self.scope)

    def allow_request(self, request: Request, view: APIView) -> bool:
        if self.rate is None or self.num_requests is None or self.duration is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        window = int(self.timer() // self.duration)
        self.window_end = (window + 1) * self.duration
        return count_in_window(self.cache, f"{self.key}:{window}", self.duration) <= (
            self.num_requests
        )

    def wait(self) -> float | None:
        return max(self.window_end - self.timer(), 0.0)

    def ident(self, request: Request) -> str:
        """The caller: its token, else its logged-in user, else its address."""
        if isinstance(request.auth, ApiToken):
            return f"token-{request.auth.pk}"
        if request.user is not None and request.user.is_authenticated:
            return f"user-{request.user.pk}"
        return f"addr-{client_address(request)}"


class TokenRateThrottle(SharedCacheThrottle):
    """Each token gets its own budget (FIXGRAPH_API_RATE_TOKEN)."""

    scope = "token"

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        if isinstance(request.auth, ApiToken):
            return self.cache_format % {"scope": self.scope, "ident": self.ident(request)}
        return None


class AnonymousRateThrottle(SharedCacheThrottle):
    """Callers without a token: one budget per client address (FIXGRAPH_API_RATE_ANON)."""

    scope = "anon"

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        if isinstance(request.auth, ApiToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": self.ident(request)}


class ScopedRateThrottle(SharedCacheThrottle):
    """A budget per caller for views that name a `throttle_scope` (e.g. "diagnose"), at
    the rate DEFAULT_THROTTLE_RATES gives that scope; none for other views."""

    def allow_request(self, request: Request, view: APIView) -> bool:
        self.scope = getattr(view, "throttle_scope", "") or ""
        if not self.scope:
            return True
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": self.ident(request)}
