"""Planning without a transport: the seed's bytes pinned at a fixed clock, due words, trees, blockers, next."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller
from todos import selectors, services
from todos.exceptions import NotFound, ValidationFailed
from todos.formatting import format_compact, format_todos, to_json
from todos.planning import TodoFilter, blocking_cycle, due_bound, parents, subtree
from todos.tools import TOOLSET

# A Wednesday afternoon.
NOW = datetime(2026, 12, 2, 15, 30, 0, 123000, tzinfo=UTC)


def tool(user, tool_name: str, /, **arguments):
    reply = run_tool(TOOLSET, TOOLSET.by_name[tool_name], Caller(user=user, transport="http"), arguments)
    assert not reply.is_error, reply.text
    return reply


@pytest.fixture
def frozen(monkeypatch):
    """Every write stamps NOW (plus one microsecond per write, as the services keep updatedAt increasing)."""
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    return NOW


def test_seed_default_answers_are_the_seeds_bytes(alice, frozen):
    """The bytes the seed's tools answered, written out by hand: nothing of the new features leaks into them."""
    uid = alice.uid
    made = tool(alice.user, "put_todo", id="buy-milk", name="Buy milk", description="Two *litres*", priority="high")
    assert made.text == (
        '{"id":"buy-milk","uid":"' + uid + '","name":"Buy milk","description":"Two *litres*","priority":"high",'
        '"createdAt":"2026-12-02T15:30:00.123Z","updatedAt":"2026-12-02T15:30:00.123Z","completedAt":null,'
        '"deletedAt":null,"deadlineAt":null,"links":[]}'
    )
    tool(alice.user, "put_todo", id="oat", name="Oat milk", description="", deadlineAt="2026-12-24", links=["buy-milk"])
    oat = (
        '{"id":"oat","uid":"' + uid + '","name":"Oat milk","description":"","priority":"medium",'
        '"createdAt":"2026-12-02T15:30:00.123Z","updatedAt":"2026-12-02T15:30:00.123Z","completedAt":null,'
        '"deletedAt":null,"deadlineAt":"2026-12-24T00:00:00.000Z","links":["buy-milk"]}'
    )
    listed = tool(alice.user, "list_todos")
    assert listed.text == "[" + made.text + "," + oat + "]"
    assert tool(alice.user, "search_todos", query="oat").text == "[" + oat + "]"
    done = tool(alice.user, "complete_todo", id="oat")
    assert done.text == oat.replace('"completedAt":null', '"completedAt":"2026-12-02T15:30:00.123Z"')
    assert tool(alice.user, "get_list_usage").text == '{"count":2,"maxTasks":1200,"percentage":0}'
    # At the frozen clock a reopened todo reads as it did before completion (updatedAt moved by a microsecond).
    assert tool(alice.user, "reopen_todo", id="oat").text == oat
    gone = tool(alice.user, "delete_todo", id="buy-milk")
    assert gone.text == made.text.replace('"deletedAt":null', '"deletedAt":"2026-12-02T15:30:00.123Z"')
    assert tool(alice.user, "get_todo", id="buy-milk").text == gone.text
    assert tool(alice.user, "list_todos", includeDeleted=True).text == "[" + oat + "," + gone.text + "]"
    again = run_tool(TOOLSET, TOOLSET.by_name["delete_todo"], Caller(user=alice.user, transport="http"),
                     {"id": "buy-milk"})
    assert (again.is_error, again.text) == (True, "Todo not found")
    # Deleted todos still count.
    assert tool(alice.user, "get_list_usage").text == '{"count":2,"maxTasks":1200,"percentage":0}'


def test_seed_list_url_for_a_uid_and_key_caller_is_the_seeds_bytes(alice, settings):
    """A caller that put its uid and key in the URL gets the seed's form back, byte for byte. Any other caller
    gets a link token of its own (the seed's was a different one too), so only the link's shape is pinned."""
    settings.SITE_URL = "https://todos.example.com"
    by_key = Caller(user=alice.user, transport="http", presented_uid=alice.uid, presented_key=alice.key)
    reply = run_tool(TOOLSET, TOOLSET.by_name["get_list_url"], by_key, {})
    assert not reply.is_error
    assert reply.text == f"https://todos.example.com/list?uid={alice.uid}&key={alice.key}"
    assert reply.structured == {"url": reply.text}
    signed = tool(alice.user, "get_list_url").text
    assert signed.startswith("https://todos.example.com/list?t=l_") and "&" not in signed and alice.uid not in signed


def test_tags_and_blockers_follow_links_only_when_present(alice, frozen):
    tool(alice.user, "put_todo", id="a", name="A", description="")
    text = tool(alice.user, "put_todo", id="b", name="B", description="", tags=["X"], blockedBy=["a"]).text
    assert text.endswith(',"links":[],"tags":["x"],"blockedBy":["a"]}')


@pytest.mark.parametrize(
    ("word", "before", "after"),
    [
        ("today", "2026-12-03T00:00:00", "2026-12-02T00:00:00"),
        ("TOMORROW", "2026-12-04T00:00:00", "2026-12-03T00:00:00"),
        ("this week", "2026-12-07T00:00:00", "2026-11-30T00:00:00"),
        (" This   Week ", "2026-12-07T00:00:00", "2026-11-30T00:00:00"),
        ("overdue", "2026-12-02T15:30:00.123000", "2026-12-02T15:30:00.123000"),
        ("2026-12-10", "2026-12-10T00:00:00", "2026-12-10T00:00:00"),
        ("2026-12-10T09:00:00+01:00", "2026-12-10T08:00:00", "2026-12-10T08:00:00"),
    ],
)
def test_due_words_are_utc_days_and_iso_weeks(word, before, after):
    assert due_bound(word, side="before", now=NOW) == datetime.fromisoformat(before).replace(tzinfo=UTC)
    assert due_bound(word, side="after", now=NOW) == datetime.fromisoformat(after).replace(tzinfo=UTC)


def test_parents_break_loops_and_subtrees_follow_them():
    links = {"root": [], "a": ["elsewhere", "root"], "b": ["a", "root"], "x": ["y"], "y": ["x"], "self": ["self"]}
    parent = parents(links)
    assert parent["a"] == "root" and parent["b"] == "a" and "self" not in parent
    assert len({"x", "y"} & set(parent)) == 1  # the loop is cut once, so both still sit in one tree
    assert subtree("root", parent) == {"root", "a", "b"}
    assert subtree("a", parent) == {"a", "b"}


def test_blocking_cycle_names_the_shortest_loop():
    graph = {"a": [], "b": ["c", "a"], "c": ["a"], "d": []}
    assert blocking_cycle("a", ["b"], graph) == ["a", "b", "a"]
    assert blocking_cycle("a", ["c"], graph) == ["a", "c", "a"]
    assert blocking_cycle("a", ["a"], graph) == ["a", "a"]
    assert blocking_cycle("a", ["d"], graph) is None
    assert blocking_cycle("d", ["b"], graph) is None


def test_blockers_are_checked_against_the_owners_todos_only(alice, bob):
    services.todo_put(owner=bob.user, key="bobs", name="Bob's", description="")
    with pytest.raises(ValidationFailed, match="blockedBy item 0 names no todo of yours: bobs"):
        services.todo_put(owner=alice.user, key="mine", name="Mine", description="", blocked_by=["bobs"])
    assert not selectors.todo_list(owner=alice.user)


def test_next_leaves_out_other_owners_deleted_completed_and_blocked(alice, bob):
    put = services.todo_put
    put(owner=alice.user, key="first", name="First", description="")
    put(owner=alice.user, key="waits", name="Waits", description="", priority="high", blocked_by=["first"])
    put(owner=alice.user, key="gone", name="Gone", description="", priority="high")
    put(owner=alice.user, key="done", name="Done", description="", priority="high")
    services.todo_delete(owner=alice.user, key="gone")
    services.todo_complete(owner=alice.user, key="done")
    put(owner=bob.user, key="bobs", name="Bob's", description="", priority="high")
    assert [todo.key for todo in selectors.todo_next(owner=alice.user)] == ["first"]
    assert [todo.key for todo in selectors.todo_next(owner=bob.user)] == ["bobs"]
    with pytest.raises(NotFound):
        selectors.todo_next(owner=bob.user, filters=TodoFilter(under="first"))


def test_compact_view_is_under_a_third_of_the_json(alice, frozen):
    for number in range(3):
        services.todo_put(
            owner=alice.user,
            key=f"task-{number}",
            name=f"Task number {number}",
            description="",
            deadline_at=NOW + timedelta(days=number - 1),
            links=["task-0"] if number else [],
        )
    todos = selectors.todo_list(owner=alice.user)
    json_text = to_json(format_todos(todos, uid=alice.uid))
    compact = format_compact(todos, now=NOW)
    assert compact == "\n".join(
        [
            "task-0 · medium · 2026-12-01 15:30 overdue · Task number 0",
            "  task-1 · medium · 2026-12-02 15:30 · Task number 1",
            "  task-2 · medium · 2026-12-03 15:30 · Task number 2",
        ]
    )
    assert len(compact) * 3 <= len(json_text)


def test_two_concurrent_puts_cannot_each_close_half_of_a_loop(alice):
    """Each put alone is fine; together they would make a waits-on loop. The owner's lock lets one through."""
    from django.db import close_old_connections, connection

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite's in-memory test database does not share row locks across threads")
    services.todo_put(owner=alice.user, key="a", name="A", description="")
    services.todo_put(owner=alice.user, key="b", name="B", description="")
    start = threading.Barrier(2)

    def wait_on(key: str, other: str) -> str:
        start.wait()
        try:
            services.todo_put(owner=alice.user, key=key, name=key, description="", blocked_by=[other])
            return "stored"
        except ValidationFailed as refusal:
            return refusal.message
        finally:
            close_old_connections()

    with ThreadPoolExecutor(2) as pool:
        outcomes = sorted(pool.map(wait_on, ["a", "b"], ["b", "a"]))
    assert outcomes[1] == "stored" and outcomes[0].startswith("blockedBy would make a cycle")
    stored = {todo.key: todo.blocked_by for todo in selectors.todo_list(owner=alice.user)}
    assert sorted(stored.values()) in ([[], ["a"]], [[], ["b"]])


def test_filtered_search_ranks_every_match_before_cutting(alice):
    # The tagged todos rank below the first twenty (their names hold the word once among many), so a filter
    # applied after a cut at `limit` would find none of them.
    for number in range(30):
        services.todo_put(owner=alice.user, key=f"strong-{number}", name="alpha alpha", description="alpha")
    for number in range(3):
        services.todo_put(
            owner=alice.user,
            key=f"weak-{number}",
            name=f"alpha among many other words number {number}",
            description="",
            tags=["rare"],
        )
    assert not {todo.key for todo in selectors.todo_search(owner=alice.user, query="alpha")} & {"weak-0"}
    found = selectors.todo_search(owner=alice.user, query="alpha", limit=2, filters=TodoFilter(tag="rare"))
    assert len(found) == 2 and {todo.key for todo in found} <= {"weak-0", "weak-1", "weak-2"}
