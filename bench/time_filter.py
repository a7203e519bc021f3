#!/usr/bin/env python3
"""Recall by time: windows exact on a labelled set, and a time-filtered search at 20,000 pills against the same
search unfiltered.

    .venv/bin/python bench/time_filter.py [--size 20000] [--repeat 5]

Exactness: a project's bottle holds the tests' labelled timeline (tests/pillbox/search/timeline.py), one pill a
day for fifteen months and pills on the edges of today, this week and this month, each pill's creation time set
after it is stored; every search of ``timeline.cases`` (each time phrase, since/until, a phrase beside an argument) runs
through the ``pill_search`` tool, words only and with meaning, and its rows are counted inside and outside the
window it must keep to. Speed: the public recall set replicated to ``--size`` pills (``pills_latency.scaled``,
every copy with its source pill's vector), creation times spread evenly over 450 days; each question of the set
(kinds n and p, and the look-ups a, c, d, e) is searched as typed and with ``since: 3m`` (a fifth of the rows),
and with its words followed by 'last month'. Reported: p50 of each, and the ratio to the unfiltered search.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pills_latency
from common import DATA, REPO, setup_django
from pills_quality import Project, embeddings, timed_runs

GOAL_RATIO = 1.2  # a time-filtered search against the same search unfiltered, p50
SPREAD_DAYS = 450
SINCE, PHRASE = "since: 3m", "'… last month'"
ALL = 10_000  # rows the engine is asked for in the exactness part: every one of the timeline's


def exactness(root: Path) -> tuple[int, int, int, int]:
    """Rows found inside their window, rows there, rows found outside, searches: words only and with meaning."""
    sys.path.insert(0, str(REPO))
    from pillbox.models import Pill
    from tests.pillbox.search.timeline import cases, inside, labelled

    project = Project(root, "timeline")
    now = datetime.now(UTC)
    times = labelled(now, range(SPREAD_DAYS))  # a pill a day for fifteen months, and the edges
    ids = {}
    for title in times:
        answer = project.call("pill_store", {"prescription_id": project.prescription_id, "title": title,
                                             "content": f"What we deployed: {title.lower()}.", "compound": "note",
                                             "author_name": "Bench", "author_email": "bench@example.org"})
        ids[project._first_id(answer)] = title
    for title, moment in times.items():
        Pill.objects.using(project.alias()).filter(title=title).update(created_at=moment)
    from pillbox import selectors
    from pillbox.access import reach_for
    from pillbox.search.engine import search
    from pillbox.search.targets import Target
    from pillbox.search.when import recall

    dbs = selectors.narrowed_dbs(reach_for(project.caller), None)
    found_in = expected_in = found_out = searches = 0
    print("| search | mode | in the window | found | found outside | the tool's time line |")
    print("|---|---|---|---|---|---|")
    for meaning in (False, True):
        embeddings(meaning)
        for arguments, start, end, _ in cases(now):
            # The tool shows a page (100 at most); the engine, as the tool calls it, is asked for every row.
            line = next(text for text in project.search({"limit": 100, **arguments}).split("\n")
                        if text.startswith("time: "))
            wanted = recall(arguments.get("query"), since=arguments.get("since"), until=arguments.get("until"))
            targets = [Target(alias=alias, kind="pill", bottles=frozenset(bottles), window=wanted.window)
                       for alias, bottles in dbs.items()]
            hits = search(targets, query=wanted.query, compound=None, limit=ALL, fuzzy=arguments.get("fuzzy", False))
            found = {ids[hit.id.hex[:12]] for hit in hits.hits}
            expected = set(inside(times, start, end))
            found_in += len(found & expected)
            expected_in += len(expected)
            found_out += len(found - expected)
            searches += 1
            named = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
            print(f"| {named} | {'meaning' if meaning else 'words'} | {len(expected)} | {len(found & expected)} | "
                  f"{len(found - expected)} | {line.removeprefix('time: ')} |")
    return found_in, expected_in, found_out, searches


def spread_times(project: Project) -> None:
    """Creation times evenly over ``SPREAD_DAYS`` days back from now, in row order, as the ORM writes them."""
    from django.db import connections

    with connections[project.alias()].cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM pillbox_pill")
        count = cursor.fetchone()[0]
        cursor.execute(
            "UPDATE pillbox_pill SET created_at = strftime('%%Y-%%m-%%d %%H:%%M:%%S', 'now', "
            "printf('-%%d seconds', (%s - seq %% %s) * %s))",
            [count, count, SPREAD_DAYS * 86400 // max(count, 1)])


def speed(root: Path, size: int, repeat: int) -> dict[str, dict[str, float]]:
    data = json.loads((DATA / "pills_recall_s1.json").read_text(encoding="utf-8"))
    items = data["items"]
    queries = [q for q in data["queries"] if q["kind"] in "acdenp"]
    source, mapping = pills_latency.embedded_source(root, items)
    project = pills_latency.scaled(root, source, mapping, items, size)
    spread_times(project)
    forms = {
        "unfiltered": lambda q: {"query": q["q"], "limit": 20},
        SINCE: lambda q: {"query": q["q"], "limit": 20, "since": "3m"},
        PHRASE: lambda q: {"query": f"{q['q']} last month", "limit": 20},
    }
    out: dict[str, dict[str, float]] = {}
    for meaning in (False, True):
        embeddings(meaning)
        mode = "meaning on" if meaning else "words only"
        out[mode] = {}
        for label, form in forms.items():
            _, latency = timed_runs(lambda q, f=form: project.search(f(q)), queries, repeat)
            out[mode][label] = statistics.median(latency.values())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    os.environ.setdefault("EMBEDDINGS_CACHE", str(REPO / ".cache" / "models"))
    tmp = Path(tempfile.mkdtemp(prefix="time_filter_")).resolve()
    try:
        setup_django(tmp / "home")
        print("### Windows on the labelled timeline\n")
        found_in, expected_in, found_out, searches = exactness(tmp / "labelled")
        print(f"\n{searches} searches: {found_in} of {expected_in} rows inside their window found "
              f"({100 * found_in / max(expected_in, 1):.1f} %), {found_out} rows outside found.\n")
        print(f"### A time-filtered search at {a.size:,} pills (p50 ms over the recall set's questions)\n")
        rows = speed(tmp / "scaled", a.size, a.repeat)
        print("| mode | unfiltered | since: 3m | ratio | '… last month' | ratio |")
        print("|---|---|---|---|---|---|")
        ratios = []
        for mode, row in rows.items():
            base = row["unfiltered"]
            ratios += [row[SINCE] / base, row[PHRASE] / base]
            print(f"| {mode} | {base:.2f} | {row[SINCE]:.2f} | {row[SINCE] / base:.2f}x | {row[PHRASE]:.2f} | "
                  f"{row[PHRASE] / base:.2f}x |")
        goals = {"every row inside its window found, none outside": found_in == expected_in and not found_out,
                 f"time-filtered <= {GOAL_RATIO}x unfiltered (worst {max(ratios):.2f}x)": max(ratios) <= GOAL_RATIO}
        print()
        for goal, met in goals.items():
            print(f"- {'met' if met else 'MISSED'}: {goal}")
        return 0 if all(goals.values()) else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
