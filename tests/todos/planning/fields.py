"""The planning fields and the seed: a seed-shaped todo is answered in the seed's bytes; tags; blockedBy."""

from __future__ import annotations

from mcp.client import Client

from tests.todos.helpers import TODO_KEYS, call, ids, put
from tests.todos.planning.common import ok, refused, seed_json


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
    # Only what nothing open blocks is next (bk-root waits on its sub-tasks); completing a blocker frees what
    # waited on it.
    assert await ids(client, "next_todos", under="bk-root") == ["bk-schema"]
    compact = (await ok(client, "list_todos", under="bk-root", view="compact")).text
    assert compact.splitlines()[1:] == [
        "  bk-schema · medium · - · Design the schema",
        "  bk-api · medium · - · Build the API [blocked by bk-schema]",
        "  bk-ui · medium · - · Build the UI [blocked by bk-api, bk-schema]",
    ]
    await ok(client, "complete_todo", id="bk-schema")
    assert await ids(client, "next_todos", under="bk-root") == ["bk-api"]
    await ok(client, "complete_todo", id="bk-api")
    assert await ids(client, "next_todos", under="bk-root") == ["bk-ui"]
    await ok(client, "reopen_todo", id="bk-api")
    assert await ids(client, "next_todos", under="bk-root") == ["bk-api"]
    # A deleted blocker holds nothing up any more.
    await ok(client, "delete_todo", id="bk-api")
    assert await ids(client, "next_todos", under="bk-root") == ["bk-ui"]
