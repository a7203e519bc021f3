"""What every Pillbox endpoint shares: the view base (errors as the API states them, the caller's reach, a
record answered in full), ids in URLs, request bodies and queries read by the tools' own checks, and pages."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import ApiError, ApiView, body, caller_of, query_arguments
from mcp_bridge.arguments import Problem, read_arguments
from pillbox import selectors, texts
from pillbox.access import Reach, hides_server_paths, reach_for
from pillbox.exceptions import PillboxError

# The tools' own checks: the blank-field rule and the wording of every problem (invalid_input, validation_error,
# the content-over-limit advice), so the API cannot drift from what agents read.
from pillbox.input_rules import NONBLANK, VISIBLE, field_problems, problems_error
from pillbox.serializers import CapsuleSerializer, PillDetailSerializer, PrescriptionSerializer
from pillbox.tools import TOOLSET

_STATUS = {
    "not_found": status.HTTP_404_NOT_FOUND,
    "prescription_required": status.HTTP_409_CONFLICT,
    "already_exists": status.HTTP_409_CONFLICT,
    "incompatible_db": status.HTTP_409_CONFLICT,
    "internal_error": status.HTTP_500_INTERNAL_SERVER_ERROR,
}
# What ids.normalise accepts: 8-32 hex digits, dashes anywhere (a UUID as usually written).
ID_PATTERN = r"^(?:[0-9A-Fa-f]-?){8,32}$"
SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
LIST_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "include_discarded": {"type": "boolean", "default": False, "description": "Also list discarded ones."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 100, "description": "Page size."},
        "offset": {
            "type": "integer",
            "minimum": 0,
            "maximum": 1_000_000_000,
            "default": 0,
            "description": "How many to skip.",
        },
    },
}


INCLUDE_SUPERSEDED: dict[str, Any] = {
    "type": "boolean", "default": False,
    "description": "Also list the ones a newer one supersedes (superseded_by names it); agents do not see them.",
}


def _id(name: str, noun: str) -> OpenApiParameter:
    return OpenApiParameter(
        name,
        OpenApiTypes.STR,
        OpenApiParameter.PATH,
        pattern=ID_PATTERN,
        description=f"The {noun}'s id: 12 hex digits as shown, a full UUID, or a prefix of 8+.",
    )


BOTTLE_ID, PRESCRIPTION_ID = _id("bottle_id", "bottle"), _id("prescription_id", "prescription")
PILL_ID, CAPSULE_ID = _id("pill_id", "pill"), _id("capsule_id", "capsule")


def body_schema(tool: str, *, without: tuple[str, ...] = ()) -> dict[str, Any]:
    """A tool's input schema as a request body: the fields the URL carries left out, nothing else taken."""
    schema = TOOLSET.by_name[tool].input_schema
    properties = {name: spec for name, spec in schema["properties"].items() if name not in without}
    body: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required := [name for name in schema.get("required", ()) if name not in without]:
        body["required"] = required
    if tool.endswith("_revise"):
        body["minProperties"] = 1
    return body


def documented_body(schema: Mapping[str, Any]) -> Any:
    return body(schema, nonblank=NONBLANK, visible=VISIBLE, patterns={"name": SLUG_PATTERN, "supersedes[]": ID_PATTERN})


def read(tool: str, schema: Mapping[str, Any], data: Any, *, strict: bool = True) -> dict[str, Any]:
    """The tool's checks and wording; ``strict`` (request bodies) also refuses a field the schema does not name,
    which is usually a misspelt one."""
    values, problems = read_arguments(schema, data, multiline=("content",))
    problems += field_problems(values)
    if strict and isinstance(data, Mapping):
        known = schema.get("properties", {})
        problems += [
            Problem(str(name), "type", f"is not a field of this request (it takes {', '.join(known)})")
            for name in data
            if name not in known
        ]
    if problems:
        raise problems_error(tool, problems, data if isinstance(data, dict) else {})
    return values


def paged(rows: list[Any], values: Mapping[str, Any]) -> dict[str, Any]:
    start = values["offset"]
    return {"count": len(rows), "results": rows[start : start + values["limit"]]}


def read_query(request: Request, schema: Mapping[str, Any], what: str) -> dict[str, Any]:
    return read(what, schema, query_arguments(request, schema), strict=False)


class PillboxView(ApiView):
    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, PillboxError):
            message, fields = texts.visible(exc, hide_paths=hides_server_paths(caller_of(self.request)))
            exc = ApiError(_STATUS.get(exc.code, status.HTTP_400_BAD_REQUEST), exc.code, message, fields)
        return super().handle_exception(exc)

    @cached_property
    def reach(self) -> Reach:
        return reach_for(caller_of(self.request))

    @property
    def shown(self) -> dict[str, bool]:
        return {"hide_paths": self.reach.hide_paths}

    def prescription(self, prescription_id: str, code: int = status.HTTP_200_OK) -> Response:
        page = selectors.prescription_page(reach=self.reach, prescription_id=prescription_id)
        # The serializer reads live_pills, which the listings' annotated rows carry: this row is given it here.
        live = sum(1 for pill in page.pills if pill.deleted_at is None)
        page.prescription.live_pills = live  # type: ignore[attr-defined]
        return Response(PrescriptionSerializer(page.prescription).data, status=code)

    def pill(self, pill_id: str, code: int = status.HTTP_200_OK) -> Response:
        page = selectors.pill_page(reach=self.reach, pill_id=pill_id)
        return Response(PillDetailSerializer(page.pill, context={"page": page}).data, status=code)

    def capsule(self, capsule_id: str, code: int = status.HTTP_200_OK) -> Response:
        capsule = selectors.capsule_find_any(reach=self.reach, capsule_id=capsule_id)
        return Response(CapsuleSerializer(capsule).data, status=code)
