"""claim_next, the lease token, writes that respect claims and next_todos' umbrellas and held todos, end to end:
the same scenarios over HTTP and stdio.

Two agents of one user: ``first`` and ``second`` are SDK clients, each known by ``*_name`` and sending ``*_by``
(None where the client's own name is the claimer). Each scenario uses its own id prefix and filters by ``under``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.client import Client

from tests.todos.helpers import NO_FREE_TODO, call, put

WRITES = ("update_todo", "put_todo", "complete_todo", "delete_todo", "reopen_todo")


def _by(name: str | None) -> dict[str, str]:
    return {"by": name} if name else {}


async def _ok(client: Client, tool: str, /, **arguments: Any) -> Any:
    answer = await call(client, tool, **arguments)
    assert not answer.is_error, answer.text
    return answer


async def _refused(client: Client, tool: str, /, **arguments: Any) -> str:
    answer = await call(client, tool, **arguments)
    assert answer.is_error, answer.text
    return answer.text


async def _next(client: Client, by: str | None, **filters: Any) -> str:
    """The id claim_next answers, or its empty-state sentence."""
    answer = await _ok(client, "claim_next", **_by(by), **filters)
    return answer.text if answer.text == NO_FREE_TODO else answer.data["id"]


async def scenario_claim_next(
    first: Client, first_name: str, first_by: str | None, second: Client, second_by: str | None
) -> None:
    await put(first, "cn-root", "Claim next root", priority="high")
    await put(first, "cn-a", "Backend step", links=["cn-root"], tags=["backend"])
    await put(first, "cn-b", "Frontend step", links=["cn-root"], priority="high", tags=["frontend"])
    await put(first, "cn-c", "After the backend", links=["cn-root"], priority="high", blockedBy=["cn-a"])
    await put(first, "cn-side", "Side root", priority="low")
    await put(first, "cn-low", "A low one", links=["cn-side"], priority="low", tags=["backend"])

    # The first free todo next_todos names, claimed in one call and answered with its lease.
    expected = (await _ok(first, "next_todos", under="cn-root", limit=1)).data[0]
    claimed = (await _ok(first, "claim_next", under="cn-root", **_by(first_by))).data
    assert claimed["id"] == expected["id"] == "cn-b"
    assert claimed["claimedBy"] == first_name and claimed["leaseToken"].startswith("lease_")
    # Filters: a tag, a parent, a priority; the umbrella (cn-root) and the blocked cn-c are never taken.
    assert await _next(second, second_by, under="cn-root", tag="frontend") == NO_FREE_TODO
    assert await _next(second, second_by, under="cn-root", tag="Backend") == "cn-a"
    assert await _next(second, second_by, under="cn-root") == NO_FREE_TODO
    assert await _next(second, second_by, under="cn-side", priority="high") == NO_FREE_TODO
    assert await _next(second, second_by, under="cn-side", priority="low") == "cn-low"
    assert (await _ok(second, "claim_next", under="cn-side", **_by(second_by))).structured == {"todo": None}
    # Done work frees what waited on it; with every sub-task done, the umbrella is next at last.
    await _ok(first, "complete_todo", id="cn-b", leaseToken=claimed["leaseToken"])
    held_a = await call(first, "get_todo", id="cn-a")
    assert "claimedBy" in held_a.data
    await _ok(first, "complete_todo", id="cn-a", force=True)
    taken_c = (await _ok(first, "claim_next", under="cn-root", **_by(first_by))).data
    assert taken_c["id"] == "cn-c"
    await _ok(first, "complete_todo", id="cn-c", leaseToken=taken_c["leaseToken"])
    assert await _next(first, first_by, under="cn-root") == "cn-root"
    # Bad input, in words.
    assert await _refused(first, "claim_next", tag="two words", **_by(first_by)) == (
        "tag must be a lowercase word of letters and digits, hyphens or underscores allowed inside, like needs-review"
    )
    assert await _refused(first, "claim_next", under="cn-none", **_by(first_by)) == "Todo not found"
    assert await _refused(first, "claim_next", minutes=0, **_by(first_by)) == "minutes must be 1-1440, got 0"


async def scenario_claim_next_at_once(clients: list[tuple[Client, str]], rounds: int = 2) -> None:
    """Every client calls claim_next ``rounds`` times at once: each call gets its own todo; with fewer todos than
    calls, exactly as many win as there are todos and the rest are told `No free todo.`."""
    calls = len(clients) * rounds
    first = clients[0][0]
    await put(first, "cc-root", "At once")
    for n in range(calls):
        await put(first, f"cc-{n:02d}", f"Step {n}", links=["cc-root"])

    async def take(client: Client, by: str) -> str:
        return await _next(client, by, under="cc-root")

    got = await asyncio.gather(*(take(client, by) for client, by in clients for _ in range(rounds)))
    assert sorted(got) == [f"cc-{n:02d}" for n in range(calls)], got
    await put(first, "cc-last", "The only free one", links=["cc-root"])
    last = await asyncio.gather(*(take(client, by) for client, by in clients))
    assert sorted(last) == sorted(["cc-last", *[NO_FREE_TODO] * (len(clients) - 1)]), last


async def scenario_lease_token(
    first: Client, first_name: str, first_by: str | None, second: Client, second_by: str | None, *,
    same_connection_renews: bool,
) -> None:
    """Renewing and releasing need the token; a name proves nothing (over stdio, the same ``by`` on the same
    connection still does, as its process keeps the token)."""
    await put(first, "lt-root", "Lease root")
    await put(first, "lt-a", "Leased", links=["lt-root"])
    claimed = (await _ok(first, "claim_todo", id="lt-a", **_by(first_by))).data
    token, until = claimed["leaseToken"], claimed["claimedUntil"]
    # Another agent naming itself as the holder takes nothing over.
    for tool in ("claim_todo", "release_todo"):
        refusal = await _refused(second, tool, id="lt-a", by=first_name)
        assert refusal.startswith(f"Todo lt-a is claimed by {first_name} until {until};"), refusal
        assert token not in refusal and "leaseToken" in refusal
    assert await _refused(second, "claim_todo", id="lt-a", by=first_name, leaseToken="lease_guessed")
    # The holder's own connection, without the token: stdio remembers it, HTTP does not.
    renewal = await call(first, "claim_todo", id="lt-a", minutes=60, **_by(first_by))
    assert renewal.is_error is not same_connection_renews, renewal.text
    if renewal.is_error:
        assert renewal.text.startswith(f"Todo lt-a is claimed by {first_name} until"), renewal.text
    # With the token: renewed from now, on any connection (the token is what proves it), not shown again.
    renewed = (await _ok(second, "claim_todo", id="lt-a", minutes=90, leaseToken=token, by=first_name)).data
    assert renewed["claimedUntil"] > until and "leaseToken" not in renewed
    released = (await _ok(second, "release_todo", id="lt-a", leaseToken=token)).data
    assert "claimedBy" not in released
    # A spent token holds nothing: the todo is free for the next claim, which gets a new token.
    again = (await _ok(second, "claim_todo", id="lt-a", leaseToken=token, **_by(second_by))).data
    assert again["leaseToken"] != token
    assert (await _refused(first, "release_todo", id="lt-a", leaseToken=token)).startswith("Todo lt-a is claimed by")
    await _ok(second, "release_todo", id="lt-a", leaseToken=again["leaseToken"])


async def scenario_writes_respect_claims(
    holder: Client, holder_name: str, holder_by: str | None, other: Client
) -> None:
    """Each write of a todo another agent holds is refused, naming the holder and the end of the lease (never the
    token); with force it goes ahead, ends the claim and says whose it was; the holder writes with its token."""
    await put(holder, "wr-root", "Writes root")
    for tool in WRITES:
        key = f"wr-{tool}"
        await put(holder, key, f"Held for {tool}", links=["wr-root"])
        claimed = (await _ok(holder, "claim_todo", id=key, **_by(holder_by))).data
        token, until = claimed["leaseToken"], claimed["claimedUntil"]
        arguments: dict[str, Any] = {"id": key}
        if tool == "update_todo":
            arguments["priority"] = "high"
        elif tool == "put_todo":
            arguments.update(name="Replaced", description="", links=["wr-root"])
        refusal = await _refused(other, tool, **arguments)
        assert refusal.startswith(f"Todo {key} is claimed by {holder_name} until {until}; only its holder"), refusal
        assert token not in refusal and "force: true" in refusal
        assert (await _refused(other, tool, leaseToken="lease_guessed", **arguments)) == refusal
        unchanged = (await _ok(holder, "get_todo", id=key)).data
        assert unchanged["claimedBy"] == holder_name and unchanged["deletedAt"] is None, tool
        assert unchanged["priority"] == "medium" and unchanged["completedAt"] is None, tool
        forced = (await _ok(other, tool, force=True, **arguments)).data
        assert forced["endedClaim"] == {"claimedBy": holder_name, "claimedUntil": until}, tool
        assert "claimedBy" not in forced and "claimedBy" not in (await _ok(holder, "get_todo", id=key)).data
    # The holder itself writes with its token, and keeps its claim while the todo stays pending.
    await put(holder, "wr-own", "Own", links=["wr-root"])
    token = (await _ok(holder, "claim_todo", id="wr-own", **_by(holder_by))).data["leaseToken"]
    mine = (await _ok(holder, "update_todo", id="wr-own", priority="low", leaseToken=token)).data
    assert mine["priority"] == "low" and mine["claimedBy"] == holder_name and "endedClaim" not in mine
    mine = (await _ok(holder, "put_todo", id="wr-own", name="Own, put", description="", links=["wr-root"],
                      leaseToken=token)).data
    assert mine["claimedBy"] == holder_name
    # A todo nobody holds is anyone's to write; force then ends nothing and says nothing.
    await put(other, "wr-free", "Free", links=["wr-root"])
    assert "endedClaim" not in (await _ok(other, "update_todo", id="wr-free", priority="high", force=True)).data


async def scenario_next_umbrella_and_held(
    first: Client, first_name: str, first_by: str | None, second: Client, second_by: str | None
) -> None:
    """An umbrella with pending sub-tasks is not next (they take its place, in their own order); todos held by
    others are left out; the caller's own are shown apart, `held by you`."""
    await put(first, "nh-root", "Next and held")
    await put(first, "nh-launch", "Launch the shop", links=["nh-root"], priority="high")
    await put(first, "nh-stock", "Stock the shelves", links=["nh-launch"], priority="low")
    await put(first, "nh-sign", "Paint the sign", links=["nh-launch"], priority="low")
    await put(first, "nh-milk", "Buy milk", links=["nh-root"])
    await put(first, "nh-tidy", "Tidy up", links=["nh-root"], priority="low")

    async def next_of(client: Client, by: str | None, **arguments: Any) -> tuple[list[str], list[str]]:
        answer = await _ok(client, "next_todos", under="nh-root", **_by(by), **arguments)
        return [todo["id"] for todo in answer.data], [todo["id"] for todo in answer.held]

    # nh-launch (high) waits on its sub-tasks: they come first, in its place; nh-root, an umbrella too, never.
    assert await next_of(first, first_by) == (["nh-stock", "nh-sign", "nh-milk", "nh-tidy"], [])
    stock = (await _ok(second, "claim_todo", id="nh-stock", **_by(second_by))).data
    milk = (await _ok(first, "claim_todo", id="nh-milk", **_by(first_by))).data
    assert await next_of(first, first_by) == (["nh-sign", "nh-tidy"], ["nh-milk"])
    assert await next_of(first, first_by, includeClaimed=True) == (["nh-stock", "nh-sign", "nh-tidy"], ["nh-milk"])
    compact = (await _ok(first, "next_todos", under="nh-root", view="compact", **_by(first_by))).text
    assert compact.splitlines()[-2:] == ["held by you:", f"nh-milk · medium · - · Buy milk @{first_name}"], compact
    assert milk["leaseToken"] not in compact
    # claim_next takes what next_todos puts first for the caller.
    sign = (await _ok(first, "claim_next", under="nh-root", **_by(first_by))).data
    assert sign["id"] == "nh-sign"
    assert await next_of(first, first_by) == (["nh-tidy"], ["nh-sign", "nh-milk"])
    # With its sub-tasks done, the umbrella is next in its own right.
    await _ok(second, "complete_todo", id="nh-stock", leaseToken=stock["leaseToken"])
    await _ok(first, "complete_todo", id="nh-sign", leaseToken=sign["leaseToken"])
    assert await next_of(second, second_by) == (["nh-launch", "nh-tidy"], [])
    # An umbrella the caller holds is still shown as held by it: it is its to finish or hand back.
    root = (await _ok(first, "claim_todo", id="nh-root", **_by(first_by))).data
    assert await next_of(first, first_by) == (["nh-launch", "nh-tidy"], ["nh-root", "nh-milk"])
    await _ok(first, "release_todo", id="nh-root", leaseToken=root["leaseToken"])
