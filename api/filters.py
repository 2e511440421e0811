"""The findings list's parameters, read by the same FilterSet as the web page
(kb.filtersets), with the API's strictness: a parameter it does not know, or a
value it cannot use, is a 400 naming it; drafts need a token with `write`."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import exceptions
from rest_framework.request import Request

from api.auth import scopes_of
from api.models import ApiToken, Scope
from kb.filtersets import FindingFilterSet
from kb.models import Finding
from kb.roles import REVIEW_PERMISSION

UNPUBLISHED_NEEDS_WRITE = "Findings that are not published need a token with the `write` scope."
# Understood by every DRF view: `?format=json` picks the renderer.
FORMAT_PARAM = "format"


def may_read_unpublished(request: Request) -> bool:
    """A token with `write` (the scope that edits findings), or a reviewer's session."""
    if isinstance(request.auth, ApiToken):
        return Scope.WRITE in scopes_of(request)
    return bool(request.user and request.user.has_perm(REVIEW_PERMISSION))


class FindingFilterBackend(DjangoFilterBackend):
    """Filters, searches and orders; the view's `search_result` holds what was found."""

    def get_filterset_kwargs(
        self, request: Request, queryset: QuerySet[Finding], view: Any
    ) -> dict[str, Any]:
        return {
            **super().get_filterset_kwargs(request, queryset, view),
            "unpublished_allowed": may_read_unpublished(request),
            "unpublished_refusal": UNPUBLISHED_NEEDS_WRITE,
        }

    def filter_queryset(
        self, request: Request, queryset: QuerySet[Finding], view: Any
    ) -> QuerySet[Finding]:
        filterset: FindingFilterSet = self.get_filterset(request, queryset, view)
        paginator = view.paginator
        allowed = (FORMAT_PARAM, *(paginator.query_params() if paginator else ()))
        unknown = filterset.unknown_parameters(allowed)
        if unknown:
            known = ", ".join(sorted({*filterset.filters, *allowed}))
            raise exceptions.ValidationError(
                {name: [f"Unknown parameter; this list takes {known}."] for name in unknown}
            )
        if not filterset.is_valid():
            errors = {name: list(messages) for name, messages in filterset.errors.items()}
            if filterset.refused():
                raise exceptions.PermissionDenied(UNPUBLISHED_NEEDS_WRITE)
            raise exceptions.ValidationError(errors)
        view.search_result = filterset.search()
        return view.search_result.findings
