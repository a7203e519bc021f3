#!/usr/bin/env python3
"""Benchmark the per-user cost of search: one user's searches on a database shared with many users against the
same user's searches on a database holding only their own rows.

    .venv/bin/python bench/per_user.py [--users 1000] [--per-user 1000] [--repeat 3] [--per-kind N] [--keep DIR]
    .venv/bin/python bench/per_user.py --quick   # CI guard

The shared database holds ``--users`` users, each with one global bottle of ``--per-user`` pills and
``--per-user`` capsules (1,000 x 1,000 by default: a million of each). The users' rows are interleaved in time,
as when everyone writes at once. The alone database holds one of those users (the middle one) with the very
same rows (same ids, same text). Rows are written with plain INSERTs (bulk_create), so the full-text triggers
index them as they would any write; the text is the public recall set's pills, varied per row (words swapped
with another pill and a counter word, as in ``bench/pills_search.py``).

Timed: the ``pill_search`` and ``capsule_search`` tool functions (over HTTP's reach: global bottles only,
meaning off) for the recall set's queries, one worker process per database, the two asked in turn for the same
query, so both see the same machine. The ratio is the shared p50 over the alone p50, per group of queries.
SQLite always (each database a ``pillbox.db`` in its own PILLBOX_HOME); PostgreSQL too when DATABASE_URL is a
postgres:// URL (two databases named after it, ``<name>_per_user`` and ``<name>_per_user_alone``, made and
dropped by the run unless ``--keep``).

--keep DIR keeps the databases (SQLite files in DIR, PostgreSQL databases by name) and reuses them when they
were built with the same --users and --per-user. --quick is the CI guard: the goal's case (1,000 users x 1,000),
8 queries of each kind, repeat 1; exits 1 when a tool's p50 over all queries is over twice the goal (3x).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from common import DATA, REPO, setup_django
from pills_latency import counter_word, mix

DEFAULT_DATA = DATA / "pills_recall_s1.json"
GOAL = 1.5
QUICK_USERS = 1000
QUICK_PER_KIND = 8  # queries of each kind
BATCH = 5000
BASE_MS = 1_700_000_000_000  # seq of row 0; row i is written at BASE_MS + i
# The goal and the guard are on "all"; the groups show where a miss comes from.
GROUPS = {"all": "abcdenp", "strict (a, c, d, e)": "acde", "typo (b)": "b", "questions, paraphrases (n, p)": "np"}
TOOLS = {"pill_search": "pills", "capsule_search": "capsules"}


# ------------------------------------------------------------------ the data


def row_text(items: list[dict[str, Any]], index: int) -> tuple[str, str, str]:
    """Row ``index``'s (title, content, compound): a public pill with a third of its words from another."""
    rng = random.Random(index)
    own, donor = items[index % len(items)], items[rng.randrange(len(items))]
    title = mix(rng, own["title"].split(), donor["title"].split()) + [counter_word(index)]
    content = " ".join(mix(rng, own["content"].split(), donor["content"].split()))
    return " ".join(title)[:255], content, own["compound"]


def row_id(index: int) -> uuid.UUID:
    """A UUID v7 at the row's millisecond, the same in both databases."""
    return uuid.UUID(int=((BASE_MS + index) << 80) | (0x7 << 76) | (0b10 << 62) | index)


def owner_uuid(kind: str, user: int) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"per-user-bench/{kind}/{user}")


def build(items: list[dict[str, Any]], users: int, per_user: int, only: int | None) -> float:
    """Write the users, their bottles and rows (all users', or only user ``only``'s); seconds taken."""
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from pillbox.models import Bottle, Capsule, Pill, Prescription, Registration

    started = time.perf_counter()
    now = timezone.now()
    chosen = range(users) if only is None else [only]
    get_user_model().objects.bulk_create(
        [get_user_model()(id=user + 1, username=f"user{user}", password="!") for user in chosen])
    Bottle.objects.bulk_create([
        Bottle(id=owner_uuid("bottle", user), name="memory", display_name="Memory", directory="",
               scope=Bottle.SCOPE_GLOBAL, created_at=now) for user in chosen])
    Registration.objects.bulk_create([
        Registration(user_id=user + 1, bottle_id=owner_uuid("bottle", user), name="memory", display_name="Memory",
                     scope=Bottle.SCOPE_GLOBAL, directory="", db_path="") for user in chosen])
    Prescription.objects.bulk_create([
        Prescription(id=owner_uuid("prescription", user), bottle_id=owner_uuid("bottle", user), title="work",
                     started_at=now) for user in chosen])
    # Row i belongs to user i % users: everyone writes at once, so one user's rows are spread over the index.
    indexes = [j * users + user for j in range(per_user) for user in chosen]
    indexes.sort()
    for start in range(0, len(indexes), BATCH):
        pills, capsules = [], []
        for index in indexes[start:start + BATCH]:
            user = index % users
            title, content, compound = row_text(items, index)
            pills.append(Pill(id=row_id(index), seq=BASE_MS + index, prescription_id=owner_uuid("prescription", user),
                              compound=compound, title=title, content=content, created_at=now, updated_at=now))
            title, content, compound = row_text(items, index + 7_919)  # another text for the capsule
            capsules.append(Capsule(id=row_id(index), seq=BASE_MS + index, owner_id=user + 1, compound=compound,
                                    title=title, content=content, created_at=now, updated_at=now))
        with transaction.atomic():
            Pill.objects.bulk_create(pills)
            Capsule.objects.bulk_create(capsules)
    return time.perf_counter() - started


# ------------------------------------------------------------------ one database's worker process


def serve(args: argparse.Namespace) -> int:
    """Build (unless built) and answer timing requests, one JSON line in, one out."""
    os.environ["EMBEDDINGS"] = "off"
    setup_django(args.home, database_url=args.database_url)
    from django.contrib.auth import get_user_model

    from mcp_bridge.tools import Caller
    from pillbox.tools import TOOLSET

    data = json.loads(args.data.read_text(encoding="utf-8"))
    marker = args.home / f"built-{args.role}.json"
    wanted = {"users": args.users, "per_user": args.per_user}
    built_s = None
    if not (marker.is_file() and json.loads(marker.read_text()) == wanted):
        if args.database_url:  # a PostgreSQL database kept by a run of another size: start from empty tables
            from django.core.management import call_command

            call_command("flush", interactive=False, verbosity=0)
        built_s = build(data["items"], args.users, args.per_user, args.users // 2 if args.role == "alone" else None)
        marker.write_text(json.dumps(wanted))
    caller = Caller(user=get_user_model().objects.get(pk=args.users // 2 + 1), transport="http")
    print(json.dumps({"ready": True, "built_s": built_s}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        handler = TOOLSET.by_name[request["tool"]].handler
        t0 = time.perf_counter()
        text = handler(caller, request["args"])
        print(json.dumps({"ms": (time.perf_counter() - t0) * 1000, "text": text}), flush=True)
    return 0


class Worker:
    def __init__(self, role: str, home: Path, database_url: str | None, a: argparse.Namespace) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", role, "--home", str(home),
                   "--users", str(a.users), "--per-user", str(a.per_user), "--data", str(a.data)]
        if database_url:
            command += ["--database-url", database_url]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        cwd=REPO)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests, self.answers = self.process.stdin, self.process.stdout

    def ready(self) -> float | None:
        line = self.answers.readline()
        if not line:
            raise SystemExit("a worker died before it was ready")
        built: float | None = json.loads(line)["built_s"]
        return built

    def ask(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        self.requests.write(json.dumps({"tool": tool, "args": args}) + "\n")
        self.requests.flush()
        answer: dict[str, Any] = json.loads(self.answers.readline())
        return answer

    def close(self) -> None:
        self.requests.close()
        self.process.wait()


# ------------------------------------------------------------------ PostgreSQL databases


def postgres_urls(base: str) -> tuple[str, str]:
    parts = urlsplit(base)
    name = parts.path.lstrip("/")
    return (urlunsplit(parts._replace(path=f"/{name}_per_user")),
            urlunsplit(parts._replace(path=f"/{name}_per_user_alone")))


def postgres_admin(base: str, statements: list[str]) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as connection:
        for statement in statements:
            connection.execute(statement)


def postgres_databases(base: str, *, fresh: bool) -> tuple[str, str]:
    """The two databases' URLs; made (empty when ``fresh``)."""
    import psycopg

    urls = postgres_urls(base)
    with psycopg.connect(base, autocommit=True) as connection:
        for url in urls:
            name = urlsplit(url).path.lstrip("/")
            if fresh:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
            exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                connection.execute(f'CREATE DATABASE "{name}"')
    return urls


# ------------------------------------------------------------------ main


def measure(backend: str, homes: tuple[Path, Path], urls: tuple[str | None, str | None],
            queries: list[dict[str, Any]], a: argparse.Namespace) -> dict[str, Any]:
    shared, alone = Worker("shared", homes[0], urls[0], a), Worker("alone", homes[1], urls[1], a)
    try:
        built = {"shared": shared.ready(), "alone": alone.ready()}
        times: dict[tuple[str, str, str], list[float]] = {}
        differ = 0
        for tool in TOOLS:
            for q in queries:  # warm-up: caches filled, first-query costs paid
                shared.ask(tool, {"query": q["q"], "limit": 20})
                alone.ask(tool, {"query": q["q"], "limit": 20})
            for q in queries:
                args = {"query": q["q"], "limit": 20}
                runs: dict[str, list[float]] = {"shared": [], "alone": []}
                for turn in range(a.repeat):
                    order = (("shared", shared), ("alone", alone)) if turn % 2 == 0 else \
                        (("alone", alone), ("shared", shared))
                    answers = {}
                    for role, worker in order:
                        answer = worker.ask(tool, args)
                        runs[role].append(answer["ms"])
                        answers[role] = answer["text"]
                    differ += turn == 0 and ids_of(answers["shared"]) != ids_of(answers["alone"])
                for role, values in runs.items():
                    times.setdefault((tool, q["kind"], role), []).append(statistics.median(values))
    finally:
        shared.close()
        alone.close()
    rows = []
    for tool in TOOLS:
        for label, kinds in GROUPS.items():
            pick = {role: [t for kind in kinds for t in times.get((tool, kind, role), [])]
                    for role in ("shared", "alone")}
            if pick["shared"]:
                rows.append({"tool": tool, "group": label, "n": len(pick["shared"]),
                             "shared": statistics.median(pick["shared"]), "alone": statistics.median(pick["alone"])})
    return {"backend": backend, "built": built, "rows": rows, "differ": differ}


def ids_of(text: str) -> set[str]:
    return {line[4:] for line in text.splitlines() if line.startswith("id: ")}


def report(result: dict[str, Any], a: argparse.Namespace) -> None:
    built = ", ".join(f"{role} built in {s:.0f} s" for role, s in result["built"].items() if s is not None)
    print(f"\n#### {result['backend']}: {a.users:,} users x {a.per_user:,} pills and {a.per_user:,} capsules "
          f"against one user's alone{f' ({built})' if built else ''}\n")
    print("| tool | queries | n | p50 ms shared | p50 ms alone | shared/alone |")
    print("|---|---|---|---|---|---|")
    for row in result["rows"]:
        ratio = row["shared"] / row["alone"]
        print(f"| {row['tool']} | {row['group']} | {row['n']} | {row['shared']:.2f} | {row['alone']:.2f} | "
              f"{ratio:.2f} |")
    print(f"\nqueries whose answer held other ids on the shared database: {result['differ']} "
          "(bm25 weighs words by how rare they are in the whole database, everyone's rows included)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--per-user", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per query and database (median taken)")
    ap.add_argument("--per-kind", type=int, default=0, help="the first N queries of each kind (default: all)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="pills dataset JSON (its items and queries)")
    ap.add_argument("--keep", type=Path, help="keep the databases here and reuse them")
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_USERS} users, repeat 1; exit 1 over {2 * GOAL}x")
    ap.add_argument("--worker", choices=("shared", "alone"), help=argparse.SUPPRESS)
    ap.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--database-url", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.data = a.data.resolve()
    if a.worker:
        a.role = a.worker
        return serve(a)
    if a.quick:
        a.users, a.repeat = QUICK_USERS, 1
    queries = json.loads(a.data.read_text(encoding="utf-8"))["queries"]
    per_kind = QUICK_PER_KIND if a.quick else a.per_kind
    if per_kind:
        queries = [q for kind in sorted({q["kind"] for q in queries})
                   for q in [q for q in queries if q["kind"] == kind][:per_kind]]
    database_url = os.environ.get("DATABASE_URL", "")
    root = a.keep.resolve() if a.keep else Path(tempfile.mkdtemp(prefix="per_user_bench_")).resolve()
    print(f"{len(queries)} queries, repeat {a.repeat}; load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} cores")
    results = []
    try:
        homes = (root / "sqlite-shared", root / "sqlite-alone")
        for home in homes:
            home.mkdir(parents=True, exist_ok=True)
        results.append(measure("SQLite", homes, (None, None), queries, a))
        report(results[-1], a)
        if database_url.startswith(("postgres://", "postgresql://")):
            urls = postgres_databases(database_url, fresh=not a.keep)
            homes = (root / "pg-shared", root / "pg-alone")
            for home in homes:
                home.mkdir(parents=True, exist_ok=True)
            results.append(measure("PostgreSQL", homes, urls, queries, a))
            report(results[-1], a)
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
            if database_url.startswith(("postgres://", "postgresql://")):
                postgres_admin(database_url, [f'DROP DATABASE IF EXISTS "{urlsplit(url).path.lstrip("/")}"'
                                              for url in postgres_urls(database_url)])
    worst = max(row["shared"] / row["alone"] for result in results for row in result["rows"] if row["group"] == "all")
    print(f"\nload average {os.getloadavg()[0]:.1f}; worst shared/alone p50 over all queries {worst:.2f} "
          f"(goal {GOAL}x)")
    if a.quick and worst > 2 * GOAL:
        print(f"QUICK CHECK FAILED: a search on the shared database is {worst:.2f}x the same user's alone "
              f"(> {2 * GOAL:.0f}x)", file=sys.stderr)
        return 1
    if a.quick:
        print("quick check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
