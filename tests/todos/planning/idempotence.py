"""The tools marked idempotentHint answer the same twice and change nothing the second time; delete_todo, not
marked, answers `Todo not found` the second time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.client import Client

from tests.todos.helpers import call, put
from tests.todos.planning.common import ok

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
    # Claimed for release_todo to hand back; the writes of it show the lease token, as its holder does.
    lease = (await ok(client, "claim_todo", id="ip-root", by="ip-agent")).data["leaseToken"]
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
        "update_todo": [{"id": "ip-root", "description": "changed once", "leaseToken": lease},
                        {"id": "ip-first", "deadlineAt": None}],
        "release_todo": [{"id": "ip-root", "leaseToken": lease}],
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
