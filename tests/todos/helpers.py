"""Shared by the Todos end-to-end tests: one call through a real SDK client, and what it answered.

The scenarios are transport-agnostic: the HTTP tests and the stdio tests run the same ones, so both
transports are held to the same contract. Each scenario uses its own id prefix and looks only at its own
todos, so several can share one stdio session (one subprocess) and stay independent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from tests.clients import text_of

TODO_KEYS = [
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
]
ISO_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
SetLimit = Callable[[int], Awaitable[None]]


@dataclass
class Answer:
    text: str
    is_error: bool
    structured: Any

    @property
    def data(self) -> Any:
        """The JSON the text holds (next_todos: the todos to take, before the ones held by you)."""
        return json.loads(self.text.partition(HELD_BY_YOU)[0])

    @property
    def held(self) -> list[Any]:
        """next_todos: the todos shown apart as held by you."""
        apart = self.text.partition(HELD_BY_YOU)[2]
        return json.loads(apart) if apart else []


HELD_BY_YOU = "\nheld by you:\n"
NO_FREE_TODO = "No free todo."


async def call(client: Client, tool: str, /, **arguments: Any) -> Answer:
    result = await client.call_tool(tool, arguments)
    answer = Answer(text_of(result), bool(result.is_error), result.structured_content)
    if not answer.is_error and tool != "get_list_url" and arguments.get("view") != "compact":
        # The text is the seed's JSON; structured content is the same data (lists wrapped in an object).
        if tool == "claim_next":
            claimed = None if answer.text == NO_FREE_TODO else answer.data
            assert answer.structured == {"todo": claimed}
            return answer
        data = answer.data
        expected = {"todos": data} if isinstance(data, list) else data
        if answer.held:
            expected["heldByYou"] = answer.held
        assert answer.structured == expected
    return answer


async def put(client: Client, todo_id: str, name: str, description: str = "", **fields: Any) -> dict[str, Any]:
    answer = await call(client, "put_todo", id=todo_id, name=name, description=description, **fields)
    assert not answer.is_error, answer.text
    return answer.data


async def ids(client: Client, tool: str = "list_todos", /, prefix: str = "", **arguments: Any) -> list[str]:
    answer = await call(client, tool, **arguments)
    assert not answer.is_error, answer.text
    return [todo["id"] for todo in answer.data if todo["id"].startswith(prefix)]


async def usage(client: Client) -> dict[str, int]:
    answer = await call(client, "get_list_usage")
    assert not answer.is_error, answer.text
    return answer.data


# --- scenarios -----------------------------------------------------------------------------------------------


async def scenario_listing(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {
        "get_list_usage",
        "get_list_url",
        "put_todo",
        "list_todos",
        "search_todos",
        "complete_todo",
        "get_todo",
        "delete_todo",
        "reopen_todo",
        "next_todos",
        "update_todo",
        "claim_next",
        "claim_todo",
        "release_todo",
    }
    for tool in tools.values():
        assert tool.description and tool.output_schema and tool.output_schema["type"] == "object"
    put_schema = tools["put_todo"].input_schema
    assert put_schema["required"] == ["id", "name", "description"]
    assert put_schema["properties"]["priority"]["enum"] == ["low", "medium", "high"]
    assert put_schema["properties"]["name"]["maxLength"] == 255
    assert put_schema["properties"]["links"]["maxItems"] == 100
    assert tools["search_todos"].input_schema["properties"]["limit"]["maximum"] == 100
    assert tools["list_todos"].annotations.read_only_hint is True
    assert tools["put_todo"].annotations.read_only_hint is False
    assert tools["delete_todo"].annotations.destructive_hint is True
    assert tools["complete_todo"].annotations.destructive_hint is False
    assert tools["complete_todo"].annotations.idempotent_hint is True
    prompts = (await client.list_prompts()).prompts
    assert [(p.name, [(a.name, a.required) for a in p.arguments]) for p in prompts] == [
        ("start_workspace", [("premise", True)])
    ]


async def scenario_create_defaults(client: Client, uid: str) -> None:
    todo = await put(client, "cd-buy-milk", "Buy milk", "Two **litres**\n\tsemi-skimmed")
    assert list(todo) == TODO_KEYS
    assert todo["id"] == "cd-buy-milk" and todo["uid"] == uid
    assert todo["description"] == "Two **litres**\n\tsemi-skimmed"
    assert todo["priority"] == "medium" and todo["links"] == []
    assert todo["completedAt"] is None and todo["deletedAt"] is None and todo["deadlineAt"] is None
    assert ISO_MS.fullmatch(todo["createdAt"]) and todo["createdAt"] == todo["updatedAt"]
    # Nulls mean "absent"; dates are normalised to UTC; links keep their order without duplicates.
    full = await put(
        client,
        "cd-full",
        "Full",
        "",
        priority=None,
        completedAt="2026-11-30T10:15:42.5+01:00",
        deadlineAt="2026-12-24",
        links=["cd-buy-milk", "cd-root", "cd-buy-milk"],
    )
    assert full["priority"] == "medium"
    assert full["completedAt"] == "2026-11-30T09:15:42.500Z"
    assert full["deadlineAt"] == "2026-12-24T00:00:00.000Z"
    assert full["links"] == ["cd-buy-milk", "cd-root"]
    naive = await put(client, "cd-naive", "Naive", "", deadlineAt="2026-12-24T18:30:00")
    assert naive["deadlineAt"] == "2026-12-24T18:30:00.000Z"
    got = await call(client, "get_todo", id="cd-full")
    assert got.data == full


async def scenario_replace(client: Client) -> None:
    first = await put(
        client,
        "rp-task",
        "First name",
        "first",
        priority="high",
        deadlineAt="2027-01-01",
        links=["rp-root"],
        completedAt="2026-01-01",
    )
    second = await put(client, "rp-task", "Second name", "second")
    assert second["createdAt"] == first["createdAt"]
    assert second["updatedAt"] > first["updatedAt"]
    # Every field is replaced: what the second put left out is back to its default.
    assert (second["name"], second["description"], second["priority"]) == ("Second name", "second", "medium")
    assert second["deadlineAt"] is None and second["completedAt"] is None and second["links"] == []
    deleted = await call(client, "delete_todo", id="rp-task")
    assert not deleted.is_error and ISO_MS.fullmatch(deleted.data["deletedAt"])
    assert (await call(client, "get_todo", id="rp-task")).data["deletedAt"] == deleted.data["deletedAt"]
    restored = await put(client, "rp-task", "Restored", "")
    assert restored["deletedAt"] is None and restored["createdAt"] == first["createdAt"]
    assert await ids(client, prefix="rp-") == ["rp-task"]


async def scenario_list_order(client: Client) -> None:
    await put(client, "lo-low", "low", priority="low")
    await put(client, "lo-med-late", "medium, late deadline", deadlineAt="2031-01-01")
    await put(client, "lo-med-none", "medium, no deadline")
    await put(client, "lo-med-soon", "medium, soon", deadlineAt="2030-01-01T00:00:00Z")
    await put(client, "lo-high", "high", priority="high")
    await put(client, "lo-med-none-2", "medium, no deadline, created later")
    await put(client, "lo-done-old", "done first")
    await put(client, "lo-done-new", "done second")
    await put(client, "lo-gone-old", "deleted first")
    await put(client, "lo-gone-new", "deleted second")
    assert not (await call(client, "complete_todo", id="lo-done-old")).is_error
    assert not (await call(client, "complete_todo", id="lo-done-new")).is_error
    assert not (await call(client, "delete_todo", id="lo-gone-old")).is_error
    assert not (await call(client, "delete_todo", id="lo-gone-new")).is_error
    pending = ["lo-high", "lo-med-soon", "lo-med-late", "lo-med-none", "lo-med-none-2", "lo-low"]
    assert await ids(client, prefix="lo-") == pending
    assert await ids(client, prefix="lo-", includeCompleted=True) == pending + ["lo-done-new", "lo-done-old"]
    assert await ids(client, prefix="lo-", includeDeleted=True) == pending + ["lo-gone-new", "lo-gone-old"]
    assert await ids(client, prefix="lo-", includeCompleted=True, includeDeleted=True) == (
        pending + ["lo-done-new", "lo-done-old", "lo-gone-new", "lo-gone-old"]
    )


async def scenario_not_found_and_extensions(client: Client) -> None:
    for tool in ("complete_todo", "get_todo", "delete_todo", "reopen_todo"):
        answer = await call(client, tool, id="nf-no-such-todo")
        assert answer.is_error and answer.text == "Todo not found", (tool, answer.text)
    await put(client, "nf-task", "Task")
    done = await call(client, "complete_todo", id="nf-task")
    assert ISO_MS.fullmatch(done.data["completedAt"])
    again = await call(client, "complete_todo", id="nf-task")
    assert again.data == done.data  # already completed: returned unchanged
    reopened = await call(client, "reopen_todo", id="nf-task")
    assert reopened.data["completedAt"] is None and reopened.data["updatedAt"] > done.data["updatedAt"]
    assert (await call(client, "reopen_todo", id="nf-task")).data == reopened.data
    gone = await call(client, "delete_todo", id="nf-task")
    assert gone.data["deletedAt"] is not None
    # Only get_todo, put_todo and the list flags see a deleted todo.
    for tool in ("complete_todo", "delete_todo", "reopen_todo"):
        answer = await call(client, tool, id="nf-task")
        assert answer.is_error and answer.text == "Todo not found", (tool, answer.text)
    assert (await call(client, "get_todo", id="nf-task")).data == gone.data
    assert await ids(client, prefix="nf-", includeCompleted=True) == []


async def scenario_usage(client: Client, set_limit: SetLimit) -> None:
    before = await usage(client)
    assert before["maxTasks"] == 1200
    await put(client, "us-a", "a")
    await put(client, "us-b", "b")
    await call(client, "complete_todo", id="us-a")
    await call(client, "delete_todo", id="us-b")
    after = await usage(client)
    assert after["count"] == before["count"] + 2  # completed and deleted todos count
    # 1 of 8 is 12.5%: rounded half up, not to even.
    await set_limit(after["count"] * 8)
    assert await usage(client) == {"count": after["count"], "maxTasks": after["count"] * 8, "percentage": 13}
    await set_limit(1200)


BAD_INPUTS: list[tuple[dict[str, Any], str]] = [
    ({"priority": "urgent"}, "priority must be one of low, medium, high"),
    ({"deadlineAt": "tomorrow"}, "deadlineAt must be an ISO 8601 date or date-time"),
    ({"completedAt": "2026-02-30"}, "completedAt must be an ISO 8601 date or date-time"),
    ({"name": ""}, "name must be 1-255 characters, got 0"),
    ({"name": "n" * 256}, "name must be 1-255 characters, got 256"),
    ({"name": "bell\x07"}, "name must not contain control character U+0007"),
    ({"description": "d" * 20_001}, "description must be 0-20000 characters, got 20001"),
    ({"description": "nul\x00"}, "description must not contain NUL"),
    ({"id": "has space"}, "id must not contain whitespace"),
    ({"id": "tab\tid"}, "id must not contain"),
    ({"id": "i" * 129}, "id must be 1-128 characters, got 129"),
    ({"id": ""}, "id must be 1-128 characters, got 0"),
    ({"links": [f"l{i}" for i in range(101)]}, "links must have at most 100 items, got 101"),
    ({"links": ["ok", "not ok"]}, "links item 1 must not contain whitespace"),
    ({"links": "bi-root"}, "links must be an array"),
    ({"priority": 3}, "priority must be a string"),
    ({"name": None}, "name is required"),
    ({"deadline": "2026-01-01"}, "deadline is not an argument"),
]


async def scenario_bad_input(client: Client) -> None:
    original = await put(client, "bi-task", "Original", "kept", priority="low", links=["bi-root"])
    count = (await usage(client))["count"]
    base = {"id": "bi-task", "name": "Changed", "description": "changed"}
    for change, expected in BAD_INPUTS:
        answer = await call(client, "put_todo", **{**base, **change})
        assert answer.is_error, change
        assert answer.text.startswith(expected), (change, answer.text)
        assert "\n" not in answer.text and "Traceback" not in answer.text
    several = await call(client, "put_todo", id="bi task", name="", description="x", priority="urgent")
    assert several.is_error
    assert several.text == (
        "id must not contain whitespace; name must be 1-255 characters, got 0; "
        "priority must be one of low, medium, high"
    )
    for tool, arguments, expected in [
        ("search_todos", {"query": ""}, "query must be 1-1000 characters, got 0"),
        ("search_todos", {"query": "q" * 1001}, "query must be 1-1000 characters, got 1001"),
        ("search_todos", {"query": "milk", "limit": 0}, "limit must be 1-100, got 0"),
        ("search_todos", {"query": "milk", "limit": 101}, "limit must be 1-100, got 101"),
        ("list_todos", {"includeCompleted": "yes"}, "includeCompleted must be a boolean, got a string"),
        ("complete_todo", {"id": "white space"}, "id must not contain whitespace"),
        ("get_todo", {}, "id is required"),
    ]:
        answer = await call(client, tool, **arguments)
        assert answer.is_error and answer.text == expected, (tool, answer.text)
    # Bad input changes nothing.
    assert (await call(client, "get_todo", id="bi-task")).data == original
    assert (await usage(client))["count"] == count


async def scenario_limit(client: Client, set_limit: SetLimit) -> None:
    count = (await usage(client))["count"]
    await set_limit(count + 2)
    await put(client, "li-1", "one")
    await put(client, "li-2", "two")  # the last one the plan allows
    refused = await call(client, "put_todo", id="li-3", name="three", description="")
    assert refused.is_error
    assert f"{count + 2} todos exist" in refused.text and f"limit is {count + 2}" in refused.text
    assert "/list" in refused.text and "purge" in refused.text and "deleted" in refused.text
    assert (await call(client, "get_todo", id="li-3")).text == "Todo not found"
    replaced = await put(client, "li-2", "two, replaced")  # replacing at the limit still works
    assert replaced["name"] == "two, replaced"
    await call(client, "delete_todo", id="li-1")
    assert (await call(client, "put_todo", id="li-3", name="three", description="")).is_error
    restored = await put(client, "li-1", "one, restored")  # a deleted todo is still one of the count
    assert restored["deletedAt"] is None
    await set_limit(1200)


async def scenario_search(client: Client) -> None:
    await put(client, "se-basement", "Remodel the basement", "Plan the **drywall** and the lighting")
    await put(client, "se-garden", "Water the garden plants", "Tomatoes need it daily")
    await put(client, "se-taxes", "File the taxes", "Collect receipts from the accountant")
    await put(client, "se-done", "Paint the basement door", "")
    await put(client, "se-gone", "Basement flooding insurance", "")
    await call(client, "complete_todo", id="se-done")
    await call(client, "delete_todo", id="se-gone")
    assert (await ids(client, "search_todos", query="basment remodl"))[0] == "se-basement"
    assert (await ids(client, "search_todos", query="drywal"))[0] == "se-basement"  # description only
    assert (await ids(client, "search_todos", query="plants garden"))[0] == "se-garden"
    assert (await call(client, "search_todos", query="zqxjv wqpfz")).text == "[]"
    basement = await ids(client, "search_todos", prefix="se-", query="basement")
    assert "se-basement" in basement and "se-done" not in basement and "se-gone" not in basement
    with_done = await ids(client, "search_todos", prefix="se-", query="basement", includeCompleted=True)
    assert "se-done" in with_done and "se-gone" not in with_done
    assert len(await ids(client, "search_todos", query="the", includeCompleted=True, limit=2)) == 2
    # An edit is seen by the next search (the cached index is rebuilt for the new data).
    await put(client, "se-taxes", "Renew the passport", "")
    assert "se-taxes" not in await ids(client, "search_todos", query="taxes accountant")
    assert (await ids(client, "search_todos", query="pasport"))[0] == "se-taxes"


async def scenario_prompt(client: Client) -> None:
    result = await client.get_prompt("start_workspace", {"premise": "We are remodelling the basement"})
    text = " ".join(message.content.text for message in result.messages)
    assert "We are remodelling the basement" in text
    assert "put_todo" in text and "kebab-case" in text and "links" in text and "root" in text
    assert "Show me the root todo's id" in text
    assert "claim_next" in text and "leaseToken" in text and "release_todo" in text and "complete_todo" in text
    for bad in ({}, {"premise": "   "}):
        with pytest.raises(MCPError, match="premise is required"):
            await client.get_prompt("start_workspace", bad)


async def scenario_two_users(alice: Client, alice_uid: str, bob: Client, bob_uid: str) -> None:
    a = await put(alice, "tu-buy-milk", "Alice buys oat milk", "for alice", priority="high")
    b = await put(bob, "tu-buy-milk", "Bob buys cow milk", "for bob")
    assert (a["uid"], b["uid"]) == (alice_uid, bob_uid)
    assert b["createdAt"] >= a["createdAt"] and b["priority"] == "medium"
    assert (await call(alice, "get_todo", id="tu-buy-milk")).data == a  # bob's put did not overwrite it
    await put(bob, "tu-bob-only", "Bob's secret plan", "")
    for client, uid, name in ((alice, alice_uid, "Alice buys oat milk"), (bob, bob_uid, "Bob buys cow milk")):
        listed = (await call(client, "list_todos", includeCompleted=True, includeDeleted=True)).data
        assert {todo["uid"] for todo in listed} == {uid}
        assert [t["name"] for t in listed if t["id"] == "tu-buy-milk"] == [name]
        found = (await call(client, "search_todos", query="milk", includeCompleted=True)).data
        assert {todo["uid"] for todo in found} == {uid}
    assert (await call(alice, "get_todo", id="tu-bob-only")).text == "Todo not found"
    assert "tu-bob-only" not in await ids(alice, "search_todos", query="secret plan")
    extra: dict[str, dict[str, str]] = {
        "claim_todo": {"by": "alice-agent"}, "release_todo": {"by": "alice-agent"}, "update_todo": {"name": "x"}
    }
    for tool in ("complete_todo", "delete_todo", "reopen_todo", *extra):
        assert (await call(alice, tool, id="tu-bob-only", **extra.get(tool, {}))).text == "Todo not found"
    # Claims are between one user's agents: Alice's claim is on her todo only, and Bob's agents never see it.
    alices = (await call(alice, "claim_todo", id="tu-buy-milk", by="alice-agent")).data
    assert alices["claimedBy"] == "alice-agent"
    assert (await call(bob, "get_todo", id="tu-buy-milk")).data == b
    assert "alice-agent" not in (await call(bob, "list_todos", view="compact")).text
    bobs = (await call(bob, "claim_todo", id="tu-buy-milk", by="bob-agent")).data
    assert bobs["claimedBy"] == "bob-agent"
    assert (await call(alice, "get_todo", id="tu-buy-milk")).data["claimedBy"] == "alice-agent"
    # Alice's lease token is nothing on Bob's todo, and Bob's writes of his own todo are his.
    for tool in ("update_todo", "complete_todo", "delete_todo", "reopen_todo"):
        fields = {"name": "x"} if tool == "update_todo" else {}
        assert (await call(bob, tool, id="tu-bob-only", leaseToken=alices["leaseToken"], **fields)).is_error is False
        await call(bob, "put_todo", id="tu-bob-only", name="Bob's secret plan", description="")
    assert not (await call(bob, "release_todo", id="tu-buy-milk", leaseToken=bobs["leaseToken"])).is_error
    # claim_next and next_todos never reach the other user's todos: Bob's only free todo is his own.
    await call(alice, "put_todo", id="tu-alice-free", name="Alice's free todo", description="", priority="high")
    bob_next = await call(bob, "next_todos", by="bob-agent")
    assert {todo["uid"] for todo in bob_next.data} == {bob_uid} and "tu-alice-free" not in bob_next.text
    taken = [(await call(bob, "claim_next", by="bob-agent")).text for _ in range(10)]
    claimed = [json.loads(text) for text in taken[: taken.index(NO_FREE_TODO)]]
    assert {todo["uid"] for todo in claimed} == {bob_uid} and "tu-buy-milk" in {todo["id"] for todo in claimed}
    assert "claimedBy" not in (await call(alice, "get_todo", id="tu-alice-free")).data
    done = await call(alice, "complete_todo", id="tu-buy-milk", leaseToken=alices["leaseToken"])
    assert done.data["completedAt"] is not None
    assert (await call(bob, "get_todo", id="tu-buy-milk")).data["completedAt"] is None
    await call(bob, "delete_todo", id="tu-buy-milk")
    assert (await call(alice, "get_todo", id="tu-buy-milk")).data["deletedAt"] is None
