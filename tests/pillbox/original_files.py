"""Files as the original Pillbox leaves them on disk, for the import's tests and its benchmark.

    python -m tests.pillbox.original_files DEST [--seed N] [--pills N]

Written from the original's format as docs/original.md describes it: SQLite files
holding ``bottles``, ``prescriptions``, ``pills`` and ``schema_migrations`` (version 1), the global one also
``capsules`` and ``registered_bottles``; UUID v7 ids as text, UTC ``datetime('now')`` text times, discarding by
``deleted_at``, FTS5 indexes over title, content and compound kept by triggers. DEST gets:

    DEST/home/.pillbox/pillbox.db              the global file: bottle "notes" (global), 8 capsules, the registry
    DEST/projects/shop/.pillbox/pillbox.db     bottle "shop" (local)
    DEST/projects/blog/.pillbox/pillbox.db     bottle "blog" (local), registered at a place it has left

What was written comes back as a summary (printed as JSON when run as a script). Every bottle's prescriptions
are closed, then the second is discarded (its pills with it, each a little before it) and the last left open;
the first prescription's last pill is discarded on its own; some authors are unknown (NULL).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import time
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

# Table name -> its columns, in the original's order.
BOTTLES = ("id TEXT PRIMARY KEY", "name TEXT NOT NULL UNIQUE", "display_name TEXT NOT NULL",
           "directory TEXT NOT NULL UNIQUE", "scope TEXT NOT NULL DEFAULT 'local' CHECK (scope IN ('local', 'global'))",
           "created_at TEXT NOT NULL DEFAULT (datetime('now'))", "last_seen_at TEXT NOT NULL DEFAULT (datetime('now'))",
           "views INTEGER NOT NULL DEFAULT 0")
AUTHORED = ("author_name TEXT", "author_email TEXT")
STAMPS = ("created_at TEXT NOT NULL DEFAULT (datetime('now'))", "updated_at TEXT NOT NULL DEFAULT (datetime('now'))",
          "deleted_at TEXT", "views INTEGER NOT NULL DEFAULT 0")
TEXT = ("compound TEXT NOT NULL", "title TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 255)",
        "content TEXT NOT NULL CHECK (length(content) BETWEEN 1 AND 5000)")
PRESCRIPTIONS = ("id TEXT PRIMARY KEY", "bottle_id TEXT NOT NULL REFERENCES bottles(id)", "title TEXT NOT NULL",
                 *AUTHORED, "started_at TEXT NOT NULL DEFAULT (datetime('now'))", "ended_at TEXT", "deleted_at TEXT",
                 "views INTEGER NOT NULL DEFAULT 0")
PILLS = ("id TEXT PRIMARY KEY", *TEXT, "prescription_id TEXT NOT NULL REFERENCES prescriptions(id)", *AUTHORED,
         *STAMPS)
CAPSULES = ("id TEXT PRIMARY KEY", *TEXT, *STAMPS)
REGISTRY = ("id INTEGER PRIMARY KEY AUTOINCREMENT", "bottle_id TEXT NOT NULL", "name TEXT NOT NULL",
            "display_name TEXT NOT NULL", "db_path TEXT NOT NULL UNIQUE",
            "registered_at TEXT NOT NULL DEFAULT (datetime('now'))",
            "last_seen_at TEXT NOT NULL DEFAULT (datetime('now'))")
VERSIONS = ("version INTEGER PRIMARY KEY", "name TEXT NOT NULL", "applied_at TEXT NOT NULL DEFAULT (datetime('now'))")
INDEXES = {"pills": ("idx_pill_compound(compound) WHERE deleted_at IS NULL",
                     "idx_pill_rx(prescription_id) WHERE deleted_at IS NULL", "idx_pill_created(created_at DESC)"),
           "capsules": ("idx_cap_compound(compound) WHERE deleted_at IS NULL", "idx_cap_created(created_at DESC)"),
           "prescriptions": ("idx_rx_bottle(bottle_id)", "idx_rx_started(started_at DESC)"),
           "registered_bottles": ("idx_reg_name(name)",)}
SEARCHED = ("title", "content", "compound")

VOCABULARY = ("backup bucket cache celery coverage deploy docker export fixture gateway invoice keyboard lantern "
              "library migration monitor network pagination password postgres quantum queue redis rollback "
              "scheduler schema secret session signal sqlite storage template thumbnail timeout token transaction "
              "upload vault webhook worker").split()
COMPOUNDS = ("decision", "bug", "convention", "summary", "gotcha", "todo")


def schema(global_file: bool) -> str:
    tables = {"bottles": BOTTLES, "prescriptions": PRESCRIPTIONS, "pills": PILLS}
    if global_file:
        tables |= {"capsules": CAPSULES, "registered_bottles": REGISTRY}
    tables["schema_migrations"] = VERSIONS
    statements = [f"CREATE TABLE {name} ({', '.join(columns)})" for name, columns in tables.items()]
    statements += [f"CREATE INDEX {index.replace('(', f' ON {table}(', 1)}"
                   for table, indexes in INDEXES.items() if table in tables for index in indexes]
    for table in ("pills", "capsules"):
        if table in tables:
            statements += full_text(table)
    return ";\n".join(statements) + ";"


def full_text(table: str) -> list[str]:
    """An external-content FTS5 index of ``table``, kept by insert, delete and update triggers."""
    fields, index = ", ".join(SEARCHED), f"{table}_fts"
    new, old = (", ".join(f"{side}.{field}" for field in SEARCHED) for side in ("new", "old"))
    add = f"INSERT INTO {index}(rowid, {fields}) VALUES (new.rowid, {new});"
    remove = f"INSERT INTO {index}({index}, rowid, {fields}) VALUES ('delete', old.rowid, {old});"
    changed = " OR ".join(f"OLD.{field} <> NEW.{field}" for field in SEARCHED)
    return [f"CREATE VIRTUAL TABLE {index} USING fts5({fields}, content='{table}', content_rowid='rowid', "
            "tokenize='unicode61 remove_diacritics 2')",
            f"CREATE TRIGGER {table}_ai AFTER INSERT ON {table} BEGIN {add} END",
            f"CREATE TRIGGER {table}_ad AFTER DELETE ON {table} BEGIN {remove} END",
            f"CREATE TRIGGER {table}_au AFTER UPDATE ON {table} WHEN {changed} BEGIN {remove} {add} END"]


class Moments:
    """One clock for ids (UUID v7: the millisecond first, so later is larger) and SQLite's UTC text times."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.ms = 1_767_225_600_000 + seed * 86_400_000  # from January 2026, a day apart per seed

    def later(self, at_most_ms: int = 3_600_000) -> str:
        self.ms += self.random.randint(1_000, at_most_ms)
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.ms // 1000))

    def new_id(self) -> str:
        self.ms += 1
        bits = (self.ms << 80) | (0x7 << 76) | (self.random.getrandbits(12) << 64) | (0b10 << 62) \
            | self.random.getrandbits(62)
        return str(uuid.UUID(int=bits))

    def words(self, count: int) -> str:
        return " ".join(self.random.choice(VOCABULARY) for _ in range(count))


def open_file(path: Path, *, global_file: bool) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(schema(global_file))
    conn.execute("INSERT INTO schema_migrations (version, name) VALUES (1, ?)",
                 ("initial_global" if global_file else "initial_local",))
    return conn


def write_bottle(conn: sqlite3.Connection, clock: Moments, summary: dict[str, Any], *, name: str, directory: str,
                 scope: str, prescriptions: int, pills: int) -> str:
    bottle = clock.new_id()
    made = clock.later()
    conn.execute("INSERT INTO bottles (id, name, display_name, directory, scope, created_at, last_seen_at, views) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 (bottle, name, name.title(), directory, scope, made, clock.later(), clock.random.randint(0, 30)))
    for number in range(prescriptions):
        state = "open" if number == prescriptions - 1 else "discarded" if number == 1 else "closed"
        author = (None, None) if number % 3 == 0 else ("Grace Hopper", "grace@example.org")
        rx = clock.new_id()
        conn.execute("INSERT INTO prescriptions (id, bottle_id, title, author_name, author_email, started_at, views) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (rx, bottle, f"Session {number + 1}: {clock.words(3)}", *author, clock.later(),
                      clock.random.randint(0, 8)))
        summary["prescriptions"].append({"id": rx, "bottle": name, "state": state})
        for index in range(pills):
            pill = clock.new_id()
            title = f"{clock.words(4).capitalize()} ({name} {number}.{index})"
            content = f"{clock.words(clock.random.randint(10, 50))}.\n\n- {clock.words(5)}\n- `{clock.words(1)}()`"
            written = clock.later(600_000)
            alone = number == 0 and index == pills - 1 and pills > 1
            deleted = clock.later(60_000) if state == "discarded" or alone else None
            conn.execute("INSERT INTO pills (id, compound, title, content, prescription_id, author_name, "
                         "author_email, created_at, updated_at, deleted_at, views) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
                         "?, ?)", (pill, clock.random.choice(COMPOUNDS), title, content, rx, *author, written,
                                   clock.later(60_000), deleted, clock.random.randint(0, 10)))
            summary["pills"].append({"id": pill, "bottle": name, "title": title, "discarded": deleted is not None})
        if state != "open":
            ended = clock.later()
            conn.execute("UPDATE prescriptions SET ended_at = ?, deleted_at = ? WHERE id = ?",
                         (ended, ended if state == "discarded" else None, rx))
    summary["bottles"].append({"id": bottle, "name": name, "scope": scope, "directory": directory})
    return bottle


def write_original(dest: Path, *, seed: int = 1, pills: int = 6) -> dict[str, Any]:
    """Write the home and the two projects under ``dest``; the summary of what was written."""
    dest = dest.resolve()
    home, clock = dest / "home", Moments(seed)
    summary: dict[str, Any] = {"home": str(home), "bottles": [], "prescriptions": [], "pills": [], "capsules": [],
                               "registered": []}
    with closing(open_file(home / ".pillbox" / "pillbox.db", global_file=True)) as conn, conn:
        write_bottle(conn, clock, summary, name="notes", directory=str(home / ".pillbox"), scope="global",
                     prescriptions=2, pills=pills)
        for number in range(8):
            capsule, title = clock.new_id(), f"Lesson: {clock.words(4)}"
            made = clock.later()
            deleted = clock.later() if number == 3 else None
            conn.execute("INSERT INTO capsules (id, compound, title, content, created_at, updated_at, deleted_at, "
                         "views) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (capsule, clock.random.choice(("lesson", "convention", "tooling")), title, clock.words(25),
                          made, made, deleted, clock.random.randint(0, 5)))
            summary["capsules"].append({"id": capsule, "title": title, "discarded": deleted is not None})
    for name, moved in (("shop", False), ("blog", True)):
        project = dest / "projects" / name
        with closing(open_file(project / ".pillbox" / "pillbox.db", global_file=False)) as conn, conn:
            bottle = write_bottle(conn, clock, summary, name=name, directory=str(project), scope="local",
                                  prescriptions=4, pills=pills)
        place = (dest / "old-place" / name) if moved else project
        db_path = str(place / ".pillbox" / "pillbox.db")
        with closing(sqlite3.connect(home / ".pillbox" / "pillbox.db")) as conn, conn:
            conn.execute("INSERT INTO registered_bottles (bottle_id, name, display_name, db_path) VALUES (?, ?, ?, ?)",
                         (bottle, name, name.title(), db_path))
        summary["registered"].append({"bottle_id": bottle, "name": name, "db_path": db_path, "moved": moved})
    return summary


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="Write files as the original Pillbox leaves them.")
    parser.add_argument("dest", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pills", type=int, default=6, help="pills per prescription")
    args = parser.parse_args(argv)
    print(json.dumps(write_original(args.dest, seed=args.seed, pills=args.pills)))


if __name__ == "__main__":
    main(sys.argv[1:])
