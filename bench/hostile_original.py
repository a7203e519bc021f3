#!/usr/bin/env python3
"""What a hostile original-format file in a cloned project costs the agent's process (issue 23, hole 2).

    .venv/bin/python bench/hostile_original.py [--rows 200] [--chars 200000000]

Builds ``<scratch>/cloned/.pillbox/pillbox.db`` in the original Pillbox's schema (version 1) whose ``pills.content``
is ``GENERATED ALWAYS AS (printf('%.*c', CHARS, 'x')) VIRTUAL`` (``--rows`` pills: the file stays a few KB),
then opens it the way the first stdio tool call in that project does (``pillbox.databases.open_local``), and
reports: the seconds until it answers, the process's resident memory growth (peak over the start), the file's size
before and after, and the answer (``incompatible_db`` naming the file, or the import). The goal: refused in <= 1 s,
RSS growth <= 50 MB, nothing written. On a build without the checks, keep ``--chars`` small: it imports every
row (rows x chars bytes written).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from common import setup_django

# The original's tables (schema version 1) with the columns pillbox.original reads, the pills' content aside (added
# once the rows are in, below). The tests build such files their own way (tests/reliability/test_bounded_costs.py):
# the suite stands alone, and a benchmark does not reach into it.
AUTHORED = ("author_name TEXT", "author_email TEXT")
VIEWS = "views INTEGER DEFAULT 0"
TABLES = {
    "schema_migrations": ("version INTEGER PRIMARY KEY", "name TEXT NOT NULL"),
    "bottles": ("id TEXT PRIMARY KEY", "name TEXT NOT NULL", "display_name TEXT", "directory TEXT", "scope TEXT",
                "created_at TEXT NOT NULL", VIEWS),
    "prescriptions": ("id TEXT PRIMARY KEY", "bottle_id TEXT NOT NULL", "title TEXT", *AUTHORED,
                      "started_at TEXT NOT NULL", "ended_at TEXT", "deleted_at TEXT", VIEWS),
    "pills": ("id TEXT PRIMARY KEY", "prescription_id TEXT NOT NULL", "compound TEXT", "title TEXT", *AUTHORED,
              "created_at TEXT NOT NULL", "updated_at TEXT", "deleted_at TEXT", VIEWS),
}
# Added once the rows are in: SQLite computes the column for every row inserted into a table that has it.
GENERATED = "ALTER TABLE pills ADD COLUMN content TEXT GENERATED ALWAYS AS (printf('%.*c', {chars}, 'x')) VIRTUAL"
BOTTLE = "019b0000-0000-7000-8000-00000000b071"
RX = "019b0000-0001-7000-8000-0000000000a1"
STAMP = "2025-12-01T10:00:00Z"


def build(path: Path, rows: int, chars: int) -> None:
    path.parent.mkdir(parents=True, mode=0o700)
    with closing(sqlite3.connect(path)) as conn:
        for name, columns in TABLES.items():
            conn.execute(f"CREATE TABLE {name} ({', '.join(columns)})")
        conn.execute("INSERT INTO schema_migrations VALUES (1, 'initial')")
        conn.execute("INSERT INTO bottles VALUES (?, 'cloned', 'Cloned', '/root', 'local', ?, 0)", (BOTTLE, STAMP))
        conn.execute("INSERT INTO prescriptions VALUES (?, ?, 'Session', 'Eve', 'eve@example.com', ?, NULL, NULL, 0)",
                     (RX, BOTTLE, STAMP))
        conn.executemany(
            "INSERT INTO pills (id, prescription_id, compound, title, created_at) VALUES (?, ?, 'note', ?, ?)",
            [(f"019b0000-{n + 2:04x}-7000-8000-{n:012x}", RX, f"Pill {n}", STAMP) for n in range(rows)],
        )
        conn.execute(GENERATED.format(chars=chars))
        conn.commit()
    path.chmod(0o600)


def memory_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--chars", type=int, default=200_000_000)
    a = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="hostile-original-"))
    setup_django(scratch / "home")
    from pillbox.databases import open_local
    from pillbox.exceptions import IncompatibleDb

    path = scratch / "cloned" / ".pillbox" / "pillbox.db"
    build(path, a.rows, a.chars)
    size = path.stat().st_size
    start_kb = memory_kb("VmRSS")
    t0 = time.perf_counter()
    try:
        open_local(path)
        answer = "opened (imported)"
    except IncompatibleDb as exc:
        answer = f"incompatible_db: {exc.message}"
    seconds = time.perf_counter() - t0
    growth_mb = (memory_kb("VmHWM") - start_kb) / 1024
    after = path.stat().st_size
    print(f"file {size:,} bytes, {a.rows} pills of a {a.chars:,}-character generated column")
    print(f"answer: {answer[:200]}")
    print(f"{seconds:.2f} s, RSS growth {growth_mb:.1f} MB, file after {after:,} bytes "
          f"({'unchanged' if after == size else 'written'})")
    ok = seconds <= 1.0 and growth_mb <= 50 and after == size and answer.startswith("incompatible_db")
    print("goal (<= 1 s, <= 50 MB, nothing written): " + ("met" if ok else "missed"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
