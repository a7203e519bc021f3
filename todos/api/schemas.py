"""The REST API's inputs: the tools' input schemas as the REST requests take them (the id in the URL, no
``view``), and the OpenAPI documentation of bodies and query parameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import OpenApiParameter

from api.base import REFUSED, query_parameters
from base.invisible import format_class
from todos import rules
from todos.planning import DUE_WORDS
from todos.tools.claims import CLAIM_INPUT, RELEASE_INPUT
from todos.tools.fields import PUT_INPUT, UPDATE_INPUT
from todos.tools.listing import LIST_INPUT, SEARCH_INPUT

PATCH_INPUT: dict[str, Any] = {
    **UPDATE_INPUT,
    "properties": {name: spec for name, spec in UPDATE_INPUT["properties"].items() if name != "id"},
    "required": [],
}
API_CLAIM_INPUT: dict[str, Any] = {
    **CLAIM_INPUT,
    "properties": {
        **{name: spec for name, spec in CLAIM_INPUT["properties"].items() if name != "id"},
        "by": {**CLAIM_INPUT["properties"]["by"], "description": "Who claims it: a short name, e.g. `nightly-job`."},
    },
    "required": ["by"],
}
API_RELEASE_INPUT: dict[str, Any] = {
    **RELEASE_INPUT,
    "properties": {
        "by": {
            **RELEASE_INPUT["properties"]["by"],
            "description": "Release as an agent: only a claim whose leaseToken is given, or one that ran out "
            "(someone else's live claim is refused, 409). Without by and leaseToken, whoever holds the claim, as a "
            "person on /list does.",
        },
        "leaseToken": RELEASE_INPUT["properties"]["leaseToken"],
    },
    "required": [],
}
REPLACE_INPUT: dict[str, Any] = {
    **PUT_INPUT,
    "properties": {name: spec for name, spec in PUT_INPUT["properties"].items() if name != "id"},
    "required": [name for name in PUT_INPUT["required"] if name != "id"],
}
# What rules.id_problem accepts: no whitespace, no control or invisible formatting characters.
ID_PATTERN = rf"^[^\s{REFUSED}{format_class()}]+$"
TAG_PATTERN = rf"^{rules.TAG_PATTERN}$"
ID_PATTERNS = {"id": ID_PATTERN, "links[]": ID_PATTERN, "blockedBy[]": ID_PATTERN, "tags[]": TAG_PATTERN}
INSTANT_DOC = {
    "anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}, {"type": "null"}]
}
PUT_DOC, REPLACE_DOC = (
    {
        **schema,
        "properties": {
            name: {**INSTANT_DOC, "description": spec["description"]} if name in ("completedAt", "deadlineAt") else spec
            for name, spec in schema["properties"].items()
        },
    }
    for schema in (PUT_INPUT, REPLACE_INPUT)
)
PATCH_DOC = {
    **PATCH_INPUT,
    "properties": {
        name: {**INSTANT_DOC, "description": spec["description"]} if name in ("completedAt", "deadlineAt") else spec
        for name, spec in PATCH_INPUT["properties"].items()
    },
}
TODO_ID = OpenApiParameter(
    "todo_id",
    {"type": "string", "minLength": 1, "maxLength": rules.ID_MAX, "pattern": ID_PATTERN},
    OpenApiParameter.PATH,
    description="The todo's id (1-128 characters, no whitespace).",
)


def _without(schema: Mapping[str, Any], *names: str) -> dict[str, Any]:
    # The API always answers the JSON; the tools' `view` has no place here.
    return {**schema, "properties": {name: spec for name, spec in schema["properties"].items() if name not in names}}


API_LIST_INPUT = _without(LIST_INPUT, "view")
API_SEARCH_INPUT = _without(SEARCH_INPUT, "view")
DUE_DOC = {
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "string", "format": "date"},
        {"type": "string", "enum": list(DUE_WORDS)},
    ]
}
FILTER_DOCS = {
    "dueBefore": DUE_DOC,
    "dueAfter": DUE_DOC,
    "under": {**API_LIST_INPUT["properties"]["under"], "pattern": ID_PATTERN},
    "tag": {**API_LIST_INPUT["properties"]["tag"], "pattern": TAG_PATTERN},
}
LIST_DOC = {
    **API_LIST_INPUT,
    "properties": {
        name: {**FILTER_DOCS[name], "description": spec["description"]} if name in FILTER_DOCS else spec
        for name, spec in API_LIST_INPUT["properties"].items()
    },
}
LIST_PARAMETERS = [
    *query_parameters(LIST_DOC),
    *query_parameters(
        {"properties": {name: spec for name, spec in SEARCH_INPUT["properties"].items() if name in ("query", "limit")}},
        rename={"query": "q"},
    ),
]
