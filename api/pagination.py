"""Pages of findings that also say how a search read its query."""

from __future__ import annotations

from typing import Any

from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

from kb.search import SearchResult

# What `query` holds, for the OpenAPI schema.
QUERY_SCHEMA = {
    "type": "object",
    "nullable": True,
    "description": "How `q` was read; null without `q`.",
    "properties": {
        "every_word": {
            "type": "boolean",
            "description": "False: no finding has every word; these have some of them.",
        },
        "corrected": {
            "type": "array",
            "description": "Words no finding has, read as the closest word that one has.",
            "items": {
                "type": "object",
                "properties": {"written": {"type": "string"}, "searched": {"type": "string"}},
            },
        },
        "ignored": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Words no finding has and nothing is close to: left out.",
        },
    },
}


def query_reading(result: SearchResult | None) -> dict[str, Any] | None:
    if result is None or not (result.reading.terms or result.reading.ignored):
        return None
    reading = result.reading
    return {
        "every_word": result.every_word,
        "corrected": [
            {"written": written, "searched": searched} for written, searched in reading.corrected
        ],
        "ignored": list(reading.ignored),
    }


class SearchPagination(LimitOffsetPagination):
    """Limit/offset pages, plus `query`: what the search made of `q` (see docs/search.md)."""

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> Any:
        self.search_result = getattr(view, "search_result", None)
        return super().paginate_queryset(queryset, request, view)

    def get_paginated_response(self, data: Any) -> Response:
        response = super().get_paginated_response(data)
        response.data["query"] = query_reading(self.search_result)
        return response

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        paginated = super().get_paginated_response_schema(schema)
        paginated["properties"]["query"] = QUERY_SCHEMA
        return paginated
