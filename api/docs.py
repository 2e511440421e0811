"""Swagger UI and Redoc, from FixGraph's own static files (drf-spectacular-sidecar), under
a Content-Security-Policy that lets them load nothing from another host.

Redoc's bundle draws a "by Redocly" logo from cdn.redoc.ly, which no setting turns off:
`redoc_script` serves the sidecar's bundle with that one address replaced by an empty
image (Redoc then leaves the logo out), and the site policy's `img-src` would refuse it
anyway. Redoc's page template leaves out drf-spectacular's Google Fonts links. No inline
script on either page: Swagger UI's start-up script is a file of its own (the split
view's `?script`) and Redoc starts from its `<redoc>` element.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

# On top of the site's policy (config/settings.py, django-csp): both readers style their
# elements inline (they show our own schema, nothing a user wrote); Redoc searches in a
# worker it starts from a blob.
SWAGGER_POLICY = {"style-src": [UNSAFE_INLINE]}
REDOC_POLICY = {"style-src": [UNSAFE_INLINE], "worker-src": [SELF, "blob:"]}


class RedocView(SpectacularRedocView):  # type: ignore[misc]
    template_name = "api/redoc.html"

    @staticmethod
    def _redoc_standalone() -> str:
        return reverse("api:redoc-script")


REDOC_BUNDLE = "drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"
REDOCLY_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


@cache
def redoc_bundle() -> bytes:
    found = finders.find(REDOC_BUNDLE)
    if not isinstance(found, str):
        raise FileNotFoundError(f"{REDOC_BUNDLE}: is drf-spectacular-sidecar installed?")
    return Path(found).read_bytes().replace(REDOCLY_LOGO, b"data:,")


@require_GET
def redoc_script(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(redoc_bundle(), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=86400"
    return response


def swagger_page() -> Any:
    # The split view serves Swagger UI's start-up script as a file: no inline script.
    return csp_update(SWAGGER_POLICY)(SpectacularSwaggerSplitView.as_view(url_name="api:schema"))


def redoc_page() -> Any:
    return csp_update(REDOC_POLICY)(RedocView.as_view(url_name="api:schema"))
