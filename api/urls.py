from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import DefaultRouter

from api import docs, errors, schema, slack, views  # noqa: F401 (schema registers the token scheme)

app_name = "api"

router = DefaultRouter()
router.register("findings", views.FindingViewSet, basename="finding")
router.register("hardware", views.HardwareViewSet, basename="hardware")
router.register("models", views.LanguageModelViewSet, basename="languagemodel")
router.register("frameworks", views.FrameworkReleaseViewSet, basename="frameworkrelease")
router.register("flags", views.FlagViewSet, basename="flag")
router.register("hosts", views.HostViewSet, basename="host")
router.register("feedback", views.FeedbackViewSet, basename="feedback")
router.register("validation-runs", views.ValidationRunViewSet, basename="validationrun")

urlpatterns = [
    path("diagnose/", views.DiagnoseView.as_view(), name="diagnose"),
    path("check-launch/", views.LaunchCheckView.as_view(), name="check-launch"),
    path(
        "signature-decisions/",
        views.SignatureDecisionView.as_view(),
        name="signature-decisions",
    ),
    path("slack/commands/", slack.SlashCommandView.as_view(), name="slack-command"),
    path("slack/actions/", slack.InteractionView.as_view(), name="slack-action"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", docs.swagger_page(), name="docs"),
    path("redoc/", docs.redoc_page(), name="redoc"),
    path("redoc/redoc.standalone.js", docs.redoc_script, name="redoc-script"),
    path("", include(router.urls)),
    re_path(r"^.*$", errors.not_found),
]
