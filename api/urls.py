from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
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
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
    path("", include(router.urls)),
    re_path(r"^.*$", errors.not_found),
]
