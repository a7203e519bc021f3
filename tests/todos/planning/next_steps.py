"""next_todos: the order to take todos in, its default limit, and the filters narrowing it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from mcp.client import Client

from tests.todos.helpers import ids, put
from tests.todos.planning.common import iso, ok


async def scenario_next(client: Client) -> None:
    now = datetime.now(UTC)
    await put(client, "nx-root", "Next root", priority="low", deadlineAt=iso(now + timedelta(days=400)))
    order = [
        ("nx-overdue-low", "low", now - timedelta(days=2)),
        ("nx-high-late", "high", now + timedelta(days=30)),
        ("nx-high-none", "high", None),
        ("nx-med-soon", "medium", now + timedelta(days=1)),
        ("nx-med-none-old", "medium", None),
        ("nx-med-none-new", "medium", None),
    ]
    for key, priority, deadline in reversed(order[:4]):
        await put(client, key, key, priority=priority, links=["nx-root"], deadlineAt=deadline and iso(deadline))
    for key, priority, _ in order[4:]:
        await put(client, key, key, priority=priority, links=["nx-root"])
    await put(client, "nx-done", "Done", priority="high", links=["nx-root"])
    await ok(client, "complete_todo", id="nx-done")
    await put(client, "nx-blocked", "Blocked", priority="high", links=["nx-root"], blockedBy=["nx-med-soon"])
    # nx-root is an umbrella with pending sub-tasks: they are next, not it.
    expected = [key for key, _, _ in order[:4]] + ["nx-med-none-old", "nx-med-none-new"]
    assert await ids(client, "next_todos", under="nx-root") == expected
    assert await ids(client, "next_todos", under="nx-root", limit=3) == expected[:3]
    assert await ids(client, "next_todos", under="nx-root", priority="medium") == expected[3:6]
    compact = (await ok(client, "next_todos", under="nx-root", view="compact", limit=1)).text
    assert compact == f"nx-overdue-low · low · {order[0][2]:%Y-%m-%d %H:%M} overdue · nx-overdue-low"
    # The compact lines keep the order to take them.
    lines = (await ok(client, "next_todos", under="nx-root", view="compact")).text.splitlines()
    assert [line.split(" · ")[0] for line in lines] == expected
    assert (await ok(client, "next_todos", under="nx-done", view="compact")).text == "No todos."
    assert (await ok(client, "next_todos", under="nx-done")).text == "[]"


async def scenario_next_default_limit(client: Client) -> None:
    """Without a limit, next_todos answers its first ten: the schema's default, and what the tool does."""
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert listed["next_todos"].input_schema["properties"]["limit"]["default"] == 10
    await put(client, "nl-root", "Twelve steps", priority="low")
    steps = [f"nl-{number:02d}" for number in range(1, 13)]
    for key in steps:  # medium, no deadline: taken oldest first; the root waits on them
        await put(client, key, f"Step {key}", links=["nl-root"])
    await put(client, "nl-waits", "Waits on the first", priority="high", links=["nl-root"], blockedBy=["nl-01"])
    await put(client, "nl-done", "Already done", priority="high", links=["nl-root"])
    await ok(client, "complete_todo", id="nl-done")
    everything = steps  # 12 eligible: nl-waits is blocked, nl-done completed, nl-root waits on its sub-tasks
    assert await ids(client, "next_todos", under="nl-root", limit=200) == everything
    default = await ok(client, "next_todos", under="nl-root")
    assert [todo["id"] for todo in default.data] == everything[:10]
    assert default.text == (await ok(client, "next_todos", under="nl-root", limit=10)).text
    compact = (await ok(client, "next_todos", under="nl-root", view="compact")).text.splitlines()
    assert [line.split(" · ")[0] for line in compact] == everything[:10]
    tree = (await ok(client, "next_todos", under="nl-root", view="tree")).data
    # nl-root is not in the answer: each step is a root of its own, still in the order to take them.
    assert [todo["id"] for todo in tree] == everything[:10] and not any("subtasks" in todo for todo in tree)


async def scenario_next_filters(client: Client) -> None:
    """tag, dueBefore and dueAfter narrow next_todos too; what is blocked or done stays out, the order stays."""
    now = datetime.now(UTC)
    await put(client, "nd-root", "Next with filters", priority="low")
    todos = [
        ("nd-late", "medium", now + timedelta(days=30), ["ops"]),
        ("nd-soon", "medium", now + timedelta(days=2), []),
        ("nd-high-soon", "high", now + timedelta(days=3), ["ops", "db"]),
        ("nd-past", "low", now - timedelta(days=2), ["ops"]),
        ("nd-none", "high", None, ["ops"]),
    ]
    for key, priority, deadline, tags in todos:
        await put(
            client, key, key, priority=priority, links=["nd-root"], deadlineAt=deadline and iso(deadline), tags=tags
        )
    soon = iso(now + timedelta(days=1))
    await put(client, "nd-blocked", "Blocked", priority="high", links=["nd-root"], deadlineAt=soon, tags=["ops"],
              blockedBy=["nd-soon"])
    await put(client, "nd-done", "Done", priority="high", links=["nd-root"], deadlineAt=soon, tags=["ops"])
    await ok(client, "complete_todo", id="nd-done")

    async def next_ids(**arguments: Any) -> list[str]:
        return await ids(client, "next_todos", under="nd-root", **arguments)

    assert await next_ids() == ["nd-past", "nd-high-soon", "nd-none", "nd-soon", "nd-late"]
    assert await next_ids(tag="ops") == ["nd-past", "nd-high-soon", "nd-none", "nd-late"]
    assert await next_ids(tag="OPS") == await next_ids(tag="ops")
    assert await next_ids(tag="db") == ["nd-high-soon"]
    assert await next_ids(tag="nobody-has-it") == []
    assert await next_ids(tag="ops", limit=1) == ["nd-past"]
    # A todo without a deadline never passes a due filter; dueBefore is strictly before, dueAfter at or after.
    assert await next_ids(dueBefore="overdue") == ["nd-past"]
    assert await next_ids(dueAfter="overdue") == ["nd-high-soon", "nd-soon", "nd-late"]
    week = iso(now + timedelta(days=7))
    assert await next_ids(dueBefore=week) == ["nd-past", "nd-high-soon", "nd-soon"]
    assert await next_ids(dueAfter=soon, dueBefore=week) == ["nd-high-soon", "nd-soon"]
    assert await next_ids(dueAfter=iso(now + timedelta(days=2))) == ["nd-high-soon", "nd-soon", "nd-late"]
    assert await next_ids(dueAfter=iso(now + timedelta(days=2, milliseconds=1))) == ["nd-high-soon", "nd-late"]
    assert await next_ids(tag="ops", dueAfter="overdue") == ["nd-high-soon", "nd-late"]
    assert await next_ids(tag="ops", dueBefore=week, priority="high") == ["nd-high-soon"]
    compact = (await ok(client, "next_todos", under="nd-root", tag="ops", dueBefore="overdue", view="compact")).text
    assert compact == f"nd-past · low · {now - timedelta(days=2):%Y-%m-%d %H:%M} overdue · nd-past #ops"
    # Completing what nd-blocked waits on frees it, and it is then next among the filtered ones.
    await ok(client, "complete_todo", id="nd-soon")
    assert await next_ids(dueBefore=week) == ["nd-past", "nd-blocked", "nd-high-soon"]
    assert await next_ids(tag="ops", dueAfter="overdue") == ["nd-blocked", "nd-high-soon", "nd-late"]
