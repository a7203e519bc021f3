#!/usr/bin/env python3
"""Search by meaning on PostgreSQL with pgvector against the search in the process, in one run: writes and
searches alternating in one user's global bottle of 20,000 pills (and 200,000 with ``--large``).

    .venv/bin/python bench/pgvector.py [--sizes 20000] [--large] [--rounds 60] \
        [--postgres postgres://postgres@127.0.0.1:5432/postgres]

Each size runs in a process of its own, on a scratch database ``pillbox_pgvector_bench`` (dropped at the end)
of a server that has the extension. The rows are the public recall set replicated to the size (as
bench/pills_latency.py does); the originals carry the model's vectors, each copy its source's vector moved a
little (Gaussian noise a quarter of its length, normalised again): clusters of text-like vectors, not random
ones, which no HNSW index is judged on. Then, for each way (``pgvector``: the SQL pass, ``in-process``: the
same server with the SQL pass turned off), through the ``pill_search`` tool function: a warm-up search, then
``--rounds`` rounds of a question (kind n or p) after a search, a ``pill_store``, and the next question right after
it. Printed: p50 / p95 of both, the ratios pgvector / in-process, the time to fill the column and build the index
(what ``manage.py pgvector enable`` costs at that size), and the index's recall@30 against the exact ranking of the
same vectors (``hnsw.ef_search`` as the search sets it).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pills_latency
from common import DATA, REPO, setup_django

SCRATCH_DB = "pillbox_pgvector_bench"
NOISE = 0.25
QUESTION_KINDS = ("n", "p")
# The nearest 30 rows, as the search asks: (label, hnsw.ef_search per row wanted (0: the search's own), scope
# rows given to it (1: an exact scan; None: the real size))
BREADTHS = (("exact scan", 0, 1), ("search's ef", 0, None), ("ef x4", 4, None), ("ef x8", 8, None),
            ("ef x16", 16, None), ("ef 1000", 40, None))


def pct(values: list[float], p: int) -> float:
    return pills_latency.pct(values, p) * 1000


def resident_mb() -> float:
    """This process's resident memory now (Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class GlobalBottle:
    """What ``pills_latency.bulk_fill`` asks of a project: the alias its one prescription lives in."""

    def alias(self) -> str:
        from pillbox.global_db import GLOBAL

        return GLOBAL


def source() -> tuple[list[dict[str, Any]], list[str]]:
    recall = DATA / "pills_recall_s1.json"
    if recall.is_file():
        data = json.loads(recall.read_text(encoding="utf-8"))
        return data["items"], [q["q"] for q in data["queries"] if q["kind"] in QUESTION_KINDS]
    data = json.loads((REPO / "bench" / "data" / "conversations_s1.json").read_text(encoding="utf-8"))
    return data["items"], [q["q"] for q in data["queries"] if q["kind"] == "paraphrase"]


def worker(size: int, url: str, rounds: int, out: Path, index_options: str) -> None:
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="pgvector-bench-") as home:
        os.environ["PILLBOX_MAX_PILLS"] = str(2 * size)  # the rounds store beyond the size (a user's default: 100,000)
        setup_django(Path(home), database_url=url)
        from django.db import connections, transaction

        from accounts.services import user_get_or_create
        from mcp_bridge.tools import Caller
        from pillbox import services
        from pillbox.access import reach_for
        from pillbox.embeddings import halfvec, loader, storage
        from pillbox.embeddings.backfill import document
        from pillbox.global_db import GLOBAL
        from pillbox.models import Pill
        from pillbox.search import pgvector
        from pillbox.search.targets import Target
        from pillbox.tools import TOOLSET

        connection = connections[GLOBAL]
        if pgvector.state(GLOBAL, fresh=True) != "on":
            raise SystemExit(f"pgvector is not on in the scratch database: {pgvector.state(GLOBAL)}")
        items, questions = source()
        caller = Caller(user=user_get_or_create(username="bench-pgvector"), transport="http")
        reach = reach_for(caller)
        bottle = services.bottle_create(reach=reach, name="bench", display_name="Bench", scope="global")
        reach = reach_for(caller)
        author = {"author_name": "Bench", "author_email": "bench@example.org"}
        rx = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="bench", **author)

        os.environ["EMBEDDINGS"] = "on"
        model = loader.embedder(wait=600)
        assert model is not None, loader.failure()
        originals = np.concatenate([model.embed([document(it["title"], it["content"]) for it in items[at:at + 16]])
                                    for at in range(0, len(items), 16)])
        # A copy's title grows by a counter word: PostgreSQL holds it to the column's 255 (SQLite does not).
        rows = [(title[:255], content, compound) for title, content, compound in pills_latency.replicated(items, size)]
        halfvec.disable(connection)  # in bulk: the index is built once, after the rows (as enable does)
        pills_latency.bulk_fill(GlobalBottle(), rows)  # type: ignore[arg-type]
        rng = np.random.default_rng(7)
        ids = list(Pill.objects.using(GLOBAL).filter(prescription=rx).order_by("seq").values_list("id", flat=True))
        vectors = originals[np.arange(len(ids)) % len(items)].astype(np.float32)
        copies = np.arange(len(ids)) >= len(items)
        noise = rng.standard_normal(vectors.shape).astype(np.float32) * (NOISE / np.sqrt(vectors.shape[1]))
        vectors[copies] += noise[copies]
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for at in range(0, len(ids), 5000):
            storage.write(GLOBAL, storage.KINDS["pill"], model.key, ids[at:at + 5000], vectors[at:at + 5000])
        started = time.perf_counter()
        halfvec.HNSW_OPTIONS = index_options or halfvec.HNSW_OPTIONS
        with connection.cursor() as cursor:
            halfvec.enable(connection)
            cursor.execute("ANALYZE")
        enable_seconds = time.perf_counter() - started
        pgvector.state(GLOBAL, fresh=True)

        target = Target(alias=GLOBAL, kind="pill", bottles=frozenset({bottle.id}))
        stored = vectors.astype(np.float16).astype(np.float32)
        seqs = np.array(Pill.objects.using(GLOBAL).filter(prescription=rx).order_by("seq")
                        .values_list("seq", flat=True))
        overlaps: dict[str, list[float]] = {}
        source_of = {int(seq): at % len(items) for at, seq in enumerate(seqs)}
        timings: dict[str, list[float]] = {}
        searched_factor, searched_rows = pgvector.EF_SEARCH_FACTOR, pgvector.EF_SEARCH_ROWS
        for question in questions:
            query = loader.embed_query(model, question)
            assert query is not None
            exact = set(seqs[np.argsort(-(stored @ query), kind="stable")[:30]].tolist())
            for label, factor, scope_rows in BREADTHS:
                pgvector.EF_SEARCH_FACTOR = factor or searched_factor
                pgvector.EF_SEARCH_ROWS = searched_rows if not factor else 10**9  # a factor alone
                t0 = time.perf_counter()
                with transaction.atomic(using=GLOBAL), connection.cursor() as cursor:
                    found = pgvector._nearest(cursor, target, model.key, pgvector.literal(query), None, 30,
                                              size if scope_rows is None else scope_rows)
                timings.setdefault(label, []).append(time.perf_counter() - t0)
                overlaps.setdefault(label, []).append(len(exact & {seq for seq, _ in found}) / 30)
                # Copies of one text are near-duplicates whose order among themselves is the noise's: which
                # texts were found is what a reader sees.
                texts = {source_of[seq] for seq in exact}
                overlaps.setdefault(f"{label}, texts", []).append(
                    len(texts & {source_of[seq] for seq, _ in found}) / len(texts))
        pgvector.EF_SEARCH_FACTOR, pgvector.EF_SEARCH_ROWS = searched_factor, searched_rows

        search = TOOLSET.by_name["pill_search"].handler
        serves = pgvector.serves
        figures: dict[str, Any] = {
            "size": size, "enable_seconds": enable_seconds,
            "recall_at_30": {label: statistics.fmean(values) for label, values in overlaps.items()},
            "nearest_p50_ms": {label: pct(values, 50) for label, values in timings.items()},
        }
        del vectors, stored, noise, originals
        gc.collect()
        os.environ["EMBEDDINGS"] = "off"  # the words' vocabulary read once, before either way is timed
        search(caller, {"query": questions[0], "limit": 20})
        os.environ["EMBEDDINGS"] = "on"
        for way in ("pgvector", "in-process", "pgvector again") if rounds else ():
            pgvector.serves = serves if way.startswith("pgvector") else (lambda *args: False)
            t0 = time.perf_counter()
            search(caller, {"query": questions[0], "limit": 20})
            warm = time.perf_counter() - t0
            after_search, after_write = [], []
            for at in range(rounds):
                t0 = time.perf_counter()
                search(caller, {"query": questions[(2 * at) % len(questions)], "limit": 20})
                after_search.append(time.perf_counter() - t0)
                title, content, compound = rows[at % len(rows)]
                services.pill_store(reach=reach, prescription_id=rx.id.hex, title=f"{title[:200]} {way} {at}",
                                    content=content, compound=compound, **author)
                t0 = time.perf_counter()
                search(caller, {"query": questions[(2 * at + 1) % len(questions)], "limit": 20})
                after_write.append(time.perf_counter() - t0)
            figures[way] = {"warm_ms": warm * 1000, "after_search": after_search, "after_write": after_write,
                            "rss_mb": resident_mb()}
        out.write_text(json.dumps(figures))


def print_size(figures: dict[str, Any]) -> None:
    print(f"\n{figures['size']:,} pills: fill + index build {figures['enable_seconds']:.1f} s, "
          "recall@30 against the exact ranking (p50 of the SQL query alone):")
    for label, value in figures["recall_at_30"].items():
        print(f"  {label:<21}{value:.3f}  ({figures['nearest_p50_ms'][label.split(', ')[0]]:.1f} ms)")
    if "pgvector" not in figures:
        return  # --rounds 0: the index's recall alone
    print(f"{'way':<16}{'first':>9}{'p50 after search':>18}{'p95':>8}{'p50 after write':>17}{'p95':>8}"
          f"{'RSS after':>11}")
    for way in ("pgvector", "in-process", "pgvector again"):
        row = figures[way]
        print(f"{way:<16}{row['warm_ms']:>7.0f}ms{pct(row['after_search'], 50):>16.1f}ms"
              f"{pct(row['after_search'], 95):>6.1f}ms{pct(row['after_write'], 50):>15.1f}ms"
              f"{pct(row['after_write'], 95):>6.1f}ms{row['rss_mb']:>8.0f} MB")
    ours, theirs = figures["pgvector"], figures["in-process"]
    for label in ("after_search", "after_write"):
        both = ours[label] + figures["pgvector again"][label]
        print(f"ratio pgvector / in-process, {label.replace('_', ' ')}: p50 "
              f"{pct(both, 50) / pct(theirs[label], 50):.2f}x, p95 {pct(both, 95) / pct(theirs[label], 95):.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20000")
    parser.add_argument("--large", action="store_true", help="add 200,000 pills (minutes of building)")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--index-options", default="",
                        help='the HNSW index\'s WITH, e.g. "m = 32, ef_construction = 128"')
    parser.add_argument("--worker", nargs=2, metavar=("SIZE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    base = args.postgres.rsplit("/", 1)[0]
    if args.worker:
        worker(int(args.worker[0]), f"{base}/{SCRATCH_DB}", args.rounds, Path(args.worker[1]), args.index_options)
        return 0
    import psycopg

    sizes = [int(size) for size in args.sizes.split(",")] + ([200_000] if args.large else [])
    for size in sizes:
        with psycopg.connect(args.postgres, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB}")
            admin.execute(f"CREATE DATABASE {SCRATCH_DB}")
        try:
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                subprocess.run([sys.executable, __file__, "--worker", str(size), out.name, "--rounds",
                                str(args.rounds), "--postgres", args.postgres, "--index-options", args.index_options],
                               check=True)
                print_size(json.loads(Path(out.name).read_text()))
        finally:
            with psycopg.connect(args.postgres, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {SCRATCH_DB} WITH (FORCE)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
