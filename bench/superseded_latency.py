#!/usr/bin/env python3
"""What leaving superseded pills out costs pill_search, words only, on a project's own file.

    .venv/bin/python bench/superseded_latency.py [--size 20000] [--queries 200] [--repeat 3]

A project's file is searched through its full-text index alone while every row in it is the caller's and none is
superseded; once one pill is superseded the search joins the pill table to leave it out (the global database's
path). The public set replicated to ``--size`` pills (``pills_latency.replicated``) is timed through the
``pill_search`` tool function with no pill superseded, with one, and with a tenth of them, on the look-up
queries of the public recall set (kinds a-e): the median of ``--repeat`` runs per query after one warm-up pass,
then the p50 and p95 over the queries; last, with none superseded again, to show how much the machine varies.
Each state's answers are checked: a superseded pill is never answered.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pills_latency
import pills_quality
from common import DATA, setup_django


def timed(project: pills_quality.Project, queries: list[str], repeat: int) -> tuple[list[float], set[str]]:
    """Each query's median time in ms, and every id answered."""
    for query in queries:
        project.search({"query": query})
    times, answered = [], set()
    for query in queries:
        runs = []
        for _ in range(repeat):
            started = time.perf_counter()
            text = project.search({"query": query})
            runs.append((time.perf_counter() - started) * 1000)
        times.append(statistics.median(runs))
        answered |= {line.removeprefix("id: ") for line in text.split("\n") if line.startswith("id: ")}
    return times, answered


def supersede(project: pills_quality.Project, share: float) -> set[str]:
    """Marks every 1/share-th pill superseded by the newest one (the tool's own write, as one UPDATE); their ids."""
    from pillbox.models import Pill

    alias = project.alias()
    pills = list(Pill.objects.using(alias).order_by("seq").values_list("pk", flat=True))
    newest, rest = pills[-1], pills[:-1]
    step = max(int(1 / share), 1) if share else len(rest)
    chosen = rest[::step] if share else rest[:1]
    Pill.objects.using(alias).filter(pk__in=chosen).update(superseded_by=newest)
    return {pk.hex[:12] for pk in chosen}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    os.environ["EMBEDDINGS"] = "off"
    data = json.loads((DATA / "pills_recall_s1.json").read_text(encoding="utf-8"))
    queries = [q["q"] for q in data["queries"] if q["kind"] in "abcde"][:a.queries]
    tmp = Path(tempfile.mkdtemp(prefix="superseded_latency_")).resolve()
    try:
        setup_django(tmp / "home")
        project = pills_quality.Project(tmp / "projects", "superseded")
        pills_latency.bulk_fill(project, pills_latency.replicated(data["items"], a.size))
        rows = []
        base, _ = timed(project, queries, a.repeat)
        rows.append(("none superseded (the index alone)", base, True))
        for label, share in (("1 superseded", 0.0), ("a tenth superseded", 0.1)):
            hidden = supersede(project, share)
            times, answered = timed(project, queries, a.repeat)
            rows.append((f"{label} ({len(hidden):,} pills)", times, not hidden & answered))
        from pillbox.models import Pill

        Pill.objects.using(project.alias()).update(superseded_by=None)
        again, _ = timed(project, queries, a.repeat)
        rows.append(("none again (the machine's noise)", again, True))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"pill_search, words only, {a.size:,} pills in a project's file, {len(queries)} look-ups, "
          f"median of {a.repeat} runs each\n")
    print("| state | p50 ms | p95 ms | p50 against none | superseded never answered |")
    print("|---|---|---|---|---|")
    first = statistics.median(base)
    for label, times, clean in rows:
        p50, p95 = statistics.median(times), pills_latency.pct(times, 95)
        print(f"| {label} | {p50:.2f} | {p95:.2f} | {p50 / first:.2f}x | {'yes' if clean else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
