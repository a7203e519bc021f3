"""What changed in a database since a cache read it: the entries of its change log (migration 0009) after the
cache's ``Position``, so that the cache re-reads the rows that changed instead of its whole scope.

A cache takes its position (``position``) in the same snapshot as its full read (``snapshot``), then asks
``since`` before each use: the entries after it, or None when the log no longer reaches back that far (the
cache reads its scope whole again). Entries written by any connection, in this process or another, are seen.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connections, transaction
from django.db.backends.utils import CursorWrapper

# Beyond this many entries, re-reading the rows one by one costs more than reading the scope whole.
MOST_CHANGES = 5_000


@dataclass(frozen=True)
class Change:
    id: int
    kind: str  # "pill", "capsule", "pill_vector", "capsule_vector" or "prescription"
    seq: int | None
    scope: str | None  # before the write: the row's prescription (a pill) or owner (a capsule)
    words: str | None  # before the write: the row's title, content and compound, when it was live


@dataclass(frozen=True)
class Position:
    """Where a cache is in the log. SQLite: the last entry read (``after``). PostgreSQL, whose entries may
    commit out of their ids' order: the oldest transaction still running at the last read (``horizon``), the
    entries of that transaction or later already applied (``applied``), and the largest id seen (``after``)."""

    after: int
    horizon: int | None = None
    applied: frozenset[int] = frozenset()


@contextmanager
def snapshot(alias: str) -> Iterator[None]:
    """One consistent view of the database for a full read and its ``position``: a write committed between the
    two would otherwise be both in the rows read and after the position (counted twice). A read transaction:
    on SQLite a deferred one (Django's ``atomic`` begins IMMEDIATE there, which would hold other writers off for
    the length of the read), on PostgreSQL REPEATABLE READ."""
    connection = connections[alias]
    if connection.in_atomic_block:
        yield  # already one transaction (a test's, or a caller's): one view
        return
    if connection.vendor == "postgresql":
        with transaction.atomic(using=alias):
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield
        return
    connection.ensure_connection()
    raw = connection.connection
    if raw.in_transaction:
        yield
        return
    raw.execute("BEGIN DEFERRED")
    try:
        yield
    finally:
        raw.execute("COMMIT")  # nothing was written: this only ends the read


def position(alias: str) -> Position:
    """The log's current end, for a cache about to read (or having read) its scope in the same ``snapshot``."""
    with connections[alias].cursor() as cursor:
        if connections[alias].vendor != "postgresql":
            cursor.execute("SELECT COALESCE(MAX(id), 0) FROM pillbox_change")
            return Position(after=int(cursor.fetchone()[0]))
        cursor.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text")
        horizon = int(cursor.fetchone()[0])
        cursor.execute("SELECT id FROM pillbox_change WHERE xact >= %s::text::xid8", [str(horizon)])
        applied = frozenset(int(row[0]) for row in cursor.fetchall())
        cursor.execute("SELECT COALESCE(MAX(id), 0) FROM pillbox_change")
        return Position(after=int(cursor.fetchone()[0]), horizon=horizon, applied=applied)


def since(alias: str, at: Position) -> tuple[list[Change], Position] | None:
    """The entries after ``at`` and the position after them; None when the log was pruned past ``at`` or holds
    more than ``MOST_CHANGES`` entries after it (read the scope whole)."""
    with connections[alias].cursor() as cursor:
        if at.horizon is None:
            cursor.execute("SELECT COUNT(*) FROM pillbox_change WHERE id > %s", [at.after])
            count = cursor.fetchone()[0]
            if not count:
                return [], at
            if count > MOST_CHANGES or _pruned(cursor, at.after):
                return None
            cursor.execute("SELECT id, kind, seq, scope, words FROM pillbox_change WHERE id > %s ORDER BY id",
                           [at.after])
            changes = [Change(*row) for row in cursor.fetchall()]
            return changes, Position(after=changes[-1].id)
        cursor.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text")
        horizon = int(cursor.fetchone()[0])
        cursor.execute("SELECT id FROM pillbox_change WHERE xact >= %s::text::xid8", [str(at.horizon)])
        ids = {int(row[0]) for row in cursor.fetchall()}
        fresh = sorted(ids - at.applied)
        if not fresh:
            return [], at
        if len(fresh) > MOST_CHANGES or _pruned(cursor, at.after):
            return None
        cursor.execute("SELECT id, kind, seq, scope, words FROM pillbox_change WHERE id = ANY(%s) ORDER BY id",
                       [fresh])
        changes = [Change(*row) for row in cursor.fetchall()]
        cursor.execute("SELECT id FROM pillbox_change WHERE xact >= %s::text::xid8", [str(horizon)])
        # Entries of transactions still running at this read may commit later with smaller ids: the next read
        # starts from the oldest of them, and skips what it already applied.
        applied = frozenset(int(row[0]) for row in cursor.fetchall())
        return changes, Position(after=max(at.after, fresh[-1]), horizon=horizon, applied=applied)


def _pruned(cursor: CursorWrapper, after: int) -> bool:
    """Whether entries after ``after`` were pruned: the log's first entry lies beyond the one after it."""
    cursor.execute("SELECT MIN(id) FROM pillbox_change")
    first = cursor.fetchone()[0]
    return first is not None and first > after + 1
