"""Refusing a project database (``.pillbox/pillbox.db``) whose shape our migrations never make, before any of its
rows is read, as the original Pillbox's files are refused (pillbox.original.judge).

A file is anyone's to write: a view standing in for one of our tables is computed when read (a recursive one
never ends), a trigger fires on our own writes, a generated or hidden column is computed on every row. None of
them is in a file this Pillbox makes, so any of them is refused, named. What our migrations do make (the
full-text index and the triggers that keep it in step) must be exactly what they make.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from functools import cache
from importlib import import_module
from pathlib import Path

from base.lru import BoundedLru
from pillbox import deadlines
from pillbox.exceptions import IncompatibleDb
from pillbox.original.files import ORIGINAL_TABLES
from pillbox.original.judge import ORIGINAL_TRIGGERS
from pillbox.original.recognise import recognise_openable
from pillbox.shaping import one_line

FOREIGN = "Pillbox never writes such a file; remove it, or ask whoever made it"


class Unsafe(IncompatibleDb):
    """A project database holding what this Pillbox never writes (a view, a trigger, a computed column)."""


def unsafe(path: Path, what: str) -> Unsafe:
    return Unsafe(f"{path} is not read: {what}. {FOREIGN}. Nothing was read from it and it was not changed.",
                  db_path=str(path))


def _normal(sql: str) -> str:
    return " ".join(sql.replace("IF NOT EXISTS ", "").split())


@cache
def our_objects() -> dict[str, tuple[str, frozenset[str]]]:
    """Name -> (type, the SQL texts our migrations give it, past and present) of the virtual tables and triggers a
    project's file may hold."""
    fulltext = import_module("pillbox.migrations.0002_fulltext")
    scope = import_module("pillbox.migrations.0006_fts_scope")
    change_log = import_module("pillbox.migrations.0011_change_log")
    superseded = import_module("pillbox.migrations.0012_superseded")
    made: dict[str, tuple[str, set[str]]] = {}
    for statement in [*fulltext.fts_statements("pillbox_pill"), *scope.sqlite_statements("pillbox_pill", scoped=False),
                      *change_log.sqlite_statements(change_log.LOCAL_TABLES),
                      *superseded.sqlite_statements(change_log.LOCAL_TABLES)]:
        found = re.match(r"CREATE (VIRTUAL TABLE|TRIGGER)(?: IF NOT EXISTS)? (\w+)", statement)
        if found:
            kind = "table" if found[1] == "VIRTUAL TABLE" else "trigger"
            made.setdefault(found[2], (kind, set()))[1].add(_normal(statement))
    return {name: (kind, frozenset(texts)) for name, (kind, texts) in made.items()}


def judge_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Unsafe naming the first object of the file this Pillbox does not make. Reads only the schema."""
    ours = our_objects()
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    names = {name for _, name, _, _ in rows}
    # A project file the original Pillbox wrote holds its tables, their full-text index and triggers beside ours
    # (pillbox.original.judge judges those before they are read).
    original = ORIGINAL_TABLES <= names
    if original:  # the original's own judge first, in its words (it knows the original's triggers and sizes)
        recognise_openable(path)
    for kind, name, table, sql in rows:
        shown = one_line(str(name), 80)
        if kind == "view":
            raise unsafe(path, f"it holds a view ({shown}), and a view is computed when read")
        if name in ours and (kind != ours[name][0] or _normal(sql or "") not in ours[name][1]):
            raise unsafe(path, f"its {shown} is not the {ours[name][0]} this Pillbox makes")
        if kind == "trigger" and name not in ours and not (original and (name, table) in ORIGINAL_TRIGGERS):
            raise unsafe(path, f"it holds a trigger this Pillbox does not make ({shown} on {one_line(str(table), 80)})")
        if kind == "table" and name not in ours and (sql or "").lstrip().upper().startswith("CREATE VIRTUAL"):
            if not original:
                raise unsafe(path, f"its {shown} is a virtual table this Pillbox does not make")
    for kind, name, _, sql in rows:
        if kind != "table" or (sql or "").lstrip().upper().startswith("CREATE VIRTUAL"):
            continue
        for column in conn.execute("SELECT name, hidden FROM pragma_table_xinfo(?)", (name,)):
            if column[1]:  # 1 hidden, 2 generated (virtual), 3 generated (stored)
                raise unsafe(path, f"the column {one_line(str(column[0]), 80)} of its {one_line(str(name), 80)} "
                                   "table is generated or hidden, computed on every row read")


FileKey = tuple[str, int, int, int, int, int, int]


def file_key(path: Path) -> FileKey:
    """What changes when the file does: its identity, size and time, and its write-ahead log's (where SQLite
    writes first, leaving the file itself as it was until a checkpoint). OSError when it is gone."""
    info = path.stat()
    try:
        wal = path.with_name(path.name + "-wal").stat()
        log = (wal.st_mtime_ns, wal.st_size)
    except OSError:
        log = (0, 0)
    return (str(path), info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size, *log)


# A verdict per file as it is on disk: judged again once it changed (a write, a checkout, a copy over it).
_judged: BoundedLru[FileKey, bool] = BoundedLru(max_items=4096, max_bytes=4 << 20)


def judge_file(path: Path) -> None:
    """Unsafe when the project database at ``path`` holds what this Pillbox never writes; IncompatibleDb when it
    cannot be read as a database within the deadline. Asked before any of its rows is read."""
    try:
        key = file_key(path)
    except OSError:
        return  # nothing there yet: a database this Pillbox makes now
    if _judged.get(key):
        return
    try:
        with closing(deadlines.read_only(path)) as conn:
            judge_schema(conn, path)
    except sqlite3.DatabaseError as exc:
        if deadlines.interrupted(exc):
            raise unsafe(path, f"its schema could not be read within {deadlines.read_seconds():g} s") from None
        return  # not a database at all: opening it says so, in the words of the check that meets it
    _judged.put(key, True, size=len(key[0]))
