from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import include, path


def needs_mail(view: Any) -> Any:
    """Password reset mails a link: without a mail server it would fail, or worse, seem
    to work. Until EMAIL_HOST is set its pages do not exist."""

    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.FIXGRAPH_MAIL_CONFIGURED:
            raise Http404("Password reset needs a mail server (EMAIL_HOST).")
        return view(request, *args, **kwargs)  # type: ignore[no-any-return]

    return wrapped


accounts = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path(
        "password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path(
        "password_reset/",
        needs_mail(auth_views.PasswordResetView.as_view()),
        name="password_reset",
    ),
    path(
        "password_reset/done/",
        needs_mail(auth_views.PasswordResetDoneView.as_view()),
        name="password_reset_done",
    ),
    path(
        "reset/<uidb64>/<token>/",
        needs_mail(auth_views.PasswordResetConfirmView.as_view()),
        name="password_reset_confirm",
    ),
    path(
        "reset/done/",
        needs_mail(auth_views.PasswordResetCompleteView.as_view()),
        name="password_reset_complete",
    ),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include(accounts)),
    path("api/v1/", include("api.urls")),
    path("", include("kb.urls")),
]
