"""Planning scenarios (filters, tags, blockedBy, next_todos, the compact and tree views), run over HTTP and stdio.

Like ``helpers``' scenarios, each keeps to its own id prefix and narrows every list to its own todos (with
``under`` or ``tag``), so they can share one session with the others.
"""

from __future__ import annotations

import json
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
    # A search lists its hits in rank order; a sub-task follows its parent only when both were found.
    found = await ok(client, "search_todos", query="walls", under="vw-root", view="compact")
    assert [line.split(" · ")[0] for line in found.text.splitlines()] == ["vw-walls", "  vw-paint"]
    deleted = await ok(client, "delete_todo", id="vw-light")
    assert deleted.data["blockedBy"] == ["vw-walls"]
    shown = await ok(client, "list_todos", under="vw-root", includeDeleted=True, view="compact")
    assert shown.text.splitlines()[-1] == "  vw-light · low · - · Lighting [deleted]"
    assert (await ok(client, "list_todos", under="vw-done", view="compact")).text == "No todos."
