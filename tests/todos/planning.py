"""Planning scenarios (filters, tags, blockedBy, next_todos, the compact and tree views), run over HTTP and stdio.

Like ``helpers``' scenarios, each keeps to its own id prefix and narrows every list to its own todos (with
``under`` or ``tag``), so they can share one session with the others.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from mcp.client import Client

from tests.todos.helpers import TODO_KEYS, Answer, call, ids, put


def seed_json(todo: dict[str, Any]) -> str:
    """The seed's exact bytes for a todo: its eleven keys in order, compact separators, readable non-ASCII."""
    return json.dumps({key: todo[key] for key in TODO_KEYS}, ensure_ascii=False, separators=(",", ":"))


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


async def ok(client: Client, tool: str, /, **arguments: Any) -> Answer:
    answer = await call(client, tool, **arguments)
    assert not answer.is_error, (tool, arguments, answer.text)
    return answer


async def refused(client: Client, tool: str, /, **arguments: Any) -> str:
    answer = await call(client, tool, **arguments)
    assert answer.is_error, (tool, arguments, answer.text)
    assert "\n" not in answer.text and "Traceback" not in answer.text
    return answer.text


async def scenario_seed_answers_unchanged(client: Client, uid: str | None) -> None:
    """A todo made as the seed makes them (no tags, no blockedBy) is answered in exactly the seed's bytes."""
    made = await ok(
        client,
        "put_todo",
        id="sb-root",
        name="Plan the “move”",
        description="boxes\n\tand tape",
        priority="high",
        deadlineAt="2030-05-01T10:00:00+02:00",
        links=["sb-elsewhere"],
    )
    root = made.data
    uid = uid or root["uid"]  # over stdio the test learns the user's uid from the first answer
    assert list(root) == TODO_KEYS and root["uid"] == uid
    assert made.text == seed_json(root)
    assert made.text == (
        '{"id":"sb-root","uid":"' + uid + '","name":"Plan the “move”","description":"boxes\\n\\tand tape",'
        '"priority":"high","createdAt":"' + root["createdAt"] + '","updatedAt":"' + root["updatedAt"] + '",'
        '"completedAt":null,"deletedAt":null,"deadlineAt":"2030-05-01T08:00:00.000Z","links":["sb-elsewhere"]}'
    )
    child = (await ok(client, "put_todo", id="sb-child", name="Pack books", description="", links=["sb-root"])).data
    for tool, arguments, expected in [
        ("get_todo", {"id": "sb-root"}, seed_json(root)),
        ("search_todos", {"query": "pack books"}, None),
        ("list_todos", {}, None),
    ]:
        answer = await ok(client, tool, **arguments)
        if expected is not None:
            assert answer.text == expected
        else:
            # The default answer is the seed's compact array of seed-shaped todos, nothing else.
            assert answer.text == "[" + ",".join(seed_json(todo) for todo in answer.data) + "]"
            assert all(list(todo) == TODO_KEYS for todo in answer.data)
    done = await ok(client, "complete_todo", id="sb-child")
    assert done.text == seed_json(done.data) and done.data["createdAt"] == child["createdAt"]
    reopened = await ok(client, "reopen_todo", id="sb-child")
    assert reopened.text == seed_json(reopened.data) and reopened.data["completedAt"] is None
    deleted = await ok(client, "delete_todo", id="sb-child")
    assert deleted.text == seed_json(deleted.data) and deleted.data["deletedAt"] is not None
    assert (await ok(client, "get_todo", id="sb-child")).text == deleted.text
    usage = await ok(client, "get_list_usage")
    assert usage.text == '{{"count":{count},"maxTasks":{maxTasks},"percentage":{percentage}}}'.format(**usage.data)


async def scenario_tags(client: Client) -> None:
    tagged = await put(client, "tg-api", "Build the API", tags=["Backend", "needs-review", "backend", "日本"])
    assert list(tagged) == [*TODO_KEYS, "tags"]
    assert tagged["tags"] == ["backend", "needs-review", "日本"]
    await put(client, "tg-ui", "Build the UI", tags=["frontend"], links=["tg-api"])
    await put(client, "tg-plain", "No tags at all")
    assert await ids(client, prefix="tg-", tag="BACKEND") == ["tg-api"]
    assert await ids(client, prefix="tg-", tag="frontend") == ["tg-ui"]
    assert await ids(client, "search_todos", prefix="tg-", query="build", tag="backend") == ["tg-api"]
    for tags, expected in [
        (["two words"], "tags item 0 must be a lowercase word"),
        (["ok", "-dash"], "tags item 1 must be a lowercase word"),
        ([f"t{i}" for i in range(21)], "tags must have at most 20 items, got 21"),
        (["x" * 41], "tags item 0 must be 1-40 characters, got 41"),
        ("backend", "tags must be an array"),
    ]:
        text = await refused(client, "put_todo", id="tg-api", name="Changed", description="", tags=tags)
        assert text.startswith(expected), text
    assert (await ok(client, "get_todo", id="tg-api")).data == tagged  # refused input changed nothing
    assert await refused(client, "list_todos", tag="no spaces") == (
        "tag must be a lowercase word of letters and digits, hyphens or underscores allowed inside, like needs-review"
    )
    # A replace without tags clears them, as every other field, and the JSON is the seed's again.
    plain = await ok(client, "put_todo", id="tg-api", name="Build the API", description="")
    assert list(plain.data) == TODO_KEYS and plain.text == seed_json(plain.data)


async def scenario_blocked(client: Client) -> None:
    await put(client, "bk-root", "Ship the release")
    await put(client, "bk-schema", "Design the schema", links=["bk-root"])
    await put(client, "bk-api", "Build the API", links=["bk-root"], blockedBy=["bk-schema"])
    ui = await put(client, "bk-ui", "Build the UI", links=["bk-root"], blockedBy=["bk-api", "bk-schema", "bk-api"])
    assert list(ui) == [*TODO_KEYS, "blockedBy"] and ui["blockedBy"] == ["bk-api", "bk-schema"]
    assert await refused(client, "put_todo", id="bk-schema", name="x", description="", blockedBy=["bk-ui"]) == (
        "blockedBy would make a cycle: bk-schema → bk-ui → bk-schema; remove one of these blockers"
    )
    assert await refused(client, "put_todo", id="bk-api", name="x", description="", blockedBy=["bk-api"]) == (
        "blockedBy item 0 is the todo itself (bk-api); a todo cannot wait on itself"
    )
    assert await refused(client, "put_todo", id="bk-new", name="x", description="", blockedBy=["bk-nope"]) == (
        "blockedBy item 0 names no todo of yours: bk-nope"
    )
    await put(client, "bk-gone", "Deleted one")
    await ok(client, "delete_todo", id="bk-gone")
    assert await refused(client, "put_todo", id="bk-new", name="x", description="", blockedBy=["bk-gone"]) == (
        "blockedBy item 0 names a deleted todo: bk-gone"
    )
    assert (await refused(client, "put_todo", id="bk-new", name="x", description="", blockedBy=["a b"])).startswith(
        "blockedBy item 0 must not contain whitespace"
    )
    assert (await call(client, "get_todo", id="bk-new")).text == "Todo not found"  # nothing was made
    # Only what nothing open blocks is next; completing a blocker frees what waited on it.
    assert await ids(client, "next_todos", under="bk-root") == ["bk-root", "bk-schema"]
    compact = (await ok(client, "list_todos", under="bk-root", view="compact")).text
    assert compact.splitlines()[1:] == [
        "  bk-schema · medium · - · Design the schema",
        "  bk-api · medium · - · Build the API [blocked by bk-schema]",
        "  bk-ui · medium · - · Build the UI [blocked by bk-api, bk-schema]",
    ]
    await ok(client, "complete_todo", id="bk-schema")
    assert await ids(client, "next_todos", under="bk-root") == ["bk-root", "bk-api"]
    await ok(client, "complete_todo", id="bk-api")
    assert await ids(client, "next_todos", under="bk-root") == ["bk-root", "bk-ui"]
    await ok(client, "reopen_todo", id="bk-api")
    assert await ids(client, "next_todos", under="bk-root") == ["bk-root", "bk-api"]
    # A deleted blocker holds nothing up any more.
    await ok(client, "delete_todo", id="bk-api")
    assert await ids(client, "next_todos", under="bk-root") == ["bk-root", "bk-ui"]


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
    expected = [key for key, _, _ in order[:4]] + ["nx-med-none-old", "nx-med-none-new", "nx-root"]
    assert await ids(client, "next_todos", under="nx-root") == expected
    assert await ids(client, "next_todos", under="nx-root", limit=3) == expected[:3]
    assert await ids(client, "next_todos", under="nx-root", priority="medium") == expected[3:6]
    compact = (await ok(client, "next_todos", under="nx-root", view="compact", limit=1)).text
    assert compact == f"nx-overdue-low · low · {order[0][2]:%Y-%m-%d %H:%M} overdue · nx-overdue-low"
    # The compact lines keep the order to take them: a sub-task is not moved under its root (nx-root, last).
    lines = (await ok(client, "next_todos", under="nx-root", view="compact")).text.splitlines()
    assert [line.split(" · ")[0] for line in lines] == expected
    assert (await ok(client, "next_todos", under="nx-done", view="compact")).text == "No todos."
    assert (await ok(client, "next_todos", under="nx-done")).text == "[]"


async def scenario_views(client: Client) -> None:
    await put(client, "vw-root", "Remodel the basement", "All of it", priority="high", deadlineAt="2030-03-01")
    await put(client, "vw-walls", "Drywall", "Four walls", links=["vw-root"], deadlineAt="2030-02-01T17:30:00Z")
    await put(client, "vw-paint", "Paint the walls", links=["vw-walls", "vw-root"], tags=["diy"])
    await put(client, "vw-light", "Lighting", priority="low", links=["vw-root"], blockedBy=["vw-walls"])
    await put(client, "vw-done", "Buy tools", links=["vw-root"])
    await ok(client, "complete_todo", id="vw-done")
    default = await ok(client, "list_todos", under="vw-root", includeCompleted=True)
    compact = await ok(client, "list_todos", under="vw-root", includeCompleted=True, view="compact")
    assert compact.text == "\n".join(
        [
            "vw-root · high · 2030-03-01 · Remodel the basement",
            "  vw-walls · medium · 2030-02-01 17:30 · Drywall",
            "    vw-paint · medium · - · Paint the walls #diy",
            "  vw-light · low · - · Lighting [blocked by vw-walls]",
            "  vw-done · medium · - · Buy tools [done]",
        ]
    )
    # The same todos as JSON travel in structured content, for programs.
    assert compact.structured == {"todos": default.data}
    assert len(compact.text) * 3 <= len(default.text)
    tree = await ok(client, "list_todos", under="vw-root", includeCompleted=True, view="tree")
    assert [todo["id"] for todo in tree.data] == ["vw-root"]
    root = tree.data[0]
    assert list(root) == [*TODO_KEYS, "subtasks"]
    assert [child["id"] for child in root["subtasks"]] == ["vw-walls", "vw-light", "vw-done"]
    walls = root["subtasks"][0]
    assert [child["id"] for child in walls["subtasks"]] == ["vw-paint"] and "subtasks" not in walls["subtasks"][0]
    assert walls["subtasks"][0]["tags"] == ["diy"] and root["subtasks"][1]["blockedBy"] == ["vw-walls"]
    assert tree.structured == {"todos": tree.data}
    # A search lists its hits in rank order in every view; a sub-task names its parent when both were found.
    found = await ok(client, "search_todos", query="walls", under="vw-root", view="compact")
    ranked = await ids(client, "search_todos", query="walls", under="vw-root")
    assert [line.split(" · ")[0] for line in found.text.splitlines()] == ranked == ["vw-paint", "vw-walls"]
    assert found.text.splitlines()[0].endswith("#diy (in: Drywall)")
    deleted = await ok(client, "delete_todo", id="vw-light")
    assert deleted.data["blockedBy"] == ["vw-walls"]
    shown = await ok(client, "list_todos", under="vw-root", includeDeleted=True, view="compact")
    assert shown.text.splitlines()[-1] == "  vw-light · low · - · Lighting [deleted]"
    assert (await ok(client, "list_todos", under="vw-done", view="compact")).text == "No todos."


async def scenario_ranked_views(client: Client) -> None:
    """The best match stays first in compact and tree: a sub-task found before its parent is not moved under it."""
    await put(client, "rk-root", "Ship version two", "Tag it, then announce the notes")
    await put(client, "rk-notes", "Write the release notes", "What changed since one", links=["rk-root"])
    await put(client, "rk-other", "Release checklist", "Notes for next time")
    ranked = await ids(client, "search_todos", query="relase notes", under="rk-root")
    assert ranked[0] == "rk-notes" and "rk-root" in ranked  # the sub-task ranks before its parent
    compact = (await ok(client, "search_todos", query="relase notes", under="rk-root", view="compact")).text
    assert [line.split(" · ")[0] for line in compact.splitlines()] == ranked
    assert compact.splitlines()[0].endswith("Write the release notes (in: Ship version two)")
    tree = await ok(client, "search_todos", query="relase notes", under="rk-root", view="tree")
    assert [todo["id"] for todo in tree.data] == ranked and not any("subtasks" in todo for todo in tree.data)
    everywhere = await ok(client, "search_todos", query="relase notes", view="compact")
    assert [line.split(" · ")[0] for line in everywhere.text.splitlines()] == \
        await ids(client, "search_todos", query="relase notes")


async def scenario_next_default_limit(client: Client) -> None:
    """Without a limit, next_todos answers its first ten: the schema's default, and what the tool does."""
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert listed["next_todos"].input_schema["properties"]["limit"]["default"] == 10
    await put(client, "nl-root", "Twelve steps", priority="low")
    steps = [f"nl-{number:02d}" for number in range(1, 13)]
    for key in steps:  # medium, no deadline: taken oldest first, all before the low root
        await put(client, key, f"Step {key}", links=["nl-root"])
    await put(client, "nl-waits", "Waits on the first", priority="high", links=["nl-root"], blockedBy=["nl-01"])
    await put(client, "nl-done", "Already done", priority="high", links=["nl-root"])
    await ok(client, "complete_todo", id="nl-done")
    everything = [*steps, "nl-root"]  # 13 eligible: nl-waits is blocked, nl-done completed
    assert await ids(client, "next_todos", under="nl-root", limit=200) == everything
    default = await ok(client, "next_todos", under="nl-root")
    assert [todo["id"] for todo in default.data] == everything[:10]
    assert default.text == (await ok(client, "next_todos", under="nl-root", limit=10)).text
    compact = (await ok(client, "next_todos", under="nl-root", view="compact")).text.splitlines()
    assert [line.split(" · ")[0] for line in compact] == everything[:10]
    tree = (await ok(client, "next_todos", under="nl-root", view="tree")).data
    # nl-root is eleventh, so not in the answer: each step is a root of its own, still in the order to take them.
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

    assert await next_ids() == ["nd-past", "nd-high-soon", "nd-none", "nd-soon", "nd-late", "nd-root"]
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


def _tree_edges(nodes: list[dict[str, Any]], parent: str | None = None) -> list[tuple[str | None, str]]:
    """(parent id, id) for every node of a tree answer, depth first, checking each node is a Todo plus subtasks."""
    edges: list[tuple[str | None, str]] = []
    for node in nodes:
        extra = [key for key in node if key not in TODO_KEYS]
        assert set(extra) <= {"tags", "blockedBy", "subtasks"} and list(node)[: len(TODO_KEYS)] == TODO_KEYS
        assert node.get("subtasks", [None]) != []  # present only when not empty
        edges.append((parent, node["id"]))
        edges += _tree_edges(node.get("subtasks", []), node["id"])
    return edges


async def scenario_tree_on_search_and_next(client: Client) -> None:
    """view "tree" on search_todos and next_todos: the same todos as the JSON, nested under the parents found."""
    await put(client, "tr-house", "Paint the house", "Outside first", priority="low")
    await put(client, "tr-walls", "Paint the walls", links=["tr-house"], priority="high")
    await put(client, "tr-trim", "Paint the trim", links=["tr-walls", "tr-house"], tags=["detail"])
    await put(client, "tr-shop", "Buy brushes", links=["tr-house"])
    await put(client, "tr-dry", "Let it dry", links=["tr-house"], priority="high", blockedBy=["tr-walls"])
    # search_todos: the hits in rank order, in the tree view too (a ranking is not regrouped under parents;
    # each hit's links still name its parent).
    flat = await ok(client, "search_todos", query="paint", under="tr-house")
    tree = await ok(client, "search_todos", query="paint", under="tr-house", view="tree")
    assert {todo["id"] for todo in flat.data} == {"tr-house", "tr-walls", "tr-trim"}
    assert tree.data == flat.data and _tree_edges(tree.data) == [(None, todo["id"]) for todo in flat.data]
    trim = {todo["id"]: todo for todo in tree.data}["tr-trim"]
    assert trim["links"] == ["tr-walls", "tr-house"] and trim["tags"] == ["detail"]
    # Only the sub-task was found: it is a root of the answer (its parent is not in it), with no subtasks key.
    alone = await ok(client, "search_todos", query="trim", under="tr-house", view="tree")
    assert [todo["id"] for todo in alone.data] == ["tr-trim"] and list(alone.data[0]) == [*TODO_KEYS, "tags"]
    assert (await ok(client, "search_todos", query="zqxjv wqpfz", under="tr-house", view="tree")).text == "[]"
    # next_todos: siblings keep the order to take them; tr-dry is blocked, so it is in neither answer.
    order = ["tr-walls", "tr-trim", "tr-shop", "tr-house"]
    assert await ids(client, "next_todos", under="tr-house") == order
    nested = (await ok(client, "next_todos", under="tr-house", view="tree")).data
    assert _tree_edges(nested) == [(None, "tr-house"), ("tr-house", "tr-walls"), ("tr-walls", "tr-trim"),
                                   ("tr-house", "tr-shop")]
    # With a limit tr-house falls outside the answer: tr-walls is a root of it, tr-trim still under it.
    cut = (await ok(client, "next_todos", under="tr-house", view="tree", limit=2)).data
    assert _tree_edges(cut) == [(None, "tr-walls"), ("tr-walls", "tr-trim")]
    three = (await ok(client, "next_todos", under="tr-house", view="tree", limit=3)).data
    assert _tree_edges(three) == [(None, "tr-walls"), ("tr-walls", "tr-trim"), (None, "tr-shop")]
    assert (await ok(client, "next_todos", under="tr-shop", tag="detail", view="tree")).text == "[]"


ListOwner = Callable[[str], Awaitable[str]]


async def scenario_idempotent_hints(client: Client, list_owner: ListOwner, username: str) -> None:
    """Every tool tools/list marks idempotentHint answers the same twice and changes nothing the second time;
    delete_todo is not marked (a second delete answers `Todo not found`, as for any deleted todo)."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    idempotent = {name for name, tool in tools.items() if tool.annotations and tool.annotations.idempotent_hint}
    assert not (tools["delete_todo"].annotations and tools["delete_todo"].annotations.idempotent_hint)
    await put(client, "ip-root", "Idempotence root", "the same answer twice", priority="high", deadlineAt="2030-01-01")
    await put(client, "ip-first", "Done first", links=["ip-root"])
    await put(client, "ip-closed", "Closed before", links=["ip-root"], completedAt="2026-01-01T08:00:00Z")
    await put(client, "ip-gone", "Deleted once", links=["ip-root"])
    twice: dict[str, list[dict[str, Any]]] = {
        # The writes first, then the reads see what they left.
        "put_todo": [
            {"id": "ip-new", "name": "Made twice", "description": "same", "priority": "low", "links": ["ip-root"],
             "deadlineAt": "2030-02-01T10:00:00+01:00", "tags": ["Twice"], "blockedBy": ["ip-first"]},
            {"id": "ip-first", "name": "Done first", "description": "", "links": ["ip-root"]},  # as it already is
            {"id": "ip-gone", "name": "Restored", "description": "", "links": ["ip-root"]},  # deleted below first
        ],
        "complete_todo": [{"id": "ip-first"}],
        "reopen_todo": [{"id": "ip-closed"}],
        "update_todo": [{"id": "ip-root", "description": "changed once"}, {"id": "ip-first", "deadlineAt": None}],
        "release_todo": [{"id": "ip-root", "by": "ip-agent"}],
        "get_todo": [{"id": "ip-root"}, {"id": "ip-gone"}],
        "list_todos": [
            {"under": "ip-root"},
            {"under": "ip-root", "includeCompleted": True, "includeDeleted": True, "view": "compact"},
            {"under": "ip-root", "view": "tree", "tag": "twice"},
        ],
        "search_todos": [{"query": "idempotence"}, {"query": "made twice", "under": "ip-root", "view": "tree"}],
        "next_todos": [{"under": "ip-root"}, {"under": "ip-root", "view": "compact", "limit": 2}],
        "get_list_usage": [{}],
    }
    # get_list_url may answer another link the second time (a new one once its link is past half its life), so it
    # is checked apart, below: both links must open the caller's list.
    assert idempotent == {*twice, "get_list_url"}, "a tool's idempotentHint changed: say here how to call it twice"

    async def state() -> tuple[str, str]:
        listed = await ok(client, "list_todos", under="ip-root", includeCompleted=True, includeDeleted=True)
        return listed.text, (await ok(client, "get_list_usage")).text

    await ok(client, "delete_todo", id="ip-gone")
    await ok(client, "claim_todo", id="ip-root", by="ip-agent")  # for release_todo to hand back
    for tool, calls in twice.items():
        for arguments in calls:
            first = await ok(client, tool, **arguments)
            before = await state()
            second = await ok(client, tool, **arguments)
            assert (second.text, second.structured) == (first.text, first.structured), (tool, arguments)
            assert await state() == before, (tool, arguments)  # the second call changed nothing
    links = [(await ok(client, "get_list_url")).text for _ in range(2)]
    assert [await list_owner(link) for link in links] == [username, username]
    # Not idempotent: the first delete answers the deleted todo, the second `Todo not found`, and changes nothing.
    deleted = await ok(client, "delete_todo", id="ip-new")
    before = await state()
    assert deleted.data["deletedAt"] is not None
    assert (await call(client, "delete_todo", id="ip-new")).text == "Todo not found"
    assert await state() == before
