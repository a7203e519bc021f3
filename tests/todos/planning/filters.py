"""The filters (dueBefore, dueAfter, priority, under, tag) on list_todos, search_todos and next_todos, and
priority on a search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from mcp.client import Client

from tests.todos.helpers import ids, put
from tests.todos.planning.common import iso, ok, refused


async def scenario_filters(client: Client) -> None:
    now = datetime.now(UTC)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    week_end = midnight + timedelta(days=7 - midnight.weekday())
    due = {
        "fl-past": now - timedelta(days=3),
        "fl-today": midnight + timedelta(hours=12),
        "fl-tomorrow": midnight + timedelta(days=1, hours=12),
        "fl-later": midnight + timedelta(days=8, hours=12),
    }
    high = {"fl-today", "fl-tomorrow"}
    await put(client, "fl-root", "Filters root", priority="low")
    for key, moment in due.items():
        priority = "high" if key in high else "medium"
        await put(client, key, key, links=["fl-root"], deadlineAt=iso(moment), priority=priority)
    await put(client, "fl-grandchild", "Deeper", links=["fl-later", "fl-root"])
    await put(client, "fl-outside", "Not under the root", deadlineAt=iso(now - timedelta(days=3)))

    async def under(**arguments: Any) -> set[str]:
        return set(await ids(client, under="fl-root", **arguments))

    everything = {"fl-root", *due, "fl-grandchild"}
    assert await under() == everything
    assert set(await ids(client, under="fl-later")) == {"fl-later", "fl-grandchild"}
    assert await under(dueBefore="today") == {"fl-past", "fl-today"}
    assert await under(dueAfter="Today") == {"fl-today", "fl-tomorrow", "fl-later"}
    assert await under(dueBefore="tomorrow") == {"fl-past", "fl-today", "fl-tomorrow"}
    assert await under(dueAfter="tomorrow") == {"fl-tomorrow", "fl-later"}
    assert await under(dueBefore="this  week") == {key for key, moment in due.items() if moment < week_end}
    assert await under(dueAfter="this week") == {"fl-today", "fl-tomorrow", "fl-later"} | (
        {"fl-past"} if due["fl-past"] >= week_end - timedelta(days=7) else set()
    )
    overdue = await under(dueBefore="overdue")
    assert "fl-past" in overdue and not overdue & {"fl-tomorrow", "fl-later", "fl-root"}
    assert await under(dueAfter="overdue") == {"fl-tomorrow", "fl-later"} | (overdue ^ {"fl-past", "fl-today"})
    # ISO 8601: dueBefore is strictly before, dueAfter at or after, so the two tile the timeline.
    assert await under(dueAfter=iso(due["fl-tomorrow"])) == {"fl-tomorrow", "fl-later"}
    assert await under(dueBefore=iso(due["fl-tomorrow"])) == {"fl-past", "fl-today"}
    assert await under(dueAfter=iso(due["fl-today"])[:10], dueBefore=iso(due["fl-later"])) == {
        "fl-today",
        "fl-tomorrow",
    }
    assert await under(priority="high") == {"fl-today", "fl-tomorrow"}
    assert await under(priority="low") == {"fl-root"}
    assert set(await ids(client, "search_todos", query="fl", under="fl-root", dueBefore="today")) <= everything
    # Overdue first; fl-today is overdue too after today's noon, and then its high priority puts it first.
    assert await ids(client, "next_todos", under="fl-root", limit=2) in (
        ["fl-past", "fl-today"],
        ["fl-today", "fl-past"],
    )
    # Bad values: the same plain sentences as the other fields, every bad field named, nothing answered.
    rule = "an ISO 8601 date or date-time such as 2026-11-30, or one of today, tomorrow, this week, overdue"
    for tool, extra in (("list_todos", {}), ("search_todos", {"query": "fl"}), ("next_todos", {})):
        assert await refused(client, tool, **extra, dueBefore="someday") == f"dueBefore must be {rule}"
        assert await refused(client, tool, **extra, dueAfter="2026-02-30", priority="urgent") == (
            f"dueAfter must be {rule}; priority must be one of low, medium, high"
        )
        assert await refused(client, tool, **extra, under="fl-nope") == "Todo not found"
        assert await refused(client, tool, **extra, under="has space") == "under must not contain whitespace"
        assert await refused(client, tool, **extra, view="yaml") == "view must be one of json, compact, tree"
        assert await refused(client, tool, **extra, tag=7) == "tag must be a string, got an integer"
    assert await refused(client, "next_todos", limit=0) == "limit must be 1-200, got 0"


async def scenario_search_priority(client: Client) -> None:
    await put(client, "sp-high", "Zephyr release notes", priority="high")
    await put(client, "sp-high-done", "Zephyr launch checklist", priority="high")
    await put(client, "sp-medium", "Zephyr release blog post")
    await put(client, "sp-low", "Zephyr release party", priority="low", tags=["fun"])
    await put(client, "sp-low-other", "Unrelated chores", priority="low")
    await ok(client, "complete_todo", id="sp-high-done")
    assert set(await ids(client, "search_todos", prefix="sp-", query="zephyr")) == {"sp-high", "sp-medium", "sp-low"}
    assert await ids(client, "search_todos", prefix="sp-", query="zephyr", priority="high") == ["sp-high"]
    assert await ids(client, "search_todos", prefix="sp-", query="zephyr", priority="medium") == ["sp-medium"]
    assert await ids(client, "search_todos", prefix="sp-", query="zephyr", priority="low") == ["sp-low"]
    assert set(
        await ids(client, "search_todos", prefix="sp-", query="zephyr", priority="high", includeCompleted=True)
    ) == {"sp-high", "sp-high-done"}
    assert await ids(client, "search_todos", prefix="sp-", query="zephyr", priority="low", tag="fun") == ["sp-low"]
    assert await ids(client, "search_todos", prefix="sp-", query="zephyr", priority="medium", tag="fun") == []
    # A typo still finds it, and the priority still narrows it; a bad priority is refused in the usual sentence.
    assert await ids(client, "search_todos", prefix="sp-", query="zephir", priority="low") == ["sp-low"]
    assert await refused(client, "search_todos", query="zephyr", priority="High") == (
        "priority must be one of low, medium, high"
    )
