"""Reading JSON request bodies so that no body, however built, is more than a 400.

``json.loads`` raises ``RecursionError`` (not ``ValueError``) for a few KB of ``[[[[…``, and the stdlib and DRF
parsers let it escape as a 500 with a trace. Every parser of request bodies here goes through ``parse_json``.
"""

from __future__ import annotations

import json
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class BodyNotJson(ValueError):
    pass


def parse_json(body: bytes | str) -> Any:
    """The decoded body; ``BodyNotJson`` for anything that is not JSON (bad UTF-8, bad syntax, too deep)."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as error:
        raise BodyNotJson("The request body is not valid JSON (or is nested too deeply).") from error


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, answering 400 for nesting too deep to parse instead of a RecursionError."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
