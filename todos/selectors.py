"""Reads of a user's todos, always scoped by owner."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Case, Count, F, IntegerField, Max, Value, When

from accounts.models import Account
from accounts.services import account_for
from config.lru import BoundedLru
from todos.exceptions import NotFound
from todos.models import Priority, Todo
from todos.search import Doc, TodoIndex

SEARCH_CACHE_SIZE = 64
SEARCH_CACHE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Usage:
    count: int
    max_tasks: int
    percentage: int


def todo_get(*, owner: AbstractBaseUser, key: str, include_deleted: bool = False) -> Todo:
    todos = Todo.objects.owned_by(owner)
    todo = (todos if include_deleted else todos.alive()).filter(key=key).first()
    if todo is None:
        raise NotFound()
    return todo


_PRIORITY_RANK = Case(
    When(priority=Priority.HIGH, then=Value(0)),
    When(priority=Priority.MEDIUM, then=Value(1)),
    default=Value(2),
    output_field=IntegerField(),
)


def todo_list(*, owner: AbstractBaseUser, include_completed: bool = False, include_deleted: bool = False) -> list[Todo]:
    """Pending (priority, soonest deadline, oldest), then completed (newest first), then deleted (newest first)."""
    alive = Todo.objects.owned_by(owner).alive()
    todos = list(
        alive.filter(completed_at__isnull=True).order_by(
            _PRIORITY_RANK, F("deadline_at").asc(nulls_last=True), "created_at", "key"
        )
    )
    if include_completed:
        todos += alive.filter(completed_at__isnull=False).order_by("-completed_at", "key")
    if include_deleted:
        todos += Todo.objects.owned_by(owner).filter(deleted_at__isnull=False).order_by("-deleted_at", "key")
    return todos


def todo_usage(*, owner: AbstractBaseUser) -> Usage:
    count = Todo.objects.owned_by(owner).count()
    account_for(owner)
    # Read afresh: a long-lived stdio process holds the user object, and an operator may change the limit.
    limit = Account.objects.filter(user=owner).values_list("max_tasks", flat=True).get()
    # Rounded half up in integers (Python's round() would round 2.5 to 2); a zero limit is simply full.
    percentage = (count * 200 + limit) // (2 * limit) if limit else 100
    return Usage(count=count, max_tasks=limit, percentage=percentage)


class _IndexCache:
    """Built search indexes per (owner, includeCompleted), kept while the owner's data version is unchanged.

    The version is (count, max updated_at) over all the owner's todos: every write stamps a strictly later
    ``updated_at`` (todos.services), and a purge changes the count. An LRU bounded by count and by bytes bounds
    the memory, however many users search and however long their todos.
    """

    def __init__(self, size: int, max_bytes: int) -> None:
        self.entries: BoundedLru[tuple[int, bool], tuple[tuple[int, datetime | None], TodoIndex]] = BoundedLru(
            max_items=size, max_bytes=max_bytes, size_of=lambda entry: entry[1].approximate_bytes
        )

    def get(self, slot: tuple[int, bool], version: tuple[int, datetime | None]) -> TodoIndex | None:
        entry = self.entries.get(slot)
        return entry[1] if entry is not None and entry[0] == version else None

    def put(self, slot: tuple[int, bool], version: tuple[int, datetime | None], index: TodoIndex) -> None:
        self.entries.put(slot, (version, index))

    def clear(self) -> None:
        self.entries.clear()


search_indexes = _IndexCache(SEARCH_CACHE_SIZE, SEARCH_CACHE_BYTES)


def _searchable(owner: AbstractBaseUser, include_completed: bool):  # -> TodoQuerySet
    todos = Todo.objects.owned_by(owner).alive()
    return todos if include_completed else todos.filter(completed_at__isnull=True)


def todo_search(*, owner: AbstractBaseUser, query: str, include_completed: bool = False, limit: int = 20) -> list[Todo]:
    """Best matches first; deleted todos never; [] when no word of the query resembles a word of a todo."""
    stats = Todo.objects.owned_by(owner).aggregate(count=Count("pk"), latest=Max("updated_at"))
    version = (stats["count"], stats["latest"])
    slot = (owner.pk, include_completed)
    index = search_indexes.get(slot, version)
    if index is None:
        rows = _searchable(owner, include_completed).values_list("key", "name", "description")
        index = TodoIndex.build(Doc(key, name, description) for key, name, description in rows)
        search_indexes.put(slot, version, index)
    keys = index.search(query, limit)
    if not keys:
        return []
    found = {todo.key: todo for todo in _searchable(owner, include_completed).filter(key__in=keys)}
    # A todo changed between the two reads is left out rather than shown in a state it no longer has.
    return [found[key] for key in keys if key in found]
