"""Cursor pages of findings that also say how a search read its query.

A cursor is opaque to the client: follow `next` and `previous` as given. Inside, a
list in a field order (newest first, title, ...) resumes after the last row's values
(a keyset, so rows added meanwhile neither repeat nor vanish); a list ranked by a
query resumes at a position of its ranked matches (at most kb.search.RANKED_LIMIT).
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError as FieldValueError
from django.db.models import Q, QuerySet
from rest_framework import exceptions
from rest_framework.pagination import BasePagination, LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from kb.models import Finding
from kb.search import RANKED_LIMIT, SearchResult

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
        "architectures": {
            "type": "array",
            "description": "GPU names searched with their architecture too: `5090` "
            "also finds the findings for `sm_120`.",
            "items": {
                "type": "object",
                "properties": {"written": {"type": "string"}, "arch": {"type": "string"}},
            },
        },
    },
}
INVALID_CURSOR = "Not a cursor of this list: follow the `next` or `previous` link as given."


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
        "architectures": [
            {"written": written, "arch": arch} for written, arch in reading.architectures
        ],
    }


class BoundedPagination(LimitOffsetPagination):
    """Limit/offset pages with both numbers bounded: `?limit=99999999999999999999` gives
    `max_limit` rows, an offset past the end an empty page (never a database error)."""

    max_limit = 200

    def get_offset(self, request: Request) -> int:
        return min(super().get_offset(request), getattr(self, "count", 0))


class FindingCursorPagination(BasePagination):
    """`limit` (1 to 100) findings a page; `cursor` from the `next` or `previous` link."""

    cursor_query_param = "cursor"
    limit_query_param = "limit"
    default_limit = 25
    max_limit = 100

    def query_params(self) -> tuple[str, ...]:
        return (self.cursor_query_param, self.limit_query_param)

    def paginate_queryset(
        self, queryset: QuerySet[Finding], request: Request, view: Any = None
    ) -> list[Finding]:
        self.request = request
        self.result: SearchResult | None = getattr(view, "search_result", None)
        self.limit = self.read_limit(request)
        cursor = self.read_cursor(request)
        self.next_cursor: dict[str, Any] | None = None
        self.previous_cursor: dict[str, Any] | None = None
        result = self.result
        if result is not None and result.by_rank and result.best_ids is not None:
            return self.ranked_page(result, cursor)
        return self.keyset_page(queryset, cursor)

    # --- a list ranked by a query: positions in its ranked matches --------------------

    def ranked_page(self, result: SearchResult, cursor: dict[str, Any]) -> list[Finding]:
        ids = (result.best_ids or ())[:RANKED_LIMIT]
        position = cursor.get("p", 0)
        if not isinstance(position, int) or not 0 <= position <= len(ids):
            raise exceptions.ValidationError({self.cursor_query_param: [INVALID_CURSOR]})
        shown = ids[position : position + self.limit]
        rows = {finding.pk: finding for finding in result.page(position, self.limit)}
        if position + self.limit < len(ids):
            self.next_cursor = {"p": position + self.limit}
        if position > 0:
            self.previous_cursor = {"p": max(0, position - self.limit)}
        return [rows[pk] for pk in shown if pk in rows]

    # --- a list in a field order: resume after (or before) a row's values ---------------

    def keyset_page(self, queryset: QuerySet[Finding], cursor: dict[str, Any]) -> list[Finding]:
        fields = [str(name) for name in queryset.query.order_by]
        if not fields:
            raise ValueError("A keyset page needs an ordered queryset")
        backwards = "before" in cursor
        values = cursor.get("before") if backwards else cursor.get("after")
        if values is not None:
            queryset = queryset.filter(beyond(queryset, fields, values, backwards))
        if backwards:
            queryset = queryset.order_by(*(flipped(name) for name in fields))
        rows = list(queryset[: self.limit + 1])
        more = len(rows) > self.limit
        rows = rows[: self.limit]
        if backwards:
            rows.reverse()
        if rows and (more or backwards):
            self.next_cursor = {"after": values_of(rows[-1], fields)}
        if rows and ((more and backwards) or (values is not None and not backwards)):
            self.previous_cursor = {"before": values_of(rows[0], fields)}
        return rows

    # --- the request's parameters -------------------------------------------------------

    def read_limit(self, request: Request) -> int:
        raw = request.query_params.get(self.limit_query_param)
        if raw is None:
            return self.default_limit
        if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= self.max_limit:
            raise exceptions.ValidationError(
                {self.limit_query_param: [f"A whole number from 1 to {self.max_limit}."]}
            )
        return int(raw)

    def read_cursor(self, request: Request) -> dict[str, Any]:
        raw = request.query_params.get(self.cursor_query_param)
        if raw is None:
            return {}
        try:
            cursor = json.loads(base64.urlsafe_b64decode(raw.encode("ascii")))
        except (ValueError, UnicodeError, binascii.Error):
            cursor = None
        if (
            not isinstance(cursor, dict)
            or len(cursor) != 1
            or not {"p", "after", "before"} & set(cursor)
        ):
            raise exceptions.ValidationError({self.cursor_query_param: [INVALID_CURSOR]})
        return cursor

    def link(self, cursor: dict[str, Any] | None) -> str | None:
        if cursor is None:
            return None
        url = self.request.build_absolute_uri()
        encoded = base64.urlsafe_b64encode(json.dumps(cursor, default=str).encode()).decode()
        return replace_query_param(url, self.cursor_query_param, encoded)

    # --- the answer -----------------------------------------------------------------------

    def get_paginated_response(self, data: Any) -> Response:
        count = self.result.count if self.result is not None else 0
        return Response(
            {
                "count": min(count, RANKED_LIMIT),
                "count_capped": count > RANKED_LIMIT,
                "next": self.link(self.next_cursor),
                "previous": self.link(self.previous_cursor),
                "query": query_reading(self.result),
                "results": data,
            }
        )

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        link = {"type": "string", "format": "uri", "nullable": True}
        return {
            "type": "object",
            "required": ["count", "count_capped", "next", "previous", "query", "results"],
            "properties": {
                "count": {
                    "type": "integer",
                    "description": f"Matches, counted up to {RANKED_LIMIT:,}.",
                },
                "count_capped": {
                    "type": "boolean",
                    "description": f"True: more than {RANKED_LIMIT:,} match. A query ranks "
                    f"its best {RANKED_LIMIT:,}; a list without `q` pages through all.",
                },
                "next": {**link, "description": "The next page; null on the last."},
                "previous": {**link, "description": "The page before; null on the first."},
                "query": QUERY_SCHEMA,
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "From the `next` or `previous` link of an earlier page.",
                "schema": {"type": "string"},
            },
            {
                "name": self.limit_query_param,
                "required": False,
                "in": "query",
                "description": f"Findings a page, 1 to {self.max_limit}.",
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_limit,
                    "default": self.default_limit,
                },
            },
        ]


def flipped(order: str) -> str:
    return order[1:] if order.startswith("-") else f"-{order}"


def values_of(row: Finding, fields: list[str]) -> list[Any]:
    values = [getattr(row, name.lstrip("-")) for name in fields]
    return [value.isoformat() if isinstance(value, datetime) else value for value in values]


def beyond(queryset: QuerySet[Finding], fields: list[str], values: Any, backwards: bool) -> Q:
    """Rows after `values` in the order of `fields` (before them, `backwards`): the first
    field past its value, or equal to it and the next one past, and so on."""
    if not isinstance(values, list) or len(values) != len(fields):
        raise exceptions.ValidationError({"cursor": [INVALID_CURSOR]})
    condition = Q(pk__in=[])
    equal = Q()
    for order, raw in zip(fields, values, strict=True):
        name = order.lstrip("-")
        value = typed(queryset, name, raw)
        descending = order.startswith("-") != backwards
        condition |= equal & Q(**{f"{name}__{'lt' if descending else 'gt'}": value})
        equal &= Q(**{name: value})
    return condition


def typed(queryset: QuerySet[Finding], name: str, raw: Any) -> Any:
    """A cursor value as the column's type: the model's field, or an annotation's."""
    annotation = queryset.query.annotations.get(name)
    field = annotation.output_field if annotation is not None else Finding._meta.get_field(name)
    try:
        return field.to_python(raw)
    except (ValueError, TypeError, FieldValueError) as error:
        raise exceptions.ValidationError({"cursor": [INVALID_CURSOR]}) from error
