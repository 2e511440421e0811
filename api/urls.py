from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.urls import include, path, re_path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularSwaggerSplitView,
)
from rest_framework.routers import DefaultRouter

from api import errors, schema, slack, views  # noqa: F401 (schema registers the token scheme)

app_name = "api"

router = DefaultRouter()
router.register("findings", views.FindingViewSet, basename="finding")
router.register("hardware", views.HardwareViewSet, basename="hardware")
router.register("models", views.LanguageModelViewSet, basename="languagemodel")
router.register("frameworks", views.FrameworkReleaseViewSet, basename="frameworkrelease")
router.register("flags", views.FlagViewSet, basename="flag")
router.register("hosts", views.HostViewSet, basename="host")
router.register("validation-runs", views.ValidationRunViewSet, basename="validationrun")

urlpatterns = [
    path("diagnose/", views.DiagnoseView.as_view(), name="diagnose"),
    path("feedback/", views.FeedbackView.as_view(), name="feedback"),
    path(
        "signature-decisions/",
        views.SignatureDecisionView.as_view(),
        name="signature-decisions",
    ),
    path("slack/commands/", slack.slash_command, name="slack-command"),
    path("slack/actions/", slack.interaction, name="slack-action"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a file: no inline script.
    # Swagger UI styles its elements inline: only its page allows that (it shows our own
    # schema, nothing a user wrote). No Redoc page: it loads fonts and a logo from a CDN.
    path(
        "docs/",
        csp_update({"style-src": [UNSAFE_INLINE]})(
            SpectacularSwaggerSplitView.as_view(url_name="api:schema")
        ),
        name="docs",
    ),
    path("", include(router.urls)),
    re_path(r"^.*$", errors.not_found),
]
