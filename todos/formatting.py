"""Todos as the agent reads them: pure functions, no ORM access, keys in the seed's order."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from todos.models import Todo
from todos.selectors import Usage
from todos.timestamps import format_instant

TODO_KEYS = (
    "id",
    "uid",
    "name",
    "description",
    "priority",
    "createdAt",
    "updatedAt",
    "completedAt",
    "deletedAt",
    "deadlineAt",
    "links",
)


def format_todo(todo: Todo, *, uid: str) -> dict[str, Any]:
    # The uid is passed in rather than read through todo.owner, so formatting never queries.
    return {
        "id": todo.key,
        "uid": uid,
        "name": todo.name,
        "description": todo.description,
        "priority": todo.priority,
        "createdAt": format_instant(todo.created_at),
        "updatedAt": format_instant(todo.updated_at),
        "completedAt": format_instant(todo.completed_at),
        "deletedAt": format_instant(todo.deleted_at),
        "deadlineAt": format_instant(todo.deadline_at),
        "links": list(todo.links),
    }


def format_todos(todos: Iterable[Todo], *, uid: str) -> list[dict[str, Any]]:
    return [format_todo(todo, uid=uid) for todo in todos]


def format_usage(usage: Usage) -> dict[str, int]:
    return {"count": usage.count, "maxTasks": usage.max_tasks, "percentage": usage.percentage}


def to_json(value: Any) -> str:
    """Compact, as in the seed; non-ASCII text stays readable rather than \\u-escaped."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
