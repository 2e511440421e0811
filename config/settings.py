"""FixGraph settings. Every knob is an environment variable with a safe default.

The embedded default (no variables set, DEBUG=True) is what `make run` uses:
SQLite under var/, a Celery broker on the filesystem, a secret key generated
once into var/. Production sets DEBUG=False, SECRET_KEY, DATABASE_URL and
CELERY_BROKER_URL (see .env.example).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("FIXGRAPH_VAR_DIR", BASE_DIR / "var"))


def envbool(name: str, default: str) -> bool:
    value = os.environ.get(name, default)
    if value not in ("True", "False", "true", "false", "1", "0"):
        raise ImproperlyConfigured(f"{name} must be True or False, not {value!r}")
    return value in ("True", "true", "1")


def envint(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from exc


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def envsecret(name: str) -> str | None:
    """Read NAME_FILE (a path, as Docker secrets work) before NAME."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        return Path(path).read_text().strip()
    return os.environ.get(name) or None


def local_secret_key() -> str:
    """A key generated once into var/, for DEBUG use on one machine only."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


DEBUG = envbool("DEBUG", "False")
SECRET_KEY = envsecret("SECRET_KEY") or ""
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is off. Set SECRET_KEY (or SECRET_KEY_FILE), "
            "or DEBUG=True for local development (`make run` writes DEBUG=True to .env, "
            "which manage.py reads)."
        )
    SECRET_KEY = local_secret_key()

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "simple_history",
    "django_htmx",
    "axes",
    "kb",
    "api",
]

MIDDLEWARE = [
    # First: a load balancer probes each server by its address, over plain HTTP; /healthz
    # answers before the host check and the HTTPS redirect (it builds no URL).
    "kb.middleware.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "kb.middleware.DatabaseUnavailableMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'fixgraph.sqlite3'}",
        conn_max_age=envint("DATABASE_CONN_MAX_AGE", 60),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the worker share the file: wait for locks instead of failing.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
    )
    VAR_DIR.mkdir(parents=True, exist_ok=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the app folders too, so `make run` and tests need no collectstatic.
WHITENOISE_USE_FINDERS = True
# A read-only deployment runs collectstatic at build time instead.
with contextlib.suppress(OSError):
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)

LOGIN_URL = "/admin/login/"

# --- HTTPS, cookies, CSP, logins ------------------------------------------------
# FIXGRAPH_HTTPS=True says the site is served over HTTPS (TLS may end at a proxy in
# front): it turns on the secure defaults below; each can still be set on its own.
FIXGRAPH_HTTPS = envbool("FIXGRAPH_HTTPS", "False")
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", str(FIXGRAPH_HTTPS))
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", str(FIXGRAPH_HTTPS))
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", str(FIXGRAPH_HTTPS))
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31_536_000 if FIXGRAPH_HTTPS else 0)
# Both commit every subdomain (and, with preload, browsers' built-in lists) to HTTPS.
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", "False")
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", "False")
# Behind a proxy that terminates TLS: the header it sets and the value meaning HTTPS,
# e.g. "HTTP_X_FORWARDED_PROTO,https". Only set it when that proxy always sets (or
# strips) the header: a client could otherwise claim HTTPS.
if os.environ.get("SECURE_PROXY_SSL_HEADER"):
    header, _, value = os.environ["SECURE_PROXY_SSL_HEADER"].partition(",")
    SECURE_PROXY_SSL_HEADER = (header.strip(), value.strip() or "https")

# The pages load scripts, styles and images from this server only, and run no inline
# script: an injected <script> does nothing (django-csp sends the header).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# Login throttling (django-axes): after FIXGRAPH_LOGIN_FAILURES wrong passwords for one
# user name from one address, that pair is locked out for FIXGRAPH_LOGIN_COOLOFF_MINUTES
# (the admin's login and the site's alike). Per pair, so nobody can lock an admin out
# from elsewhere; the address is read as the throttles read it (kb/clients.py).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = envint("FIXGRAPH_LOGIN_FAILURES", 5)
AXES_COOLOFF_TIME = timedelta(minutes=envint("FIXGRAPH_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "kb.clients.client_address"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

# Mail: password reset is offered only when the server can send its mail.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_PORT = envint("EMAIL_PORT", 587)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envsecret("EMAIL_HOST_PASSWORD") or ""
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", "True")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "fixgraph@localhost")
FIXGRAPH_MAIL_CONFIGURED = bool(EMAIL_HOST)

# Pasted text larger than this (in UTF-8 bytes) is refused before parsing.
FIXGRAPH_MAX_PASTE_BYTES = envint("FIXGRAPH_MAX_PASTE_BYTES", 2_000_000)
# A whole server log attached instead (signed-in users and API tokens) may be this large;
# its start and end are read, within the paste limit (decisiontree/logfile.py).
FIXGRAPH_MAX_LOG_BYTES = envint("FIXGRAPH_MAX_LOG_BYTES", 100_000_000)
# A form sends the paste URL-encoded: up to 3 bytes on the wire for each byte pasted.
DATA_UPLOAD_MAX_MEMORY_SIZE = FIXGRAPH_MAX_PASTE_BYTES * 3 + 1_000_000
# Diagnoses through the web form, per client (logged-in user, else address) and period.
# Anyone may use the form, and a large paste costs seconds of CPU: without a budget a
# few clients could keep every web worker busy. Bots use the API with a token.
FIXGRAPH_WEB_DIAGNOSE_RATE = os.environ.get("FIXGRAPH_WEB_DIAGNOSE_RATE", "20/min") or None
# Anonymous web-form diagnoses running at once, site-wide (0: no limit). Keep it below
# the number of web workers so that logged-in users and API tokens always find one free
# (bench/abuse.py measured the default: docs/security.md).
FIXGRAPH_WEB_DIAGNOSE_CONCURRENCY = envint("FIXGRAPH_WEB_DIAGNOSE_CONCURRENCY", 1)
# Where the team edits its knowledge files, for "Edit" links: {path} and {line} of the entry,
# e.g. https://git.example.com/team/kb/-/edit/main/{path}#L{line}. Empty: no such links.
FIXGRAPH_SOURCE_EDIT_URL = os.environ.get("FIXGRAPH_SOURCE_EDIT_URL", "")

# --- Celery -----------------------------------------------------------------
# Without a server: kombu's filesystem transport, which works across processes.
CELERY_QUEUE_DIR = VAR_DIR / "celery"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "filesystem://"
CELERY_RESULT_BACKEND = (
    os.environ.get("CELERY_RESULT_BACKEND") or f"file://{CELERY_QUEUE_DIR / 'results'}"
)
if CELERY_BROKER_URL == "filesystem://":
    for folder in ("queue", "processed", "results", "control"):
        (CELERY_QUEUE_DIR / folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_QUEUE_DIR / "queue"),
        "data_folder_out": str(CELERY_QUEUE_DIR / "queue"),
        "processed_folder": str(CELERY_QUEUE_DIR / "processed"),
        # Broadcast exchanges (worker control); kombu's default is ./control in the cwd.
        "control_folder": str(CELERY_QUEUE_DIR / "control"),
        "store_processed": False,
    }
elif CELERY_RESULT_BACKEND.startswith("file://"):
    (CELERY_QUEUE_DIR / "results").mkdir(parents=True, exist_ok=True)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", "False")
# Scale-out (docs/validation.md): a validation run goes to the queue of its host's first
# label, consumed by the workers that can reach that host (kb.services.validation.queue_for).
# Off: one queue for everything, the one a worker started without -Q reads.
FIXGRAPH_QUEUE_PER_LABEL = envbool("FIXGRAPH_QUEUE_PER_LABEL", "False")
CELERY_BEAT_SCHEDULE = {
    "sweep-validation-runs": {"task": "kb.sweep_validation_runs", "schedule": 60.0},
    # Writers ask for it after each commit; this catches what a broker outage dropped.
    "refresh-search-documents": {"task": "kb.refresh_search_documents", "schedule": 60.0},
    "revalidate-fixes": {"task": "kb.revalidate_fixes", "schedule": 7 * 24 * 3600.0},
}

# --- Caches, clients, throttles ------------------------------------------------
# Throttles and the login lockout count in this cache, so every web worker must share
# it: Redis in production. Without one (`make run`, one process) memory will do.
CACHE_URL = os.environ.get("CACHE_URL") or os.environ.get("REDIS_URL") or ""
if CACHE_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# How many proxies of ours stand in front of the server. 0: X-Forwarded-For is ignored
# (anyone can send it); N: the address the outermost proxy saw counts (kb/clients.py).
FIXGRAPH_NUM_PROXIES = envint("FIXGRAPH_NUM_PROXIES", 0)

# --- REST API ---------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "api.schema.FixGraphAutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.BoundedPagination",
    "PAGE_SIZE": 25,
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["api.auth.HasScope"],
    "DEFAULT_THROTTLE_CLASSES": [
        "api.auth.TokenRateThrottle",
        "api.auth.AnonymousRateThrottle",
        "api.auth.ScopedRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "token": os.environ.get("FIXGRAPH_API_RATE_TOKEN", "600/min"),
        "anon": os.environ.get("FIXGRAPH_API_RATE_ANON", "60/min"),
        # Per caller, on top of the above, for the two endpoints that cost CPU.
        "diagnose": os.environ.get("FIXGRAPH_API_RATE_DIAGNOSE", "60/min"),
        "search": os.environ.get("FIXGRAPH_API_RATE_SEARCH", "120/min"),
    },
    "NUM_PROXIES": FIXGRAPH_NUM_PROXIES,
    "DEFAULT_PARSER_CLASSES": [
        "api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "api.errors.api_exception_handler",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "api.negotiation.ContentNegotiation",
}
# Off by default: with it on, callers without a token may diagnose and search (nothing else).
FIXGRAPH_ALLOW_ANONYMOUS_API = envbool("FIXGRAPH_ALLOW_ANONYMOUS_API", "False")
SLACK_SIGNING_SECRET = envsecret("SLACK_SIGNING_SECRET")
# With a bot token (xoxb-…, scope chat:write) answers go to a thread; see docs/slack.md.
SLACK_BOT_TOKEN = envsecret("SLACK_BOT_TOKEN")
SLACK_API_URL = os.environ.get("SLACK_API_URL", "https://slack.com/api")
# Signs outgoing webhooks (HMAC-SHA256); unsigned when unset.
FIXGRAPH_WEBHOOK_SECRET = envsecret("FIXGRAPH_WEBHOOK_SECRET")
# Refuse webhook URLs that resolve to loopback, private or link-local addresses.
FIXGRAPH_WEBHOOK_BLOCK_PRIVATE = envbool("FIXGRAPH_WEBHOOK_BLOCK_PRIVATE", "False")
# The only origins a Slack reply is ever posted to (tests add a local server).
SLACK_RESPONSE_ORIGINS = envlist("SLACK_RESPONSE_ORIGINS", "https://hooks.slack.com")
# Swagger UI and Redoc served from this server: no CDN is needed.
INSTALLED_APPS += ["drf_spectacular_sidecar"]
SPECTACULAR_SETTINGS = {
    "TITLE": "FixGraph API",
    "DESCRIPTION": (
        "Diagnose LLM-serving crashes and search what the team learned.\n\n"
        "Send `Authorization: Token <token>` (`manage.py issue_token USER --scopes read`). "
        'Every error has one shape, `{"error": {"code", "message", "fields"}}`; '
        "`429` comes with `Retry-After`. A Python client and curl lines: docs/api.md; the "
        "Slack app: docs/slack.md."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # No validator badge: it would load an image from validator.swagger.io.
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "MatchLevelEnum": "api.serializers.MATCH_LEVELS",
        "DiagnosisOutcomeEnum": "api.serializers.OUTCOMES",
        "MemoryReadingKindEnum": "api.serializers.MEMORY_READINGS",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # django-axes logs every failed login at INFO; its lockouts are WARNINGs.
    "loggers": {"axes": {"level": "WARNING"}},
}
