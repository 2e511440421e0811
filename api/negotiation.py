"""Content negotiation: an unknown `?format=` is a 400 that names it (DRF says 404, as
for an unknown suffix such as `/findings/1.xyz/`, which stays a 404)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import Http404
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class ContentNegotiation(DefaultContentNegotiation):
    def select_renderer(
        self, request: Request, renderers: Sequence[BaseRenderer], format_suffix: Any = None
    ) -> tuple[BaseRenderer, str]:
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except Http404:
            if format_suffix:  # /findings/1.xyz/: no such page
                raise
            formats = ", ".join(r.format for r in renderers if r.format)
            raise exceptions.ValidationError(
                {self.settings.URL_FORMAT_OVERRIDE: [f"Unknown format; one of: {formats}."]}
            ) from None
