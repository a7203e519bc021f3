"""Recognising a file of the original by its tables and its ``schema_migrations``, never by its path, through a
read-only connection."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from base.lru import BoundedLru
from pillbox.models import OriginalImport
from pillbox.original.files import AGAIN, GLOBAL_TABLES, ORIGINAL_TABLES, RECORD_TABLE, Found, ImportFailed
from pillbox.original.judge import judge_tables, judge_triggers


def read_only(path: Path) -> sqlite3.Connection:
    # mode=ro: whatever happens here, this connection cannot write to the original's file.
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=60)


def unreadable(path: Path, reason: object) -> ImportFailed:
    return ImportFailed(
        f"{path} could not be read ({reason}); check that it is readable or restore it from a backup, {AGAIN}. "
        "Nothing was imported from it and it was not changed.",
        db_path=str(path),
    )


def openable(path: Path) -> None:
    """ImportFailed naming why, when the file cannot even be opened for reading (its mode or owner forbid it):
    SQLite would only say it is "unable to open database file".

    Asked of access(2), never by opening the file: the file may be a database this process already has open
    through SQLite (our global file is the original's by default), and closing another descriptor of it drops
    every POSIX lock the process holds on it, SQLite's included. After that the process's connections stopped
    seeing what other processes wrote (the SQLite documentation warns it can corrupt the file)."""
    if not os.access(path, os.R_OK):
        reason = "permission denied" if path.exists() else "no such file or directory"
        raise unreadable(path, reason)


def recognise(path: Path) -> Found | None:
    """The original Pillbox's file at ``path``, or None when the file is something else.

    Raises ImportFailed when the file exists but cannot be read as a database at all.
    """
    openable(path)
    return recognise_openable(path)


def recognise_openable(path: Path) -> Found | None:
    """``recognise`` for a file already known to open."""
    try:
        with closing(read_only(path)) as conn:
            # A view in place of one of its tables still makes the file the original's: read() refuses it.
            tables = {name for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
            if not ORIGINAL_TABLES <= tables:
                return None
            judge_tables(conn, path)
            version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
            recorded = RECORD_TABLE in tables and bool(
                conn.execute(f"SELECT 1 FROM {RECORD_TABLE} WHERE kind = ? LIMIT 1",
                             (OriginalImport.KIND_LOCAL,)).fetchone()
            )
            if not recorded:  # once imported, the file holds our tables and their triggers
                judge_triggers(conn, path)
    except sqlite3.DatabaseError as exc:
        raise unreadable(path, exc) from None
    kind = OriginalImport.KIND_GLOBAL if GLOBAL_TABLES <= tables else OriginalImport.KIND_LOCAL
    return Found(path=path, kind=kind, version=int(version or 0), recorded=recorded)


def is_original(path: Path) -> bool:
    try:
        return recognise(path) is not None
    except ImportFailed:
        return False


_global_originals: BoundedLru[tuple[str, int, int], bool] = BoundedLru(max_items=4096, max_bytes=4 << 20)


def is_global_original(path: Path) -> bool:
    """Whether ``path`` is the original's global file (never a project's database, whatever its place).

    Asked on every walk up from the working directory, so the answer is kept per file (a file does not turn
    into the original's global database)."""
    try:
        stat = path.stat()
    except (OSError, ValueError):
        return False
    key = (str(path), stat.st_dev, stat.st_ino)
    known = _global_originals.get(key)
    if known is None:
        try:
            found = recognise(path)
        except ImportFailed:
            return False
        known = found is not None and found.kind == OriginalImport.KIND_GLOBAL
        _global_originals.put(key, known, size=len(key[0]))
    return known


def only_our_constraints(sender: object, connection: Any, **kwargs: object) -> None:
    """Django checks every table's foreign keys after each SQLite migration; in a file shared with the original,
    an orphan row of the original's (it runs with foreign keys unenforced) must not stop our schema from being
    created beside it. Connected to ``connection_created``: the check then covers our tables only."""
    if connection.vendor != "sqlite":
        return
    check_all = connection.check_constraints

    def check_ours(table_names: list[str] | None = None) -> None:
        if table_names is None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")
                tables = [name for (name,) in cursor.fetchall()]
            theirs = ORIGINAL_TABLES | GLOBAL_TABLES
            if any(name in theirs for name in tables):
                table_names = [name for name in tables if name not in theirs]
        check_all(table_names)

    connection.check_constraints = check_ours
