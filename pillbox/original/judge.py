"""Refusing a file that holds the original's tables in a shape the original never writes, or more than one may
import: asked before any of its rows is read."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from django.conf import settings

from pillbox.global_db import global_db_file
from pillbox.original.files import AGAIN, READ_TABLES, RECORD_TABLE, Found, Refused

# What a file of the original may hold and still be read (issue 23: a 72 KB file whose generated column makes
# 200 MB a row). Its rows per table are held to the user's quotas (PILLBOX_QUOTAS), its tables' stored bytes to
# PILLBOX_IMPORT_MAX_BYTES, and each text to the tools' own limits (pillbox.limits; longer is cut, as a compound
# always was).
QUOTA_OF = {"bottles": "bottles", "prescriptions": "prescriptions", "pills": "pills", "capsules": "capsules",
            "registered_bottles": "bottles"}
# The original's own triggers (they keep its full-text index in step with its rows, and fire only when the
# original writes them, which this package never does). Any other trigger in its file is refused: it could fire on
# our writes into the same file.
ORIGINAL_TRIGGERS = frozenset({(f"{table}_a{event}", table) for table in ("pills", "capsules") for event in "iud"})


FOREIGN = "The original Pillbox never writes such a file; remove it or ask whoever made it"
TOO_MUCH = f"Raise the limit named (or ask the operator to), {AGAIN}"


def refused(path: Path, what: str, remedy: str = FOREIGN) -> Refused:
    return Refused(
        f"{path} cannot be imported safely: {what}. {remedy}. Nothing was imported from it and it was not changed.",
        db_path=str(path),
    )


def judge_tables(conn: sqlite3.Connection, path: Path) -> None:
    """Refused when the tables read here (the original's, our record of an import) are not plain tables of plain
    columns: a view or a virtual table in place of one, or a generated or hidden column, is computed when read
    (``printf('%.*c', 200000000, 'x')`` makes 200 MB of every row). Asked before any of its rows is read."""
    read = READ_TABLES | {RECORD_TABLE}
    present = set()
    for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'view')"):
        if name in read and kind == "view":
            raise refused(path, f"its {name} is a view, not a table")
        if name in read and (sql or "").lstrip().upper().startswith("CREATE VIRTUAL"):
            raise refused(path, f"its {name} is a virtual table, not a table")
        if name in read:
            present.add(name)
    for table in sorted(present):
        for column in conn.execute(f'PRAGMA table_xinfo("{table}")'):
            if column[6]:  # hidden: 1 hidden, 2 generated (virtual), 3 generated (stored)
                raise refused(path, f"the column {column[1]} of its {table} table is generated or hidden")


def judge_triggers(conn: sqlite3.Connection, path: Path) -> None:
    """Refused when a file about to be imported holds a trigger the original does not make: it would fire on our
    writes into the same file (our schema, then the copied rows)."""
    # Our own global database may be this very file (PILLBOX_HOME = ~/.pillbox): our tables' triggers are ours.
    ours = path.resolve() == global_db_file()
    for name, table in conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger'"):
        if (name, table) not in ORIGINAL_TRIGGERS and (table in READ_TABLES or not ours):
            raise refused(path, f"it holds a trigger the original does not make ({name} on {table})")


def judge_size(conn: sqlite3.Connection, found: Found) -> None:
    """Refused when the file holds more than one may import: more stored bytes than ``PILLBOX_IMPORT_MAX_BYTES``
    in the original's tables, or more rows of a kind than the user's quota of it."""
    present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} & READ_TABLES
    limit = settings.PILLBOX_IMPORT_MAX_BYTES
    if limit and (stored := _stored_bytes(conn, found, present)) > limit:
        raise refused(found.path, f"its tables hold {stored:,} bytes, over the {limit:,} this Pillbox reads from one "
                      "file (PILLBOX_IMPORT_MAX_BYTES)", TOO_MUCH)
    for table in sorted(present & set(QUOTA_OF)):
        count = conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
        kind = QUOTA_OF[table]
        allowed = settings.PILLBOX_QUOTAS[kind]
        if allowed and count > allowed:
            raise refused(found.path, f"its {table} table holds {count:,} rows, over the {allowed:,} {kind} a "
                                      "user may have (PILLBOX_QUOTAS)", TOO_MUCH)


def _stored_bytes(conn: sqlite3.Connection, found: Found, tables: set[str]) -> int:
    """The bytes the original's tables take in the file (their pages, overflow included); the whole file when
    this SQLite has no ``dbstat``."""
    marks = ", ".join("?" * len(tables))
    try:
        return int(conn.execute(f"SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name IN ({marks})",
                                sorted(tables)).fetchone()[0])
    except sqlite3.OperationalError:
        return found.path.stat().st_size
