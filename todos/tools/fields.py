"""The fields of one todo as ``put_todo`` and ``update_todo`` take them: their input schemas, and the reading
of them into what ``services.todo_put`` and ``services.todo_update`` take (shared with the REST API)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from todos import rules, services
from todos.timestamps import read_instant
from todos.tools.arguments import field_rules, read
from todos.tools.schemas import ID_SCHEMA, INSTANT_INPUT, object_schema

PUT_INPUT = object_schema(
    {
        "id": {
            **ID_SCHEMA,
            "description": "Unique among your todos: a descriptive kebab-case id such as "
            "`remodel-basement`. A todo with this id is replaced entirely (and restored if it was deleted).",
        },
        "name": {"type": "string", "minLength": 1, "maxLength": rules.NAME_MAX, "description": "A short title."},
        "description": {
            "type": "string",
            "minLength": 0,
            "maxLength": rules.DESCRIPTION_MAX,
            "description": "Details in Markdown; may be empty.",
        },
        "priority": {"type": "string", "enum": list(rules.PRIORITIES), "default": "medium"},
        "completedAt": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": f"When it was done, or null if pending. {INSTANT_INPUT}",
        },
        "deadlineAt": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": f"Due date, or null. {INSTANT_INPUT}",
        },
        "links": {
            "type": "array",
            "items": {**ID_SCHEMA, "description": "The id of a related todo."},
            "maxItems": rules.LINKS_MAX,
            "default": [],
            "description": "Ids of related todos; a sub-task lists its root todo's id. Duplicates are dropped.",
        },
        "tags": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": rules.TAG_MAX, "description": "One word."},
            "maxItems": rules.TAGS_MAX,
            "default": [],
            "description": f'Labels to filter by, e.g. ["backend", "needs-review"]: each {rules.TAG_RULE}; '
            "stored in lowercase, duplicates dropped.",
        },
        "blockedBy": {
            "type": "array",
            "items": {**ID_SCHEMA, "description": "The id of a todo that must be completed first."},
            "maxItems": rules.BLOCKERS_MAX,
            "default": [],
            "description": 'Ids of your todos that must be completed before this one, e.g. ["design-schema"]. '
            "Until they all are, this todo is blocked and next_todos leaves it out. A loop of todos waiting on "
            "each other is refused.",
        },
    },
    ("id", "name", "description"),
)


def _nullable(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A put_todo field as update_todo takes it: optional, no default (absent means unchanged), null allowed."""
    inner = {key: value for key, value in spec.items() if key not in ("default", "description")}
    branches = inner.pop("anyOf", None) or [inner]
    return {"anyOf": [*(b for b in branches if b.get("type") != "null"), {"type": "null"}],
            "description": spec.get("description", "")}


CLEARED = {
    "description": "empty",
    "priority": "medium",
    "completedAt": "pending",
    "deadlineAt": "no deadline",
    "links": "none",
    "tags": "none",
    "blockedBy": "none",
}
UPDATE_INPUT = object_schema(
    {
        "id": {**ID_SCHEMA, "description": "The id of the todo to change."},
        "name": {**PUT_INPUT["properties"]["name"], "description": "A short title (it cannot be null)."},
        **{
            name: {**_nullable(spec), "description": f"{spec.get('description', 'One of low, medium, high.')} "
                   f"null: {CLEARED[name]}."}
            for name, spec in PUT_INPUT["properties"].items()
            if name in CLEARED
        },
    },
    ("id",),
)
UPDATE_FIELDS = {
    "name": "name",
    "description": "description",
    "priority": "priority",
    "completedAt": "completed_at",
    "deadlineAt": "deadline_at",
    "links": "links",
    "tags": "tags",
    "blockedBy": "blocked_by",
}


def update_fields(
    arguments: Any, schema: Mapping[str, Any] = UPDATE_INPUT
) -> tuple[str, dict[str, Any], dict[str, str]]:
    """``update_todo``'s arguments: the id, the changes as ``services.todo_update`` takes them (a field sent as
    null takes its cleared value), and one sentence per bad field (shared with the REST API; the tool's ``schema``
    adds the holder's arguments, read apart)."""
    values, problems = read(schema, arguments, multiline=("description",))
    field_rules(values, problems)
    given = arguments if isinstance(arguments, Mapping) else {}
    cleared = [name for name in UPDATE_FIELDS if name in given and given[name] is None]
    if "name" in cleared:
        problems["name"] = "name cannot be cleared: give a new name, or leave name out to keep it"
    instants = {name: read_instant(values, name, problems) for name in ("completedAt", "deadlineAt")}
    changes = {UPDATE_FIELDS[name]: services.DEFAULTS[UPDATE_FIELDS[name]] for name in cleared if name != "name"}
    for name, field in UPDATE_FIELDS.items():
        if name in values:
            changes[field] = instants[name] if name in instants else values[name]
    return values.get("id", ""), changes, problems


def put_fields(arguments: Any, schema: Mapping[str, Any] = PUT_INPUT) -> tuple[dict[str, Any], dict[str, str]]:
    """``put_todo``'s arguments as ``services.todo_put`` takes them, and one sentence per bad field (shared with
    the REST API, so both refuse the same input in the same words; each raises its own error; the tool's
    ``schema`` adds the holder's arguments, read apart)."""
    values, problems = read(schema, arguments, multiline=("description",))
    field_rules(values, problems)
    completed_at = read_instant(values, "completedAt", problems)
    deadline_at = read_instant(values, "deadlineAt", problems)
    if problems:
        return {}, problems
    fields = {name: values[name] for name in ("name", "description", "priority", "links", "tags")}
    return {
        **fields,
        "key": values["id"],
        "completed_at": completed_at,
        "deadline_at": deadline_at,
        "blocked_by": values["blockedBy"],
    }, problems
