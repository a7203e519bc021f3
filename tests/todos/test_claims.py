"""Claims and partial updates without a transport: leases on a settable clock, what ends a claim, what keeps it,
and exactly one winner among concurrent claimers on SQLite (threads of one process on the real settings' file
database) and on PostgreSQL (threads, each with its own connection)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection

from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller
from tests.clients import ROOT
from tests.reliability.helpers import server_env
from todos import leases, selectors, services
from todos.exceptions import Claimed, NotClaimable, NotFound, ValidationFailed
from todos.formatting import compact_line, format_todo
from todos.timestamps import clock, format_instant
from todos.tools import TOOLSET

CLAIMERS = 8


@pytest.fixture
def settable_clock():
    clock.reset()
    yield clock
    clock.reset()


def tool(caller: Caller, name: str, /, **arguments):
    return run_tool(TOOLSET, TOOLSET.by_name[name], caller, arguments)


def test_claim_lease_runs_out_on_the_clock_and_renews_from_now(alice, settable_clock):
    todo = services.todo_put(owner=alice.user, key="a", name="A", description="")
    claimed = leases.todo_claim(owner=alice.user, key="a", by="one", minutes=10)
    assert claimed.claimed_until == pytest.approx(clock.now() + timedelta(minutes=10), abs=timedelta(seconds=5))
    assert claimed.updated_at == todo.updated_at
    settable_clock.advance(timedelta(minutes=9))
    with pytest.raises(Claimed) as refused:
        leases.todo_claim(owner=alice.user, key="a", by="two")
    assert refused.value.message == (
        f"Todo a is claimed by one until {format_instant(claimed.claimed_until)}; work on another todo (claim_next "
        "takes the next free one), or claim it after then (the holder can release it sooner; a claim of yours "
        "renews with the leaseToken it answered)"
    )
    assert claimed.lease_token and claimed.lease_token not in refused.value.message
    with pytest.raises(Claimed):
        leases.todo_claim(owner=alice.user, key="a", by="one", minutes=10)
    renewed = leases.todo_claim(owner=alice.user, key="a", by="one", minutes=10, token=claimed.lease_token)
    assert renewed.lease_token is None, "a renewal keeps the lease and its token"
    assert renewed.claimed_until is not None and renewed.claimed_until > claimed.claimed_until
    settable_clock.advance(timedelta(minutes=10, seconds=1))
    uid = "u"
    assert "claimedBy" not in format_todo(selectors.todo_get(owner=alice.user, key="a"), uid=uid)
    assert [t.key for t in selectors.todo_next(owner=alice.user, claimer="two")] == ["a"]
    assert leases.todo_claim(owner=alice.user, key="a", by="two").claimed_by == "two"


def test_what_ends_a_claim_and_what_keeps_it(alice, settable_clock):
    for key in "abcd":
        services.todo_put(owner=alice.user, key=key, name=key.upper(), description="", tags=["x"])
        leases.todo_claim(owner=alice.user, key=key, by="one")
    now = clock.now()
    kept = services.todo_put(owner=alice.user, key="a", name="A again", description="")
    assert kept.claim_live(now) and kept.tags == [], "a put replaces every field but leaves the claim"
    assert services.todo_update(owner=alice.user, key="b", changes={"name": "B2"}).claim_live(now)
    assert not services.todo_complete(owner=alice.user, key="b").claim_live(now)
    assert not services.todo_delete(owner=alice.user, key="c").claimed_by
    done = services.todo_put(owner=alice.user, key="d", name="D", description="", completed_at=now)
    assert not done.claim_live(now)
    with pytest.raises(NotClaimable):
        leases.todo_claim(owner=alice.user, key="d", by="one")
    with pytest.raises(NotFound):
        leases.todo_claim(owner=alice.user, key="c", by="one")
    # A person (by None) hands anyone's claim back; an agent only its own.
    with pytest.raises(Claimed):
        leases.todo_release(owner=alice.user, key="a", holder=leases.Holder())
    assert not leases.todo_release(owner=alice.user, key="a", holder=None).claimed_by


def test_claims_are_per_user(alice, bob):
    services.todo_put(owner=alice.user, key="same", name="Alice's", description="")
    services.todo_put(owner=bob.user, key="same", name="Bob's", description="")
    leases.todo_claim(owner=alice.user, key="same", by="alice-agent")
    assert leases.todo_claim(owner=bob.user, key="same", by="bob-agent").claimed_by == "bob-agent"
    assert selectors.todo_get(owner=alice.user, key="same").claimed_by == "alice-agent"
    with pytest.raises(NotFound):
        leases.todo_claim(owner=bob.user, key="alice-only", by="bob-agent")


def test_claim_input_is_checked(alice):
    services.todo_put(owner=alice.user, key="a", name="A", description="")
    with pytest.raises(ValidationFailed) as refused:
        leases.todo_claim(owner=alice.user, key="a", by="x" * 65, minutes=0)
    assert refused.value.problems == ["by must be 1-64 characters, got 65", "minutes must be 1-1440 (24 hours), got 0"]
    caller = Caller(user=alice.user, transport="http")
    reply = tool(caller, "claim_todo", id="a", by="nul\x00")
    assert (reply.is_error, reply.text) == (True, "by must not contain NUL")


def test_the_client_name_is_the_default_claimer(alice):
    services.todo_put(owner=alice.user, key="a", name="A", description="")
    named = Caller(user=alice.user, transport="stdio", client_name="Claude Code\t(beta)")
    reply = tool(named, "claim_todo", id="a")
    assert json.loads(reply.text)["claimedBy"] == "Claude-Code-(beta)"
    mine = tool(named, "next_todos")
    held = {key: value for key, value in json.loads(reply.text).items() if key != "leaseToken"}
    assert mine.structured == {"todos": [], "heldByYou": [held]}
    assert mine.text.splitlines()[:2] == ["[]", "held by you:"], "its own claim is shown apart"
    nameless = Caller(user=alice.user, transport="http")
    assert json.loads(tool(nameless, "next_todos").text) == []
    assert json.loads(tool(nameless, "next_todos", includeClaimed=True).text)[0]["id"] == "a"


def test_compact_line_names_the_claimer_while_the_claim_runs(alice, settable_clock):
    services.todo_put(owner=alice.user, key="a", name="A", description="", tags=["x"])
    todo = leases.todo_claim(owner=alice.user, key="a", by="one", minutes=5)
    assert compact_line(todo, now=clock.now()) == "a · medium · - · A #x @one"
    settable_clock.advance(timedelta(minutes=6))
    assert compact_line(todo, now=clock.now()) == "a · medium · - · A #x"


def test_a_claimed_then_released_todo_reads_as_never_claimed(alice):
    caller = Caller(user=alice.user, transport="http")
    made = tool(caller, "put_todo", id="a", name="A", description="").text
    claimed = tool(caller, "claim_todo", id="a", by="one")
    assert claimed.text != made
    assert tool(caller, "release_todo", id="a", by="one").is_error, "a name proves nothing over HTTP"
    token = json.loads(claimed.text)["leaseToken"]
    assert tool(caller, "release_todo", id="a", leaseToken=token).text == made
    assert tool(caller, "get_todo", id="a").text == made


def _race(claim, count: int) -> list[str]:
    start = threading.Barrier(count)

    def one(n: int) -> str:
        start.wait()
        try:
            return f"won {claim(f'agent-{n}').claimed_by}"
        except Claimed as refusal:
            return refusal.message
        finally:
            close_old_connections()

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def test_concurrent_claimers_on_postgresql_exactly_one_wins(alice):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite's in-memory test database does not share locks across threads "
                    "(the SQLite case runs on a file database, below)")
    for round_ in range(3):
        services.todo_put(owner=alice.user, key=f"r{round_}", name="R", description="")
        outcomes = _race(lambda by, key=f"r{round_}": leases.todo_claim(owner=alice.user, key=key, by=by), CLAIMERS)
        winners = [outcome.removeprefix("won ") for outcome in outcomes if outcome.startswith("won ")]
        assert len(winners) == 1, outcomes
        refusals = [outcome for outcome in outcomes if not outcome.startswith("won ")]
        assert all(text.startswith(f"Todo r{round_} is claimed by {winners[0]} until") for text in refusals)


def test_a_claim_and_a_concurrent_update_on_postgresql_both_hold(alice):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (threads with their own connections)")
    services.todo_put(owner=alice.user, key="both", name="Both", description="", tags=["keep"])
    for n in range(10):
        barrier = threading.Barrier(2)

        def claim(n: int = n, start: threading.Barrier = barrier) -> None:
            start.wait()
            leases.todo_claim(owner=alice.user, key="both", by=f"agent-{n}")
            close_old_connections()

        def update(n: int = n, start: threading.Barrier = barrier) -> None:
            start.wait()
            services.todo_update(owner=alice.user, key="both", changes={"description": f"round {n}"})
            close_old_connections()

        with ThreadPoolExecutor(2) as pool:
            for future in [pool.submit(claim), pool.submit(update)]:
                future.result()
        todo = selectors.todo_get(owner=alice.user, key="both")
        assert (todo.description, todo.claimed_by, todo.tags) == (f"round {n}", f"agent-{n}", ["keep"])
        leases.todo_release(owner=alice.user, key="both", holder=None)


SQLITE_RACE = """
import json, threading
from concurrent.futures import ThreadPoolExecutor
from django.db import close_old_connections
from accounts.services import user_get_or_create
from base.bootstrap import ensure_global_db
from todos import leases, services
from todos.exceptions import Claimed

ensure_global_db()
owner = user_get_or_create(username="racer")
results = []
for round_ in range(ROUNDS):
    key = f"race-{round_}"
    services.todo_put(owner=owner, key=key, name="Race", description="")
    start = threading.Barrier(CLAIMERS)

    def one(n):
        start.wait()
        try:
            return "won " + leases.todo_claim(owner=owner, key=key, by=f"agent-{n}").claimed_by
        except Claimed as refusal:
            return refusal.message
        finally:
            close_old_connections()

    with ThreadPoolExecutor(CLAIMERS) as pool:
        results.append(list(pool.map(one, range(CLAIMERS))))
print(json.dumps(results))
"""


def test_concurrent_claimers_on_sqlite_exactly_one_wins(tmp_path):
    """The settings' own SQLite (a file, WAL, IMMEDIATE transactions, busy timeout), as a threaded server or
    several local agents' processes use it: one winner per round, the others told who."""
    script = SQLITE_RACE.replace("ROUNDS", "3").replace("CLAIMERS", str(CLAIMERS))
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "shell", "-c", script],
        cwd=ROOT, env=server_env(tmp_path), capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr
    for round_, outcomes in enumerate(json.loads(done.stdout.strip().splitlines()[-1])):
        winners = [outcome.removeprefix("won ") for outcome in outcomes if outcome.startswith("won ")]
        assert len(winners) == 1, outcomes
        refusals = [outcome for outcome in outcomes if not outcome.startswith("won ")]
        assert len(refusals) == CLAIMERS - 1
        assert all(text.startswith(f"Todo race-{round_} is claimed by {winners[0]} until") for text in refusals)


def test_a_claim_refused_by_a_lease_that_ends_meanwhile_is_tried_again(alice, monkeypatch):
    """PostgreSQL: the holder may release between the refused UPDATE and the read that names them. The read then
    finds the todo free, and the claim is tried again rather than refused with nobody to name."""
    services.todo_put(owner=alice.user, key="a", name="A", description="")
    held = leases.todo_claim(owner=alice.user, key="a", by="holder")
    real = leases._claim_refusal
    released = []

    def release_first(todo, key, now):
        if not released:
            released.append(leases.todo_release(owner=alice.user, key=key, holder=leases.Holder(held.lease_token)))
            todo = selectors.todo_get(owner=alice.user, key=key)
        return real(todo, key, now)

    monkeypatch.setattr(leases, "_claim_refusal", release_first)
    assert leases.todo_claim(owner=alice.user, key="a", by="second").claimed_by == "second"
    assert released


def test_claim_next_takes_only_the_owners_free_todos(alice, bob):
    """Never a deleted, completed, blocked or held todo, never an umbrella with pending sub-tasks, never another
    user's; None when nothing is left."""
    for key, extra in (("gone", {}), ("done", {}), ("root", {}), ("child", {"links": ["root"]}),
                       ("waits", {"blocked_by": ["child"]}), ("held", {})):
        services.todo_put(owner=alice.user, key=key, name=key, description="", priority="high", **extra)
    services.todo_delete(owner=alice.user, key="gone")
    services.todo_complete(owner=alice.user, key="done")
    leases.todo_claim(owner=alice.user, key="held", by="other")
    services.todo_put(owner=bob.user, key="bobs", name="Bob's", description="", priority="high")
    assert leases.todo_claim_next(owner=alice.user, by="me").key == "child"
    assert leases.todo_claim_next(owner=alice.user, by="me") is None
    assert leases.todo_claim_next(owner=bob.user, by="me").key == "bobs"
    assert leases.todo_claim_next(owner=bob.user, by="me") is None
    assert selectors.todo_get(owner=alice.user, key="root").claimed_by == ""


def test_a_forced_write_ends_the_claim_and_says_whose_it_was(alice):
    services.todo_put(owner=alice.user, key="a", name="A", description="")
    held = leases.todo_claim(owner=alice.user, key="a", by="holder")
    with pytest.raises(Claimed) as refused:
        services.todo_update(owner=alice.user, key="a", changes={"name": "B"}, holder=leases.Holder())
    assert held.lease_token not in refused.value.message
    holder = leases.Holder(held.lease_token)
    mine = services.todo_update(owner=alice.user, key="a", changes={"name": "B"}, holder=holder)
    assert mine.claimed_by == "holder" and mine.ended_claim is None
    forced = services.todo_update(owner=alice.user, key="a", changes={}, holder=leases.Holder(force=True))
    assert forced.ended_claim == ("holder", held.claimed_until) and forced.claimed_by == ""
    assert selectors.todo_get(owner=alice.user, key="a").claim_token_hash == ""
    # A person (holder None) acts whoever holds it, and leaves the claim in place unless the todo is done.
    again = leases.todo_claim(owner=alice.user, key="a", by="holder")
    assert services.todo_update(owner=alice.user, key="a", changes={"name": "C"}).claimed_by == "holder"
    assert services.todo_complete(owner=alice.user, key="a").claimed_by == "" and again.lease_token


def test_a_stdio_connection_keeps_its_tokens_and_http_does_not(alice):
    """The same `by` on the same stdio connection renews and writes without the token; over HTTP it must be given."""
    for key in ("s", "h"):
        services.todo_put(owner=alice.user, key=key, name=key, description="")
    stdio = Caller(user=alice.user, transport="stdio", client_name="agent")
    assert json.loads(tool(stdio, "claim_todo", id="s").text)["leaseToken"]
    assert not tool(stdio, "claim_todo", id="s").is_error
    assert tool(stdio, "claim_todo", id="s", by="someone-else").is_error
    assert not tool(stdio, "update_todo", id="s", priority="high").is_error
    http = Caller(user=alice.user, transport="http", client_name="agent")
    token = json.loads(tool(http, "claim_todo", id="h").text)["leaseToken"]
    refusal = tool(http, "update_todo", id="h", priority="high").text
    assert refusal.startswith("Todo h is claimed by agent until") and token not in refusal
    assert not tool(http, "update_todo", id="h", priority="high", leaseToken=token).is_error
