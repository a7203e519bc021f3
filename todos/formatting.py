"""Todos as the agent reads them: pure functions, no ORM access, keys in the seed's order."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from todos.models import Todo
from todos.planning import parents
from todos.selectors import Usage
from todos.timestamps import clock, format_instant

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
# Written after the seed's keys, and only when not empty: a todo made as the seed makes them reads byte for
# byte as the seed wrote it. The claim's two keys appear only while the claim runs.
EXTRA_KEYS = ("tags", "blockedBy", "claimedBy", "claimedUntil")
NO_TODOS = "No todos."
HELD_BY_YOU = "held by you:"


def format_todo(todo: Todo, *, uid: str, now: datetime | None = None) -> dict[str, Any]:
    # The uid is passed in rather than read through todo.owner, so formatting never queries. ``now`` (the claims'
    # clock by default) decides whether a claim still runs.
    data: dict[str, Any] = {
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
    if todo.tags:
        data["tags"] = list(todo.tags)
    if todo.blocked_by:
        data["blockedBy"] = list(todo.blocked_by)
    if todo.claim_live(now or clock.now()):
        data["claimedBy"] = todo.claimed_by
        data["claimedUntil"] = format_instant(todo.claimed_until)
    return data


def format_ended_claim(holder: str, until: datetime) -> dict[str, Any]:
    return {"claimedBy": holder, "claimedUntil": format_instant(until)}


def format_todos(todos: Iterable[Todo], *, uid: str) -> list[dict[str, Any]]:
    now = clock.now()
    return [format_todo(todo, uid=uid, now=now) for todo in todos]


# A todo and the trees of its sub-tasks.
_Tree = tuple[Todo, list["_Tree"]]


def _nested(todos: Sequence[Todo]) -> list[_Tree]:
    """(todo, children) trees: a sub-task follows its parent when its parent is in the answer too; every other
    todo keeps its place in the answer's order."""
    parent = parents({todo.key: todo.links for todo in todos})
    nodes: dict[str, _Tree] = {todo.key: (todo, []) for todo in todos}
    roots = []
    for todo in todos:
        if todo.key in parent:
            nodes[parent[todo.key]][1].append(nodes[todo.key])
        else:
            roots.append(nodes[todo.key])
    return roots


def format_tree(todos: Sequence[Todo], *, uid: str) -> list[dict[str, Any]]:
    """The seed's JSON nested by links: sub-tasks under ``subtasks`` of their parent (present when not empty)."""
    now = clock.now()

    def node(todo: Todo, children: list[Any]) -> dict[str, Any]:
        data = format_todo(todo, uid=uid, now=now)
        if children:
            data["subtasks"] = [node(*child) for child in children]
        return data

    return [node(*root) for root in _nested(todos)]


def _due(todo: Todo, now: datetime) -> str:
    if todo.deadline_at is None:
        return "-"
    moment = todo.deadline_at.astimezone(UTC)
    day = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
    # Most deadlines are days; the time is shown only when one was given.
    text = day if (moment.hour, moment.minute, moment.second) == (0, 0, 0) else f"{day} {moment:%H:%M}"
    if todo.completed_at is None and todo.deleted_at is None and todo.deadline_at < now:
        return f"{text} overdue"
    return text


def compact_line(todo: Todo, *, now: datetime, depth: int = 0) -> str:
    """``id · priority · due · name``, then what the agent must know before acting: tags, done, deleted, blocked."""
    marks = [f"#{tag}" for tag in todo.tags]
    if todo.completed_at is not None:
        marks.append("[done]")
    if todo.deleted_at is not None:
        marks.append("[deleted]")
    # Waiting matters only for work still to do.
    pending = todo.completed_at is None and todo.deleted_at is None
    if pending and (blockers := getattr(todo, "open_blockers", None)):
        marks.append(f"[blocked by {', '.join(blockers)}]")
    if todo.claim_live(clock.now()):
        marks.append(f"@{todo.claimed_by}")
    line = " · ".join((todo.key, todo.priority, _due(todo, now), todo.name))
    return "  " * depth + " ".join((line, *marks))


def format_compact(todos: Sequence[Todo], *, now: datetime, nest: bool = True) -> str:
    """One line per todo, sub-tasks indented two spaces under their parent; ``No todos.`` when empty.

    ``nest=False`` keeps the answer's order line for line, for answers whose order is the point (next_todos, a
    search's ranking): a sub-task whose parent is in the answer names it at the end of its line instead.
    """
    if not nest:
        parent = parents({todo.key: todo.links for todo in todos})
        names = {todo.key: todo.name for todo in todos}
        return "\n".join(compact_line(todo, now=now) + (f" (in: {names[parent[todo.key]]})" if todo.key in parent
                                                         else "") for todo in todos) or NO_TODOS
    lines: list[str] = []

    def walk(todo: Todo, children: list[_Tree], depth: int) -> None:
        lines.append(compact_line(todo, now=now, depth=depth))
        for child in children:
            walk(*child, depth + 1)

    for root in _nested(todos):
        walk(*root, 0)
    return "\n".join(lines) if lines else NO_TODOS


def format_usage(usage: Usage) -> dict[str, int]:
    return {"count": usage.count, "maxTasks": usage.max_tasks, "percentage": usage.percentage}


def to_json(value: Any) -> str:
    """Compact, as in the seed; non-ASCII text stays readable rather than \\u-escaped."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
