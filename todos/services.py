"""Writes to a user's todos. Every function is keyword-only, scoped by owner, validated and atomic.

The writes an agent makes take ``holder`` (``todos.leases.Holder``): a todo someone else holds is refused unless the
holder's lease token is presented or ``force`` ends that claim. A person's writes (the /list page, the admin, the
REST API) pass None and act whoever holds the todo; claims themselves live in ``todos.leases``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max

from accounts.models import Account
from accounts.services import account_for
from todos import rules
from todos.exceptions import BlockerConflict, LimitReached, NotFound, ValidationFailed
from todos.leases import Holder, check_write, end_claim
from todos.models import Priority, Todo
from todos.planning import blocking_cycle
from todos.timestamps import clock

ONE_TICK = timedelta(microseconds=1)


def todo_field_problems(
    *,
    key: str,
    name: str,
    description: str,
    priority: str,
    links: Sequence[str],
    tags: Sequence[str] = (),
    blocked_by: Sequence[str] = (),
) -> list[str]:
    problems = [
        rules.id_problem(key),
        rules.text_problem("name", name, low=1, high=rules.NAME_MAX),
        rules.text_problem("description", description, low=0, high=rules.DESCRIPTION_MAX, multiline=True),
        None if priority in rules.PRIORITIES else rules.PRIORITY_PROBLEM,
    ]
    return [
        *(problem for problem in problems if problem),
        *rules.links_problems(links),
        *rules.tags_problems(tags),
        *rules.blockers_problems(blocked_by),
    ]


def _blocker_problems(owner: User, key: str, blocked_by: list[str]) -> list[str]:
    """Blockers must be the owner's live todos, and waiting on them must not close a loop back to ``key``.

    A blocker deleted since this todo named it may stay: sending a todo back as it was read must keep working.
    """
    rows = Todo.objects.owned_by(owner).values_list("key", "blocked_by", "deleted_at")
    graph = {other: list(blockers) for other, blockers, _ in rows}
    kept = set(graph.get(key, ()))
    deleted = {other for other, _, deleted_at in rows if deleted_at is not None and other not in kept}
    problems = []
    for index, blocker in enumerate(blocked_by):
        if blocker == key:
            problems.append(f"blockedBy item {index} is the todo itself ({key}); a todo cannot wait on itself")
        elif blocker not in graph:
            problems.append(f"blockedBy item {index} names no todo of yours: {blocker}")
        elif blocker in deleted:
            problems.append(f"blockedBy item {index} names a deleted todo: {blocker}")
    if not problems and (cycle := blocking_cycle(key, blocked_by, graph)):
        problems.append(f"blockedBy would make a cycle: {' → '.join(cycle)}; remove one of these blockers")
    return problems


def _lock_and_stamp(owner: User) -> tuple[Account, datetime]:
    """Serialise the owner's writes and pick a write time later than any of their todos' ``updated_at``.

    The lock keeps two concurrent creates from both passing the plan limit. Strictly increasing
    ``updated_at`` makes (count, max updated_at) a version of the owner's data even when clocks of several
    servers disagree, which is what the search index cache relies on.
    """
    account_for(owner)
    account = Account.objects.select_for_update().get(user=owner)
    latest = Todo.objects.owned_by(owner).aggregate(latest=Max("updated_at"))["latest"]
    now = clock.now()
    if latest is not None and now <= latest:
        now = latest + ONE_TICK
    return account, now


def todo_put(
    *,
    owner: User,
    key: str,
    name: str,
    description: str,
    priority: str = Priority.MEDIUM,
    completed_at: datetime | None = None,
    deadline_at: datetime | None = None,
    links: Sequence[str] = (),
    tags: Sequence[str] = (),
    blocked_by: Sequence[str] = (),
    holder: Holder | None = None,
) -> Todo:
    """Create the todo, or replace every field of the owner's todo with this id (restoring it if deleted). Replacing
    a live todo is an edit: ``holder`` must hold it or force."""
    if problems := todo_field_problems(
        key=key, name=name, description=description, priority=priority, links=links, tags=tags, blocked_by=blocked_by
    ):
        raise ValidationFailed(problems)
    blockers = rules.dedupe(blocked_by)
    # Every field a put replaces, as stored (a put also restores a deleted todo).
    values: dict[str, object] = {
        "name": name,
        "description": description,
        "priority": priority,
        "completed_at": completed_at,
        "deadline_at": deadline_at,
        "links": rules.dedupe(links),
        "tags": rules.normal_tags(tags),
        "blocked_by": blockers,
        "deleted_at": None,
    }
    with transaction.atomic():
        account, now = _lock_and_stamp(owner)
        # Checked under the owner's lock, so two concurrent puts cannot each close half of a loop.
        if blockers and (problems := _blocker_problems(owner, key, blockers)):
            raise BlockerConflict(problems)
        todo = Todo.objects.owned_by(owner).select_for_update().filter(key=key).first()
        claim_fields = check_write(todo, holder, now) if todo is not None and todo.deleted_at is None else []
        if todo is None:
            count = Todo.objects.owned_by(owner).count()
            if count >= account.max_tasks:
                raise LimitReached(
                    f"Todo limit reached: {count} todos exist and the limit is {account.max_tasks} "
                    "(completed and deleted todos count too); purge deleted todos on the /list page to make room"
                )
            todo = Todo(owner=owner, key=key, created_at=now)
        elif not claim_fields and all(getattr(todo, field) == value for field, value in values.items()):
            # Sent again as it is: nothing is written and updatedAt stays, so a repeated put answers the same and
            # changes nothing more (put_todo is marked idempotent; complete and reopen skip their no-op writes too).
            return todo
        fields = [*values, "updated_at", *claim_fields]
        for field, value in values.items():
            setattr(todo, field, value)
        if completed_at is not None:
            # Stored as done: whoever held it is finished with it, as with complete_todo.
            fields += end_claim(todo)
        todo.updated_at = now
        # Only the columns a put replaces (all of them for a new todo): a claim taken meanwhile, which does not
        # wait for the owner's lock, is not written back over.
        todo.save(update_fields=fields if todo.pk else None)
    return todo


UPDATABLE = ("name", "description", "priority", "completed_at", "deadline_at", "links", "tags", "blocked_by")
DEFAULTS: dict[str, object] = {
    "description": "",
    "priority": Priority.MEDIUM,
    "completed_at": None,
    "deadline_at": None,
    "links": [],
    "tags": [],
    "blocked_by": [],
}


def todo_update(*, owner: User, key: str, changes: Mapping[str, object], holder: Holder | None = None) -> Todo:
    """Change only the fields in ``changes`` (model field names; ``DEFAULTS`` gives what a cleared field
    becomes), with put's rules; a live todo only. Returns the todo, unchanged (updatedAt too) when nothing
    differs."""
    assert set(changes) <= set(UPDATABLE), changes
    with transaction.atomic():
        _, now = _lock_and_stamp(owner)
        todo = _alive_for_update(owner, key)
        claim_fields = check_write(todo, holder, now)
        merged: dict[str, Any] = {field: changes.get(field, getattr(todo, field)) for field in UPDATABLE}
        if problems := todo_field_problems(
            key=key,
            name=merged["name"],
            description=merged["description"],
            priority=merged["priority"],
            links=merged["links"],
            tags=merged["tags"] if "tags" in changes else (),
            blocked_by=merged["blocked_by"],
        ):
            raise ValidationFailed(problems)
        wanted: dict[str, Any] = dict(changes)
        for field, normalise in (("links", rules.dedupe), ("tags", rules.normal_tags), ("blocked_by", rules.dedupe)):
            if field in wanted:
                wanted[field] = normalise(merged[field])
        blockers = wanted.get("blocked_by")
        if blockers and (problems := _blocker_problems(owner, key, blockers)):
            raise BlockerConflict(problems)
        changed = [field for field, value in wanted.items() if getattr(todo, field) != value]
        if not changed and not claim_fields:
            return todo
        for field in changed:
            setattr(todo, field, wanted[field])
        if "completed_at" in changed and todo.completed_at is not None:
            claim_fields = end_claim(todo)
        changed += claim_fields
        todo.updated_at = now
        # Only what was asked for, so a claim or another field written meanwhile is never written back over.
        todo.save(update_fields=[*changed, "updated_at"])
    return todo


def _alive_for_update(owner: User, key: str) -> Todo:
    # Locked on PostgreSQL, so a claim landing meanwhile waits for this write and a write never overlooks it.
    todo = Todo.objects.owned_by(owner).alive().select_for_update().filter(key=key).first()
    if todo is None:
        raise NotFound()
    return todo


def todo_complete(*, owner: User, key: str, holder: Holder | None = None) -> Todo:
    """Mark the todo done now; a todo already done keeps its completion time."""
    with transaction.atomic():
        _, now = _lock_and_stamp(owner)
        todo = _alive_for_update(owner, key)
        check_write(todo, holder, now)
        if todo.completed_at is None:
            todo.completed_at = todo.updated_at = now
            # Done is the end of the work: whoever held it hands it back.
            todo.save(update_fields=["completed_at", "updated_at", *end_claim(todo)])
    return todo


def todo_reopen(*, owner: User, key: str, holder: Holder | None = None) -> Todo:
    with transaction.atomic():
        _, now = _lock_and_stamp(owner)
        todo = _alive_for_update(owner, key)
        claim_fields = check_write(todo, holder, now)
        if todo.completed_at is not None:
            todo.completed_at = None
            todo.updated_at = now
            todo.save(update_fields=["completed_at", "updated_at", *claim_fields])
        elif claim_fields:
            todo.save(update_fields=claim_fields)
    return todo


def todo_delete(*, owner: User, key: str, holder: Holder | None = None) -> Todo:
    """Soft delete: the todo still counts against the plan until a person purges it on /list."""
    with transaction.atomic():
        _, now = _lock_and_stamp(owner)
        todo = _alive_for_update(owner, key)
        check_write(todo, holder, now)
        todo.deleted_at = todo.updated_at = now
        todo.save(update_fields=["deleted_at", "updated_at", *end_claim(todo)])
    return todo


# ---------------------------------------------------------------- for people (the /list page, admin, API)


def todo_restore(*, owner: User, key: str) -> Todo:
    """Bring back a deleted todo as it was (pending or completed); a live todo is returned unchanged."""
    with transaction.atomic():
        _, now = _lock_and_stamp(owner)
        todo = Todo.objects.owned_by(owner).filter(key=key).first()
        if todo is None:
            raise NotFound()
        if todo.deleted_at is not None:
            todo.deleted_at = None
            todo.updated_at = now
            todo.save(update_fields=["deleted_at", "updated_at"])
    return todo


def todo_purge(*, owner: User, key: str) -> None:
    """Delete the todo for good, freeing its place in the plan. Only a deleted todo can be purged, so a
    person cannot lose a live one with one click; the count drops, which is what the search cache sees."""
    with transaction.atomic():
        _lock_and_stamp(owner)
        deleted, _ = Todo.objects.owned_by(owner).filter(key=key, deleted_at__isnull=False).delete()
        if not deleted:
            raise NotFound()
