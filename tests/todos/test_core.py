"""The Todos core without a transport: timestamps, services, selectors, the search cache, /list access."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test import Client as BrowserClient
from django.test.utils import CaptureQueriesContext

from todos import selectors, services
from todos.access import list_link_user, list_url
from todos.exceptions import LimitReached, NotFound, ValidationFailed
from todos.formatting import format_todo
from todos.models import Todo
from todos.timestamps import BadInstant, format_instant, parse_instant


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30", "2026-11-30T00:00:00.000Z"),
        ("20261130", "2026-11-30T00:00:00.000Z"),
        ("2026-W49-1", "2026-11-30T00:00:00.000Z"),
        ("2026-334", "2026-11-30T00:00:00.000Z"),
        ("2026-11-30T09:15", "2026-11-30T09:15:00.000Z"),
        ("2026-11-30 09:15:42.123456", "2026-11-30T09:15:42.123Z"),
        ("2026-11-30T09:15:42,5Z", "2026-11-30T09:15:42.500Z"),
        ("2026-11-30T10:15:42+01:00", "2026-11-30T09:15:42.000Z"),
        ("20261130T091542-0330", "2026-11-30T12:45:42.000Z"),
        ("2026-11-30T24:00:00Z", "2026-12-01T00:00:00.000Z"),
        ("0999-01-01", "0999-01-01T00:00:00.000Z"),
    ],
)
def test_parse_instant_reads_iso_8601_into_utc(text, expected):
    assert format_instant(parse_instant(text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "tomorrow",
        "2026-11",
        "2026-02-30",
        "2026-366",
        "2026-11-30x09:15",
        "2026-11-30T25:00",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:00:00-05:00",
        "30/11/2026",
    ],
)
def test_parse_instant_refuses_what_is_not_a_storable_iso_8601_instant(text):
    with pytest.raises(BadInstant):
        parse_instant(text)


def _put(owner, key: str, name: str = "Name", **fields) -> Todo:
    return services.todo_put(owner=owner, key=key, name=name, description=fields.pop("description", ""), **fields)


def test_format_todo_is_pure_and_keeps_the_seed_order(alice, django_assert_num_queries):
    todo = _put(alice.user, "t", deadline_at=datetime(2026, 12, 24, tzinfo=UTC), links=["a", "b", "a"])
    with django_assert_num_queries(0):
        data = format_todo(todo, uid="u1")
    assert list(data) == [
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
    assert data["deadlineAt"] == "2026-12-24T00:00:00.000Z" and data["links"] == ["a", "b"]


def test_services_validate_before_writing(alice):
    with pytest.raises(ValidationFailed) as failure:
        services.todo_put(owner=alice.user, key="a b", name="", description="x", priority="urgent", links=["ok"] * 101)
    assert failure.value.problems == [
        "id must not contain whitespace",
        "name must be 1-255 characters, got 0",
        "priority must be one of low, medium, high",
        "links must have at most 100 items, got 101",
    ]
    assert not Todo.objects.exists()


def test_same_id_for_two_owners_is_two_todos(alice, bob):
    _put(alice.user, "buy-milk", "alice")
    _put(bob.user, "buy-milk", "bob")
    assert Todo.objects.filter(key="buy-milk").count() == 2
    assert selectors.todo_get(owner=alice.user, key="buy-milk").name == "alice"
    services.todo_delete(owner=bob.user, key="buy-milk")
    assert selectors.todo_get(owner=alice.user, key="buy-milk").deleted_at is None
    assert [t.name for t in selectors.todo_list(owner=bob.user, include_deleted=True)] == ["bob"]
    assert selectors.todo_list(owner=bob.user) == []


def test_deleted_todos_stay_in_the_default_manager_and_out_of_alive(alice):
    _put(alice.user, "gone")
    services.todo_delete(owner=alice.user, key="gone")
    assert Todo.objects.filter(key="gone").exists()
    assert not Todo.objects.alive().filter(key="gone").exists()
    with pytest.raises(NotFound):
        selectors.todo_get(owner=alice.user, key="gone")
    assert selectors.todo_get(owner=alice.user, key="gone", include_deleted=True).deleted_at is not None


def test_limit_counts_deleted_todos_and_allows_replacing(alice):
    alice.user.account.max_tasks = 2
    alice.user.account.save()
    _put(alice.user, "one")
    _put(alice.user, "two")
    services.todo_delete(owner=alice.user, key="one")
    with pytest.raises(LimitReached, match=r"2 todos exist and the limit is 2"):
        _put(alice.user, "three")
    assert _put(alice.user, "two", "renamed").name == "renamed"
    assert selectors.todo_usage(owner=alice.user) == selectors.Usage(count=2, max_tasks=2, percentage=100)


@pytest.mark.parametrize(
    ("count", "limit", "percentage"),
    [(0, 1200, 0), (42, 1200, 4), (6, 1200, 1), (1, 8, 13), (3, 8, 38), (1, 3, 33), (1, 0, 100)],
)
def test_usage_percentage_rounds_half_up(alice, count, limit, percentage):
    alice.user.account.max_tasks = max(limit, count)
    alice.user.account.save()
    for index in range(count):
        _put(alice.user, f"t{index}")
    alice.user.account.max_tasks = limit
    alice.user.account.save()
    assert selectors.todo_usage(owner=alice.user).percentage == percentage


def test_every_write_moves_the_data_version_forward(alice):
    first = _put(alice.user, "a")
    stamps = [first.updated_at]
    stamps.append(_put(alice.user, "a", "again").updated_at)
    stamps.append(services.todo_complete(owner=alice.user, key="a").updated_at)
    stamps.append(services.todo_reopen(owner=alice.user, key="a").updated_at)
    stamps.append(services.todo_delete(owner=alice.user, key="a").updated_at)
    assert stamps == sorted(set(stamps))


def test_a_put_that_changes_nothing_writes_nothing(alice):
    deadline = datetime(2026, 12, 24, 18, 30, 0, 250000, tzinfo=UTC)
    fields = {"deadline_at": deadline, "priority": "high", "tags": ["Home"], "blocked_by": [], "links": ["r", "r"]}
    _put(alice.user, "r")
    first = _put(alice.user, "a", **fields)
    # The same put again (the same once stored: links deduplicated, tags lowercased): nothing written.
    with CaptureQueriesContext(connection) as queries:
        again = _put(alice.user, "a", deadline_at=deadline, priority="high", tags=["home"], links=["r"])
    assert not [query["sql"] for query in queries if query["sql"].lstrip().upper().startswith(("UPDATE", "INSERT"))]
    assert again.updated_at == first.updated_at
    assert Todo.objects.get(owner=alice.user, key="a").updated_at == first.updated_at
    # Any field that differs is a write, and so is restoring a deleted todo with the same fields.
    assert _put(alice.user, "a", **{**fields, "priority": "low"}).updated_at > first.updated_at
    services.todo_delete(owner=alice.user, key="a")
    restored = _put(alice.user, "a", **{**fields, "priority": "low"})
    assert restored.deleted_at is None and Todo.objects.get(owner=alice.user, key="a").deleted_at is None


def test_search_cache_sees_edits_completion_deletion_and_purge(alice, django_assert_max_num_queries):
    selectors.search_indexes.clear()
    _put(alice.user, "rocket", "Build a rocket")
    _put(alice.user, "garden", "Weed the garden")
    assert [t.key for t in selectors.todo_search(owner=alice.user, query="rocket")] == ["rocket"]
    with django_assert_max_num_queries(2):  # the version and the rows: no rebuild while nothing changed
        assert [t.key for t in selectors.todo_search(owner=alice.user, query="rocket")] == ["rocket"]
    _put(alice.user, "garden", "Build a rocket garden")
    assert {t.key for t in selectors.todo_search(owner=alice.user, query="rocket")} == {"rocket", "garden"}
    services.todo_complete(owner=alice.user, key="garden")
    assert [t.key for t in selectors.todo_search(owner=alice.user, query="rocket")] == ["rocket"]
    assert len(selectors.todo_search(owner=alice.user, query="rocket", include_completed=True)) == 2
    services.todo_delete(owner=alice.user, key="rocket")
    assert [t.key for t in selectors.todo_search(owner=alice.user, query="rocket", include_completed=True)] == [
        "garden"
    ]
    Todo.objects.filter(owner=alice.user, key="garden").delete()  # a purge by a person
    assert selectors.todo_search(owner=alice.user, query="rocket", include_completed=True) == []


def test_search_cache_is_per_owner(alice, bob):
    _put(alice.user, "x", "Alice's rocket")
    _put(bob.user, "x", "Bob's rocket")
    assert [t.name for t in selectors.todo_search(owner=alice.user, query="rocket")] == ["Alice's rocket"]
    assert [t.name for t in selectors.todo_search(owner=bob.user, query="rocket")] == ["Bob's rocket"]


@pytest.mark.parametrize("token", ["", "garbage", "a:b", "é:ü", "x" * 600, "WyJ1IiwwXQ:AAAA"])
def test_list_link_user_refuses_anything_not_signed_by_us(alice, token):
    assert list_link_user(token) is None


def test_list_page_opens_for_a_logged_in_session_only_with_its_own_todos(alice, bob):
    _put(alice.user, "a", "Alice's plan")
    _put(bob.user, "b", "Bob's plan")
    browser = BrowserClient()
    browser.force_login(alice.user)
    page = browser.get("/list")
    assert page.status_code == 200
    assert "Alice&#x27;s plan" in page.content.decode() and "Bob" not in page.content.decode()
    # A link in the URL is judged alone: a bad one is refused even with a session.
    assert browser.get("/list", {"t": "forged"}).status_code == 403
    bob_link = list_url(user=bob.user).removeprefix("http://127.0.0.1:8000")
    assert "Bob&#x27;s plan" in browser.get(bob_link).content.decode()
