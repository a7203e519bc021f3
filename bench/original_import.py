"""How long bringing the original Pillbox's memory across takes, against a bare copy of the same rows.

    .venv/bin/python bench/original_import.py [--pills 500] [--repeat 3]

Builds a home and two projects with the tests' builder of the original's files (tests/pillbox/original_files.py;
``--pills`` per prescription: 10 prescriptions in all), afresh for each timing, then times:

- ours: ``manage.py import_original`` (in process; the global database is migrated beforehand, untimed): read
  every row, parse, write our rows with their full-text index, register, record; our schema goes into the two
  project files as part of it;
- anchor: plain ``sqlite3`` doing the least such an import can do: copy the same rows of each file into new
  tables of a fresh database and build an FTS5 index over the pills and capsules.

Prints the median of each and the ratio.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILDER = ["-m", "tests.pillbox.original_files"]  # the tests' builder of the original's files
TABLES = {"bottles": "", "prescriptions": "", "pills": "title, content, compound",
          "capsules": "title, content, compound"}


def anchor(fixture: Path, scratch: Path) -> float:
    started = time.perf_counter()
    target = sqlite3.connect(scratch / "anchor.db")
    target.execute("PRAGMA journal_mode=WAL")
    for number, path in enumerate(sorted(fixture.rglob("pillbox.db"))):
        target.execute(f"ATTACH DATABASE ? AS src{number}", (f"{path.as_uri()}?mode=ro",))
        names = {name for (name,) in target.execute(f"SELECT name FROM src{number}.sqlite_master")}
        with target:
            for table, indexed in TABLES.items():
                if table not in names:
                    continue
                copy = f"{table}_{number}"
                target.execute(f"CREATE TABLE {copy} AS SELECT * FROM src{number}.{table}")
                if indexed:
                    target.execute(f"CREATE VIRTUAL TABLE {copy}_fts USING fts5({indexed}, "
                                   "tokenize='unicode61 remove_diacritics 2')")
                    target.execute(f"INSERT INTO {copy}_fts(rowid, {indexed}) SELECT rowid, {indexed} FROM {copy} "
                                   "WHERE deleted_at IS NULL")
        target.execute(f"DETACH DATABASE src{number}")
    target.close()
    return time.perf_counter() - started


def ours(fixture: Path) -> float:
    from django.core.management import call_command

    from pillbox.databases import forget_local_aliases

    forget_local_aliases()
    started = time.perf_counter()
    call_command("import_original", "--home", str(fixture / "home"), "--user", "bench", stdout=io.StringIO())
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pills", type=int, default=500, help="pills per prescription (10 prescriptions)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pillbox-bench-original-"))
    sys.path.insert(0, str(ROOT))
    os.environ["PILLBOX_HOME"] = str(work / "data")
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django.db import connection

    timings: dict[str, list[float]] = {"ours": [], "anchor": []}
    for round_ in range(args.repeat):
        for name in ("anchor", "ours"):
            fixture = work / f"{name}-{round_}"
            # A fresh build each time: the original's registry holds absolute paths, so a copy would point back.
            subprocess.run([sys.executable, *BUILDER, str(fixture), "--pills", str(args.pills)], check=True,
                           stdout=subprocess.DEVNULL, cwd=ROOT)
            if name == "anchor":
                timings[name].append(anchor(fixture, fixture))
            else:
                with connection.cursor() as cursor:  # a fresh global database each round
                    for table in ("pillbox_originalimport", "pillbox_registration", "pillbox_capsule",
                                  "pillbox_pill", "pillbox_prescription", "pillbox_bottle"):
                        cursor.execute(f"DELETE FROM {table}")
                timings[name].append(ours(fixture))
    pills = 10 * args.pills
    ours_s, anchor_s = statistics.median(timings["ours"]), statistics.median(timings["anchor"])
    print(f"original Pillbox import, {pills} pills + 8 capsules in 3 files, median of {args.repeat}:")
    print(f"  ours (import_original):          {ours_s * 1000:8.0f} ms  ({pills / ours_s:,.0f} pills/s)")
    print(f"  anchor (sqlite3 copy + FTS5):    {anchor_s * 1000:8.0f} ms")
    print(f"  ratio ours/anchor:               {ours_s / anchor_s:8.1f}x")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
