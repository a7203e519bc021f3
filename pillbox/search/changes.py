"""What changed in a database since a cache read it: the entries of its change log (migration 0011) after the
cache's ``Position``, so that the cache re-reads the rows that changed instead of its whole scope.

A cache takes its position (``position``) in the same snapshot as its full read (``snapshot``), then asks
``since`` before each use: the entries after it, or None when the log no longer reaches back that far (the
cache reads its scope whole again). Entries written by any connection, in this process or another, are seen.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from django.db import connections, transaction
from django.db.backends.utils import CursorWrapper

# Beyond this many entries, re-reading the rows one by one costs more than reading the scope whole.
MOST_CHANGES = 5_000


# The oldest transaction whose entries a reader may not have seen yet: the oldest still running, or the reader's
# own (a snapshot leaves its own transaction out of the running ones, though it may commit entries later).
HORIZON = ("SELECT LEAST(pg_snapshot_xmin(pg_current_snapshot()), "
           "COALESCE(pg_current_xact_id_if_assigned(), pg_snapshot_xmin(pg_current_snapshot())))::text")


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
    # SQLite: the entry ``after`` names (its kind and seq). Its ids come back after a rollback (or in a file
    # restored from a copy): an entry of that id saying otherwise means the log is not the one this copy read.
    last: tuple[str, int | None] | None = None
    # PostgreSQL: the reader's own transaction, when it had written: the copy holds its uncommitted rows, and
    # is read again if that transaction rolled back.
    writer: int | None = None


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
            cursor.execute("SELECT id, kind, seq FROM pillbox_change ORDER BY id DESC LIMIT 1")
            row = cursor.fetchone()
            return Position(after=0) if row is None else Position(after=int(row[0]), last=(row[1], row[2]))
        cursor.execute(HORIZON)
        horizon = int(cursor.fetchone()[0])
        cursor.execute("SELECT id FROM pillbox_change WHERE xact >= %s::text::xid8", [str(horizon)])
        applied = frozenset(int(row[0]) for row in cursor.fetchall())
        cursor.execute("SELECT COALESCE(MAX(id), 0), pg_current_xact_id_if_assigned()::text FROM pillbox_change")
        after, writer = cursor.fetchone()
        return Position(after=int(after), horizon=horizon, applied=applied,
                        writer=None if writer is None else int(writer))


def since(alias: str, at: Position) -> tuple[list[Change], Position] | None:
    """The entries after ``at`` and the position after them; None when the log was pruned past ``at`` or holds
    more than ``MOST_CHANGES`` entries after it (read the scope whole)."""
    with connections[alias].cursor() as cursor:
        if at.horizon is None:
            cursor.execute("SELECT kind, seq FROM pillbox_change WHERE id = %s", [at.after])
            row = cursor.fetchone()
            if row is not None and tuple(row) != at.last:
                return None  # not the log this copy read (a rollback, a restored file)
            cursor.execute("SELECT COUNT(*) FROM pillbox_change WHERE id >= %s", [at.after])
            count = cursor.fetchone()[0]
            if row is None and at.after and not count:
                return None  # the log went back past this copy
            count -= row is not None
            if not count:
                return [], at
            if count > MOST_CHANGES or _pruned(cursor, at.after):
                return None
            cursor.execute("SELECT id, kind, seq, scope, words FROM pillbox_change WHERE id > %s ORDER BY id",
                           [at.after])
            changes = [Change(*row) for row in cursor.fetchall()]
            last = changes[-1]
            return changes, Position(after=last.id, last=(last.kind, last.seq))
        writer = at.writer
        if writer is not None:
            cursor.execute("SELECT pg_xact_status(%s::text::xid8)", [str(writer)])
            status = cursor.fetchone()[0]
            if status == "aborted":
                return None  # the copy held rows that never were
            if status == "committed":
                writer = None
        cursor.execute("SELECT id FROM pillbox_change WHERE xact >= %s::text::xid8", [str(at.horizon)])
        ids = {int(row[0]) for row in cursor.fetchall()}
        fresh = sorted(ids - at.applied)
        if not fresh:
            return [], replace(at, writer=writer)
        cursor.execute(HORIZON)
        horizon = int(cursor.fetchone()[0])
        if len(fresh) > MOST_CHANGES or _pruned(cursor, at.after):
            return None
        cursor.execute("SELECT id, kind, seq, scope, words FROM pillbox_change WHERE id = ANY(%s) ORDER BY id",
                       [fresh])
        changes = [Change(*row) for row in cursor.fetchall()]
        cursor.execute("SELECT id FROM pillbox_change WHERE xact >= %s::text::xid8", [str(horizon)])
        # Entries of transactions still running at this read may commit later with smaller ids: the next read
        # starts from the oldest of them, and skips what it already applied.
        applied = frozenset(int(row[0]) for row in cursor.fetchall())
        return changes, Position(after=max(at.after, fresh[-1]), horizon=horizon, applied=applied, writer=writer)


def unchanged(alias: str, at: Position) -> Position | None:
    """``at`` (brought up to date) when nothing was written since it, in one statement and outside any
    transaction; None when something may have been: ask ``since`` then, in the ``snapshot`` its reads need.

    What a cache asks before every use: on PostgreSQL, the snapshot a read of the changes needs costs three
    statements of its own (begin, isolation, commit), for the common answer that nothing changed."""
    if at.horizon is None:  # SQLite: its snapshot costs no round trip, and its file says first whether it changed
        return None
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT ARRAY(SELECT id FROM pillbox_change WHERE xact >= %s::text::xid8), "
                       "CASE WHEN %s::text IS NULL THEN NULL ELSE pg_xact_status(%s::text::xid8) END",
                       [str(at.horizon), None if at.writer is None else str(at.writer),
                        None if at.writer is None else str(at.writer)])
        ids, status = cursor.fetchone()
    if status == "aborted" or set(ids) - at.applied:
        return None
    return replace(at, writer=None if status == "committed" else at.writer)


def _pruned(cursor: CursorWrapper, after: int) -> bool:
    """Whether entries after ``after`` were pruned: the log's first entry lies beyond the one after it."""
    cursor.execute("SELECT MIN(id) FROM pillbox_change")
    first = cursor.fetchone()[0]
    return first is not None and first > after + 1


def rows_since(alias: str, at: Position, kind: str) -> tuple[list[int], Position] | None:
    """The rows of ``kind`` (pill or capsule) whose text or vector changed since ``at``, and the log's new end;
    None when they cannot be told row by row: the log was pruned past ``at``, or (pills) a prescription changed,
    which moves every pill of it in or out of a scope."""
    found = since(alias, at)
    if found is None:
        return None
    entries, end = found
    if kind == "pill" and any(entry.kind == "prescription" for entry in entries):
        return None
    kinds = {kind, f"{kind}_vector"}
    return sorted({entry.seq for entry in entries if entry.kind in kinds and entry.seq is not None}), end
