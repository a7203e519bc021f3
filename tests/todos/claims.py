"""Claims and partial updates end to end, the same scenarios over HTTP and stdio.

Two agents share one user's list: ``first`` and ``second`` are two SDK clients of that user, each naming itself
(``first_by``/``second_by``: the ``by`` a scenario sends, or None where the client's own name is the default).
``expire`` makes a claim's lease run out the way time passing would.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from mcp.client import Client

from tests.todos.helpers import TODO_KEYS, call, put
from todos.tools.holder import NO_NAME

Expire = Callable[[str, timedelta], Awaitable[None]]


def _by(name: str | None) -> dict[str, str]:
    return {"by": name} if name else {}


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def _ok(client: Client, tool: str, /, **arguments: Any) -> Any:
    answer = await call(client, tool, **arguments)
    assert not answer.is_error, answer.text
    return answer.data


async def _refused(client: Client, tool: str, /, **arguments: Any) -> str:
    answer = await call(client, tool, **arguments)
    assert answer.is_error, answer.text
    return answer.text


async def _next_ids(client: Client, by: str | None, **arguments: Any) -> list[str]:
    todos = await _ok(client, "next_todos", under="cl-root", **_by(by), **arguments)
    return [todo["id"] for todo in todos]


async def scenario_claims(
    first: Client, first_name: str, first_by: str | None,
    second: Client, second_name: str, second_by: str | None,
    expire: Expire,
) -> None:
    await put(first, "cl-root", "Claims root", priority="high")
    made = await put(first, "cl-a", "First step", links=["cl-root"], priority="high")
    await put(first, "cl-b", "Second step", links=["cl-root"])
    # cl-root waits on its pending sub-tasks: they are next, not it.
    assert await _next_ids(second, second_by) == ["cl-a", "cl-b"]

    # Claim: the todo carries who and until when, after the seed's keys, and the lease token (this answer only).
    claimed = await _ok(first, "claim_todo", id="cl-a", **_by(first_by))
    assert list(claimed) == [*TODO_KEYS, "claimedBy", "claimedUntil", "leaseToken"]
    token = claimed["leaseToken"]
    assert claimed["claimedBy"] == first_name
    lease = _instant(claimed["claimedUntil"]) - _instant(claimed["updatedAt"])
    assert timedelta(minutes=29) < lease <= timedelta(minutes=31), lease
    assert claimed["updatedAt"] == made["updatedAt"], "a claim is not an edit"
    until = claimed["claimedUntil"]

    # A second claimer is refused, told who holds it and until when.
    refusal = await _refused(second, "claim_todo", id="cl-a", **_by(second_by))
    assert refusal.startswith(f"Todo cl-a is claimed by {first_name} until {until};"), refusal
    assert "release" in refusal and token not in refusal

    # Everyone sees the claim; next_todos leaves it out for the others only.
    assert (await _ok(second, "get_todo", id="cl-a"))["claimedBy"] == first_name
    listed = {todo["id"]: todo for todo in await _ok(second, "list_todos", under="cl-root")}
    assert listed["cl-a"]["claimedUntil"] == until and "claimedBy" not in listed["cl-b"]
    found = await _ok(second, "search_todos", query="first step")
    assert found[0]["id"] == "cl-a" and found[0]["claimedBy"] == first_name
    compact = (await call(second, "list_todos", under="cl-root", view="compact")).text
    line = next(line for line in compact.splitlines() if "cl-a" in line)
    assert line.endswith(f"@{first_name}"), compact
    assert "@" not in next(line for line in compact.splitlines() if "cl-b" in line)
    assert await _next_ids(second, second_by) == ["cl-b"]
    assert await _next_ids(second, second_by, includeClaimed=True) == ["cl-a", "cl-b"]
    mine = await call(first, "next_todos", under="cl-root", **_by(first_by))
    assert [todo["id"] for todo in mine.data] == ["cl-b"], "the claimer's own todo is not among those to take"
    assert [todo["id"] for todo in mine.held] == ["cl-a"], "it is shown apart, held by you"
    assert "leaseToken" not in mine.text

    # Renewed by its holder (the lease token), from now; the answer does not repeat the token.
    renewed = await _ok(first, "claim_todo", id="cl-a", minutes=90, leaseToken=token, **_by(first_by))
    assert "leaseToken" not in renewed
    assert _instant(renewed["claimedUntil"]) - _instant(until) > timedelta(minutes=59)
    assert (await _refused(second, "claim_todo", id="cl-a", **_by(second_by))).startswith(
        f"Todo cl-a is claimed by {first_name} until {renewed['claimedUntil']};"
    )

    # Only the holder hands it back; the todo then reads as if never claimed.
    refusal = await _refused(second, "release_todo", id="cl-a", **_by(second_by))
    assert refusal.startswith(f"Todo cl-a is claimed by {first_name} until"), refusal
    released = await call(first, "release_todo", id="cl-a", leaseToken=token, **_by(first_by))
    assert not released.is_error and released.text == (await call(first, "get_todo", id="cl-a")).text
    assert "claimedBy" not in released.data and released.data == made
    assert (await call(first, "release_todo", id="cl-a", leaseToken=token, **_by(first_by))).text == released.text

    # Free again: the other agent takes it; completing ends the claim; a done todo cannot be claimed.
    taken = await _ok(second, "claim_todo", id="cl-a", minutes=5, **_by(second_by))
    assert taken["claimedBy"] == second_name and taken["leaseToken"] != token
    done = await _ok(second, "complete_todo", id="cl-a", leaseToken=taken["leaseToken"])
    assert "claimedBy" not in done and done["completedAt"]
    assert await _refused(first, "claim_todo", id="cl-a", **_by(first_by)) == (
        "Todo cl-a is completed; reopen it before claiming it"
    )
    assert "claimedBy" not in await _ok(first, "reopen_todo", id="cl-a")

    # A lease that ran out is nobody's: hidden everywhere, skipped by no one, free to claim.
    await _ok(first, "claim_todo", id="cl-b", minutes=1, **_by(first_by))
    assert "cl-b" not in await _next_ids(second, second_by)
    await expire("cl-b", timedelta(minutes=2))
    assert "claimedBy" not in await _ok(second, "get_todo", id="cl-b")
    assert "cl-b" in await _next_ids(second, second_by)
    assert "@" not in (await call(second, "next_todos", under="cl-root", view="compact")).text
    again = await _ok(second, "claim_todo", id="cl-b", **_by(second_by))
    assert again["claimedBy"] == second_name
    await _ok(second, "release_todo", id="cl-b", leaseToken=again["leaseToken"], **_by(second_by))

    # Bad input, in words; unknown and deleted todos are not found.
    assert await _refused(first, "claim_todo", id="cl-b", minutes=1441, **_by(first_by)) == (
        "minutes must be 1-1440, got 1441"
    )
    assert await _refused(first, "claim_todo", id="cl-b", by="two words") == "by must not contain whitespace"
    assert await _refused(first, "claim_todo", id="cl-nothing", **_by(first_by)) == "Todo not found"
    await put(first, "cl-gone", "Deleted", links=["cl-root"])
    await _ok(first, "delete_todo", id="cl-gone")
    assert await _refused(first, "claim_todo", id="cl-gone", **_by(first_by)) == "Todo not found"
    assert await _refused(first, "release_todo", id="cl-gone", **_by(first_by)) == "Todo not found"


async def scenario_by_required_without_a_client_name(client: Client) -> None:
    """A stateless HTTP request before 2026-07-28 does not say who the client is: `by` must be given."""
    await put(client, "cl-anon", "Nameless")
    refusal = await _refused(client, "claim_todo", id="cl-anon")
    assert refusal == NO_NAME, refusal
    assert "@" not in (await call(client, "next_todos", view="compact")).text


async def scenario_update(client: Client, by: str | None) -> None:
    full = await put(
        client, "up-a", "Patch me", "keep this", priority="low", deadlineAt="2030-01-02", links=["up-root"],
        tags=["Backend"],
    )
    await put(client, "up-first", "First")
    await put(client, "up-root", "Root")
    # Only priority changes; the deadline, links, tags and description stay (put_todo would have dropped them).
    patched = await _ok(client, "update_todo", id="up-a", priority="high")
    assert patched["priority"] == "high" and patched["updatedAt"] > full["updatedAt"]
    assert {key: patched[key] for key in patched if key not in ("priority", "updatedAt")} == {
        key: full[key] for key in full if key not in ("priority", "updatedAt")
    }
    again = await call(client, "update_todo", id="up-a", priority="high")
    assert again.data == patched, "an update that changes nothing leaves updatedAt alone"

    # null clears an optional field, and only that one.
    cleared = await _ok(client, "update_todo", id="up-a", deadlineAt=None, tags=None)
    assert cleared["deadlineAt"] is None and "tags" not in cleared
    assert cleared["links"] == ["up-root"] and cleared["description"] == "keep this"
    assert (await _ok(client, "update_todo", id="up-a", description=None))["description"] == ""
    assert (await _ok(client, "update_todo", id="up-a", priority=None))["priority"] == "medium"
    assert (await _ok(client, "update_todo", id="up-a", tags=["A", "a", "b"]))["tags"] == ["a", "b"]
    waits = await _ok(client, "update_todo", id="up-a", blockedBy=["up-first"])
    assert waits["blockedBy"] == ["up-first"] and waits["tags"] == ["a", "b"]

    # The same rules as put_todo, in the same words.
    assert await _refused(client, "update_todo", id="up-a", priority="urgent") == (
        "priority must be one of low, medium, high"
    )
    loop = await _refused(client, "update_todo", id="up-first", blockedBy=["up-a"])
    assert loop.startswith("blockedBy would make a cycle: up-first → up-a → up-first"), loop
    assert await _refused(client, "update_todo", id="up-a", name=None) == (
        "name cannot be cleared: give a new name, or leave name out to keep it"
    )
    assert (await _refused(client, "update_todo", id="up-a")).startswith("nothing to change: give name, ")
    assert await _refused(client, "update_todo", id="up-a", tags=["no spaces"]) == (
        "tags item 0 must be a lowercase word of letters and digits, hyphens or underscores allowed inside, like "
        "needs-review"
    )
    assert await _refused(client, "update_todo", id="up-none", name="x") == "Todo not found"
    assert await _refused(client, "update_todo", id="up-a", colour="red") == (
        "colour is not an argument of this tool (it takes id, name, description, priority, completedAt, "
        "deadlineAt, links, tags, blockedBy, leaseToken, force)"
    )

    # The holder's update leaves its claim alone; completing through update_todo ends it, as complete_todo does.
    lease = (await _ok(client, "claim_todo", id="up-a", **_by(by)))["leaseToken"]
    renamed = await _ok(client, "update_todo", id="up-a", name="Patched", leaseToken=lease)
    assert renamed["name"] == "Patched" and "claimedBy" in renamed
    finished = await _ok(client, "update_todo", id="up-a", completedAt="2026-12-01T10:00:00Z", leaseToken=lease)
    assert finished["completedAt"] == "2026-12-01T10:00:00.000Z" and "claimedBy" not in finished
    reopened = await _ok(client, "update_todo", id="up-a", completedAt=None)
    assert reopened["completedAt"] is None and reopened["name"] == "Patched"
