"""Request parsers: DRF's, with nesting that would exhaust the stack refused as bad input."""

from __future__ import annotations

from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    """`[[[[…` a hundred thousand levels deep is a 400, not a RecursionError (a 500)."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Any = None
    ) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply") from exc
