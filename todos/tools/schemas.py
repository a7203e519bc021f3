"""The JSON schemas the Todos tools share: a todo's id, the Todo the tools answer and the list of them.

Each tool's own input schema lives beside its tool; ``object_schema`` builds them all alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from todos import rules
from todos.formatting import TODO_KEYS

ID_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": rules.ID_MAX,
    "pattern": r"^\S+$",
    "description": "The todo's id, chosen by you when it was created (kebab-case, e.g. `buy-milk`).",
}
INSTANT_INPUT = "ISO 8601 date or date-time (`2026-11-30`, `2026-11-30T09:15:00Z`); no zone means UTC."
# Nullable as anyOf branches of one type each: a `type` array is legal JSON Schema but some clients map tool
# schemas onto single-type dialects (the MCP Inspector's --strict flags it).
NULLABLE_INSTANT = {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}

TODO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "uid": {"type": "string", "description": "The owner's user id."},
        "name": {"type": "string"},
        "description": {"type": "string", "description": "Markdown."},
        "priority": {"type": "string", "enum": list(rules.PRIORITIES)},
        "createdAt": {"type": "string", "format": "date-time"},
        "updatedAt": {"type": "string", "format": "date-time"},
        "completedAt": NULLABLE_INSTANT,
        "deletedAt": NULLABLE_INSTANT,
        "deadlineAt": NULLABLE_INSTANT,
        "links": {"type": "array", "items": {"type": "string"}},
        "tags": {"type": "array", "items": {"type": "string"}, "description": "Present when the todo has tags."},
        "blockedBy": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Present when the todo waits on other todos.",
        },
        "claimedBy": {"type": "string", "description": "Who is working on it; present only while a claim runs."},
        "claimedUntil": {
            "type": "string",
            "format": "date-time",
            "description": "When that claim ends unless renewed; present only while a claim runs.",
        },
    },
    "required": list(TODO_KEYS),
    "additionalProperties": False,
}
CLAIMED_SCHEMA: dict[str, Any] = {
    **TODO_SCHEMA,
    "properties": {
        **TODO_SCHEMA["properties"],
        "leaseToken": {
            "type": "string",
            "description": "Present when the claim is new, and only in this answer: keep it to renew, release and "
            "write the todo as its holder.",
        },
    },
}
ENDED_CLAIM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"claimedBy": {"type": "string"}, "claimedUntil": {"type": "string", "format": "date-time"}},
    "required": ["claimedBy", "claimedUntil"],
    "additionalProperties": False,
    "description": "Present when force: true ended another agent's claim: whose it was and when it would have "
    "ended.",
}
WRITTEN_SCHEMA: dict[str, Any] = {
    **TODO_SCHEMA,
    "properties": {**TODO_SCHEMA["properties"], "endedClaim": ENDED_CLAIM_SCHEMA},
}
LISTED_TODO_SCHEMA: dict[str, Any] = {
    **TODO_SCHEMA,
    "properties": {
        **TODO_SCHEMA["properties"],
        "subtasks": {
            "type": "array",
            "items": {"type": "object"},
            "description": 'view "tree" only: the sub-tasks, nested the same way; present when not empty.',
        },
    },
}
TODO_LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"todos": {"type": "array", "items": LISTED_TODO_SCHEMA}},
    "required": ["todos"],
    "additionalProperties": False,
}


NEXT_LIST_SCHEMA: dict[str, Any] = {
    **TODO_LIST_SCHEMA,
    "properties": {
        **TODO_LIST_SCHEMA["properties"],
        "heldByYou": {
            "type": "array",
            "items": LISTED_TODO_SCHEMA,
            "description": "The todos you hold a live claim on, apart from the ones to take; present when not empty.",
        },
    },
}


def object_schema(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties), "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


NO_INPUT = object_schema({})
ID_INPUT = object_schema({"id": ID_SCHEMA}, ("id",))

TODO_JSON = (
    "a Todo as JSON: {id, uid, name, description, priority, createdAt, updatedAt, completedAt, deletedAt, "
    "deadlineAt, links}, then tags and blockedBy when not empty and claimedBy and claimedUntil while someone "
    "holds a claim on it, timestamps in UTC like 2026-11-30T09:15:42.123Z"
)
