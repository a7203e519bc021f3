#!/usr/bin/env python3
"""The same recall on both backends: the public recall set and the conversational corpus in a global bottle, as a
remote agent reaches it, on SQLite and on PostgreSQL, side by side.

    .venv/bin/python bench/backends.py [--postgres postgres://postgres@127.0.0.1:5432/postgres] [--quick]

Each backend runs in a process of its own (Django's settings are read once): the corpus is stored through
``pillbox.services`` in one user's global bottle, every vector written before the first query, then each query is
asked through the ``pill_search`` tool function twice (words only, and with meaning), and the whole run once more
to check that the answers repeat. A scratch database ``pillbox_backends_bench`` is made on the PostgreSQL server
and dropped at the end. Scored per kind: MRR@10 and found@20; and p50 milliseconds of the words-only search.
``--quick`` (the CI guard) fails when PostgreSQL is more than 0.01 below SQLite on a kind's MRR@10 or found@20,
or an answer differs between two runs. The p50 ratio (goal: PostgreSQL at most 2x SQLite's) is printed, not
guarded: the two run in different processes, and on a busy machine the database server's share of the cores
moves it by 2-3x between runs.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import corpora
from common import DATA, setup_django

ID_LINE = re.compile(r"^id: ([0-9a-f]+)$", re.MULTILINE)
SCRATCH_DB = "pillbox_backends_bench"
MAX_GAP = 0.01


def worker(backend: str, url: str | None, corpus_path: Path, out: Path) -> None:
    """Store ``corpus_path`` in a global bottle on ``backend`` and answer every query (two runs)."""
    with tempfile.TemporaryDirectory(prefix="backends-") as home:
        setup_django(Path(home), database_url=url)
        from pills_quality import embeddings

        from accounts.services import user_get_or_create
        from mcp_bridge.tools import Caller
        from pillbox import ids, services
        from pillbox.access import reach_for
        from pillbox.embeddings import backfill
        from pillbox.global_db import GLOBAL
        from pillbox.tools import TOOLSET

        corpus = corpora.load(corpus_path)
        caller = Caller(user=user_get_or_create(username="bench-backends"), transport="http")
        reach = reach_for(caller)
        bottle = services.bottle_create(reach=reach, name="recall", display_name="Recall", scope="global")
        reach = reach_for(caller)  # a reach knows the bottles there were when it was made
        author = {"author_name": "Bench", "author_email": "bench@example.org"}
        rx = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="bench", **author)
        embeddings(False)
        mapping = {}
        for item in corpus.items:
            pill = services.pill_store(reach=reach, prescription_id=rx.id.hex, title=item["title"],
                                       content=item["content"], compound=item["compound"], **author)
            mapping[ids.short(pill.id)] = item["id"]
        embeddings(True)
        backfill.backfill(GLOBAL, "pill")
        if url:  # the planner's statistics, as a server that has been running has them (autovacuum's analyze)
            from django.db import connections

            with connections[GLOBAL].cursor() as cursor:
                cursor.execute("ANALYZE")
        search = TOOLSET.by_name["pill_search"].handler
        runs: dict[str, Any] = {}
        for label, meaning in (("words", False), ("meaning", True), ("words again", False), ("meaning again", True)):
            embeddings(meaning)
            answers, times = {}, []
            for q in corpus.queries:
                started = time.perf_counter()
                text = str(search(caller, {"query": q.q, "limit": 20}))
                times.append((time.perf_counter() - started) * 1000)
                answers[q.key] = [mapping.get(short, "?") for short in ID_LINE.findall(text)]
            runs[label] = {"answers": answers, "p50": statistics.median(times)}
        out.write_text(json.dumps(runs))


def scratch_url(base: str, make: bool) -> str:
    """A URL to the scratch database on the server at ``base``, made (or dropped, ``make`` False) through it."""
    import psycopg

    with psycopg.connect(base, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB}")
        if make:
            connection.execute(f"CREATE DATABASE {SCRATCH_DB}")
    return base.rsplit("/", 1)[0] + "/" + SCRATCH_DB


def run(backend: str, url: str | None, corpus_path: Path) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", backend, "--corpus", str(corpus_path),
                   "--out", out.name] + (["--url", url] if url else [])
        subprocess.run(command, check=True)
        return dict(json.loads(Path(out.name).read_text()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres",
                    help="a PostgreSQL server's URL, to a database from which the scratch one is made")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.url, a.corpus, a.out)
        return 0
    paths = [path for path in (DATA / "pills_recall_s1.json", corpora.CONVERSATIONS) if path.exists()]
    if not (DATA / "pills_recall_s1.json").exists():
        print("the public recall set is not beside this checkout: the conversational corpus only")
    problems = []
    for path in paths:
        corpus = corpora.load(path)
        sqlite = run("sqlite", None, path)
        postgres = run("postgres", scratch_url(a.postgres, make=True), path)
        scratch_url(a.postgres, make=False)
        print(f"\n{corpus.name} ({len(corpus.items)} pills, {len(corpus.queries)} queries): SQLite | PostgreSQL")
        for mode in ("words", "meaning"):
            tables = {name: corpora.score(corpus.queries, runs[mode]["answers"])
                      for name, runs in (("SQLite", sqlite), ("PostgreSQL", postgres))}
            print(f"{mode}:")
            print(corpora.markdown(tables, metrics=("mrr@10", "found@20")))
            for kind, row in tables["PostgreSQL"].items():
                for metric in ("mrr@10", "found@20"):
                    if row[metric] < tables["SQLite"][kind][metric] - MAX_GAP:
                        problems.append(f"{corpus.name} {mode} {kind} {metric}: PostgreSQL {row[metric]:.3f} < "
                                        f"SQLite {tables['SQLite'][kind][metric]:.3f} - {MAX_GAP}")
        for name, runs in (("SQLite", sqlite), ("PostgreSQL", postgres)):
            for mode in ("words", "meaning"):
                changed = sum(runs[mode]["answers"][k] != runs[f"{mode} again"]["answers"][k]
                              for k in runs[mode]["answers"])
                print(f"{name} {mode}: {changed} of {len(corpus.queries)} answers differ between two runs")
                if changed:
                    problems.append(f"{corpus.name} {name} {mode}: {changed} answers differ between two runs")
        ratio = postgres["words"]["p50"] / sqlite["words"]["p50"]
        print(f"p50 words only: SQLite {sqlite['words']['p50']:.2f} ms, PostgreSQL {postgres['words']['p50']:.2f} ms "
              f"({ratio:.2f}x; goal <= 2x); with meaning {sqlite['meaning']['p50']:.2f} / "
              f"{postgres['meaning']['p50']:.2f} ms")
    for problem in problems:
        print("FAILED: " + problem)
    return 1 if a.quick and problems else 0


if __name__ == "__main__":
    sys.exit(main())
