"""Reads of a user's todos, always scoped by owner."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db import connection, connections, router
from django.db.models import Case, Count, F, IntegerField, Max, Value, When

from accounts.models import Account
from accounts.services import account_for
from base.lru import BoundedLru
from todos.exceptions import NotFound
from todos.models import Priority, Todo, TodoQuerySet
from todos.planning import TodoFilter, open_blockers, parents, subtree
from todos.search import Doc, TodoIndex
from todos.timestamps import clock

_TODO_TABLE = connection.ops.quote_name(Todo._meta.db_table)
_ACCOUNT_TABLE = connection.ops.quote_name(Account._meta.db_table)
SEARCH_CACHE_SIZE = 64
SEARCH_CACHE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Usage:
    count: int
    max_tasks: int
    percentage: int


def todo_get(*, owner: User, key: str, include_deleted: bool = False) -> Todo:
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


PRIORITY_ORDER: dict[str, int] = {Priority.HIGH: 0, Priority.MEDIUM: 1, Priority.LOW: 2}
NO_FILTER = TodoFilter()


@dataclass(frozen=True)
class _Graph:
    """How the owner's todos hang together: links and blockers of every one, and which are still open."""

    links: dict[str, list[str]]
    open_keys: set[str]


def _graph(owner: User) -> _Graph:
    rows = Todo.objects.owned_by(owner).values_list("key", "links", "completed_at", "deleted_at")
    links, open_keys = {}, set()
    for key, targets, completed_at, deleted_at in rows:
        links[key] = list(targets)
        if completed_at is None and deleted_at is None:
            open_keys.add(key)
    return _Graph(links, open_keys)


def _plan(owner: User, todos: Iterable[Todo], filters: TodoFilter, *, graph: _Graph | None = None) -> list[Todo]:
    """The todos that pass the filters, in the order given, each told which of its blockers are still open
    (``open_blockers``, what the compact view marks and next_todos skips)."""
    todos = list(todos)
    if graph is None:
        # The owner's graph costs a query; most lists need it for nothing (no sub-tree asked, nobody waiting).
        needed = filters.under is not None or any(todo.blocked_by for todo in todos)
        graph = _graph(owner) if needed else _Graph({}, set())
    inside: set[str] | None = None
    if filters.under is not None:
        if filters.under not in graph.links:
            raise NotFound()
        inside = subtree(filters.under, parents(graph.links))
    kept = []
    for todo in todos:
        deadline = todo.deadline_at
        if (
            (inside is not None and todo.key not in inside)
            or (filters.priority is not None and todo.priority != filters.priority)
            or (filters.tag is not None and filters.tag not in todo.tags)
            or (filters.due_before is not None and (deadline is None or deadline >= filters.due_before))
            or (filters.due_after is not None and (deadline is None or deadline < filters.due_after))
        ):
            continue
        todo.open_blockers = open_blockers(todo.blocked_by, graph.open_keys)
        kept.append(todo)
    return kept


def todo_list(
    *,
    owner: User,
    include_completed: bool = False,
    include_deleted: bool = False,
    filters: TodoFilter = NO_FILTER,
) -> list[Todo]:
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
    return _plan(owner, todos, filters)


@dataclass(frozen=True)
class NextTodos:
    """What to take next (``todos``), and apart the todos the caller itself holds (``held``), both in that order."""

    todos: list[Todo]
    held: list[Todo]


# Overdue first, then priority, then soonest deadline (none last), then oldest: smaller is sooner.
Urgency = tuple[bool, int, bool, datetime, datetime, str]


def _urgency(todo: Todo, now: datetime) -> Urgency:
    deadline = todo.deadline_at
    return (
        not (deadline is not None and deadline < now),
        PRIORITY_ORDER.get(todo.priority, len(PRIORITY_ORDER)),
        deadline is None,
        deadline or now,
        todo.created_at,
        todo.key,
    )


def todo_next(
    *,
    owner: User,
    limit: int = 10,
    filters: TodoFilter = NO_FILTER,
    claimer: str | None = None,
    include_claimed: bool = False,
) -> list[Todo]:
    """The todos to take next, as ``todo_next_apart`` ranks them, without the ones ``claimer`` holds (the /list
    page's "Next", and claim_next's candidates)."""
    return todo_next_apart(
        owner=owner, limit=limit, filters=filters, claimer=claimer, include_claimed=include_claimed
    ).todos


def todo_next_apart(
    *,
    owner: User,
    limit: int = 10,
    filters: TodoFilter = NO_FILTER,
    claimer: str | None = None,
    include_claimed: bool = False,
) -> NextTodos:
    """The pending todos nothing open blocks and no pending sub-task waits under, in the order to take them: overdue
    first, then priority, then soonest deadline (none last), then oldest. A sub-task ranks at least as high as the
    umbrella it hangs under, so an umbrella's sub-tasks take its place, in their own order. Todos someone else holds
    a live claim on are left out unless ``include_claimed``; those ``claimer`` holds come apart, in ``held`` (all of
    them, blocked or waiting on sub-tasks too: what it holds is its to finish or hand back)."""
    now = clock.now()
    pending = list(Todo.objects.owned_by(owner).alive().filter(completed_at__isnull=True))
    graph = _graph(owner)
    parent = parents(graph.links)
    umbrellas = {parent[key] for key in graph.open_keys if key in parent}
    own = {todo.key: _urgency(todo, now) for todo in pending}
    ranks: dict[str, tuple[Urgency, Urgency]] = {}
    for todo in pending:
        chain, step = [own[todo.key]], parent.get(todo.key)
        while step is not None and step in own:
            chain.append(own[step])
            step = parent.get(step)
        ranks[todo.key] = (min(chain), own[todo.key])
    free, held = [], []
    for todo in _plan(owner, pending, filters, graph=graph):
        if todo.claim_live(now) and claimer and todo.claimed_by == claimer:
            held.append(todo)
        elif not (todo.open_blockers or todo.key in umbrellas) and (include_claimed or not todo.claim_live(now)):
            free.append(todo)
    free.sort(key=lambda todo: ranks[todo.key])
    held.sort(key=lambda todo: ranks[todo.key])
    return NextTodos(todos=free[:limit], held=held)


def todo_usage(*, owner: User) -> Usage:
    # Read afresh: a long-lived stdio process holds the user object, and an operator may change the limit. One
    # statement, written out: this answers every get_list_usage, and building two ORM queries cost more than
    # running them.
    sql = (
        f"SELECT a.max_tasks, (SELECT COUNT(*) FROM {_TODO_TABLE} t WHERE t.owner_id = a.user_id) "
        f"FROM {_ACCOUNT_TABLE} a WHERE a.user_id = %s"
    )
    with connections[router.db_for_read(Todo)].cursor() as cursor:
        cursor.execute(sql, [owner.pk])
        row = cursor.fetchone()
    if row is None:
        account_for(owner)
        return todo_usage(owner=owner)
    limit, count = row
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


def _searchable(owner: User, include_completed: bool) -> TodoQuerySet:
    todos = Todo.objects.owned_by(owner).alive()
    return todos if include_completed else todos.filter(completed_at__isnull=True)


def todo_search(
    *,
    owner: User,
    query: str,
    include_completed: bool = False,
    limit: int = 20,
    filters: TodoFilter = NO_FILTER,
) -> list[Todo]:
    """Best matches first; deleted todos never; [] when no word of the query resembles a word of a todo.

    With filters, every match is ranked and the filters cut the ranking, so a filter never leaves fewer
    results than the limit while more matching todos exist.
    """
    stats = Todo.objects.owned_by(owner).aggregate(count=Count("pk"), latest=Max("updated_at"))
    version = (stats["count"], stats["latest"])
    slot = (owner.pk, include_completed)
    index = search_indexes.get(slot, version)
    if index is None:
        rows = _searchable(owner, include_completed).values_list("key", "name", "description")
        index = TodoIndex.build(Doc(key, name, description) for key, name, description in rows)
        search_indexes.put(slot, version, index)
    keys = index.search(query, max(len(index), 1) if filters else limit)
    if not keys:
        # Still through the filters: an unknown `under` is refused even when nothing matched.
        return _plan(owner, [], filters)
    found = {todo.key: todo for todo in _searchable(owner, include_completed).filter(key__in=keys)}
    # A todo changed between the two reads is left out rather than shown in a state it no longer has.
    return _plan(owner, [found[key] for key in keys if key in found], filters)[:limit]
