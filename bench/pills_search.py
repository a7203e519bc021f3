#!/usr/bin/env python3
"""Benchmark pill_search: quality against the original Pillbox algorithm, latency against bare FTS5.

    .venv/bin/python bench/pills_search.py [--repeat 3] [--sizes 20000[,200000,1000000]] [--data FILE]
                                           [--keep DIR] [--quick]

(a) Quality, on the shared public pills dataset (1,446 pills, 200 queries of kinds a-e). Ours is the
    ``pill_search`` tool function itself (``TOOLSET.by_name["pill_search"].handler``) on a local bottle
    built through the tools in a temporary project, its text answer parsed for the ranked ids; the
    original is ``PillSearch`` from the shared ``pillbox_ref.py`` over the same items, in this same run.
    Both are scored by the shared ``score.py``. Per-query latency is the median of R runs after one
    untimed warm-up pass over all queries.
(b) Latency at N pills (default 20,000): the public set replicated with varied text (each copy swaps words
    between items and appends a counter word, so the vocabulary keeps growing) and bulk-inserted into a
    local bottle database. The tool function is timed for strict queries (kinds a, c, d, e), typo queries
    (kind b, where the typo expansion runs), and every query with ``fuzzy: true``, against the bare
    ``SELECT rowid FROM pillbox_pill_fts WHERE pillbox_pill_fts MATCH ? ORDER BY rank LIMIT 20`` with the
    same OR-prefix terms, on the same file through Python's ``sqlite3``.

    The engine alone (``pillbox.search.search`` on the caller's targets) is timed too: the tool function adds
    reading the arguments, finding the caller's reach (registry queries) and formatting the answer.

--quick is the CI guard (a few seconds): repeat 1, 20,000 pills, 60 of the queries; exits 1 when overall
MRR@10 < 0.44 or the engine's strict median is worse than 4x the bare query's (twice the goal).

The databases live in a temporary PILLBOX_HOME and project directories that are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from common import DATA, REPO, TOOLS, load_module, load_score, ratio, summarise

DEFAULT_DATA = DATA / "pills_oauth_toolkit_s1.json"

# Goals from the benchmark issue, and the --quick guard.
GOAL_MRR = 0.88
GOAL_MRR_B = 0.85
GOAL_BARE_RATIO = 2.0
QUICK_MIN_MRR = 0.44
QUICK_MAX_BARE_RATIO = 4.0
QUICK_SIZE = 20000
QUICK_LATENCY_QUERIES = 60

ID_LINE = re.compile(r"^id: ([0-9a-f]+)$", re.MULTILINE)
BARE_SQL = "SELECT rowid FROM pillbox_pill_fts WHERE pillbox_pill_fts MATCH ? ORDER BY rank LIMIT 20"


def setup_django(home: Path) -> None:
    os.environ["PILLBOX_HOME"] = str(home)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    for name in ("DATABASE_URL", "PILLBOX_ROOT"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from config.bootstrap import ensure_global_db

    ensure_global_db()


class Project:
    """A temporary project directory with one local bottle and an open prescription, made through the tools."""

    def __init__(self, root: Path, name: str) -> None:
        from accounts.services import user_get_or_create
        from config.mcp.tools import Caller
        from pillbox.tools import TOOLSET

        self.tools = TOOLSET.by_name
        self.workdir = root / name
        self.workdir.mkdir(parents=True)
        # One user per project, so that pill_search (which covers every registered bottle) sees only this one.
        user = user_get_or_create(username=f"bench-{name}")
        self.caller = Caller(user=user, transport="stdio", workdir=self.workdir)
        bottle = self.call("bottle_create", {"name": name, "display_name": name, "scope": "local"})
        self.bottle_id = self._first_id(bottle)
        opened = self.call("prescription_open", {"bottle_id": self.bottle_id, "title": "bench",
                                                 "author_name": "Bench", "author_email": "bench@example.org"})
        self.prescription_id = self._first_id(opened)
        self.db_path = self.workdir / ".pillbox" / "pillbox.db"

    @staticmethod
    def _first_id(text: str) -> str:
        found = re.search(r"\b([0-9a-f]{12})\b", text)
        if not found:
            raise SystemExit(f"no id in tool answer: {text!r}")
        return found.group(1)

    def call(self, tool: str, args: dict[str, Any]) -> str:
        return self.tools[tool].handler(self.caller, args)

    def search(self, args: dict[str, Any]) -> str:
        return self.tools["pill_search"].handler(self.caller, args)

    def alias(self) -> str:
        from pillbox.databases import open_local

        return open_local(self.db_path.resolve())


# ------------------------------------------------------------------ (a) quality


def store_public(project: Project, items: list[dict[str, Any]]) -> dict[str, str]:
    """Store every item through pillbox.services.pill_store; returns our short id -> dataset id."""
    from pillbox import ids, services
    from pillbox.access import reach_for

    reach = reach_for(project.caller)
    mapping = {}
    for item in items:
        pill = services.pill_store(
            reach=reach, prescription_id=project.prescription_id, title=item["title"], content=item["content"],
            compound=item["compound"], author_name="Bench", author_email="bench@example.org",
        )
        mapping[ids.short(pill.id)] = item["id"]
    return mapping


def timed_runs(fn, queries: list[dict[str, Any]], repeat: int) -> tuple[dict[str, Any], dict[str, float]]:
    for q in queries:  # warm-up pass
        fn(q)
    results, latency = {}, {}
    for q in queries:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            out = fn(q)
            times.append((time.perf_counter() - t0) * 1000)
        results[str(q["i"])] = out
        latency[str(q["i"])] = round(statistics.median(times), 4)
    return results, latency


def run_ours_quality(project: Project, mapping: dict[str, str], queries, repeat: int) -> dict[str, Any]:
    def one(q):
        return project.search({"query": q["q"], "limit": 20})

    texts, latency = timed_runs(one, queries, repeat)
    results, fuzzy = {}, {}
    for key, text in texts.items():
        results[key] = [mapping.get(short, f"?{short}") for short in ID_LINE.findall(text)]
        fuzzy[key] = "\nused_fuzzy: true" in text
    return {"system": "ours (pill_search tool)", "results": results, "latency_ms": latency, "used_fuzzy": fuzzy}


def run_ref_quality(ref: ModuleType, items, queries, repeat: int) -> dict[str, Any]:
    ps = ref.PillSearch(items)
    raw, latency = timed_runs(lambda q: ps.search(q["q"]), queries, repeat)
    return {
        "system": "original (pillbox_ref.py)",
        "results": {k: v[0] for k, v in raw.items()},
        "used_fuzzy": {k: v[2] for k, v in raw.items()},
        "latency_ms": latency,
    }


def print_quality(ours, ref, kinds_meta) -> None:
    hdr = ["kind", "n", "hit@1 ours", "hit@1 orig", "hit@5 ours", "hit@5 orig", "MRR@10 ours", "MRR@10 orig",
           "MRR ours/orig", "p50 ms ours", "p50 ms orig", "p50 ours/orig"]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "|".join(["---"] * len(hdr)) + "|")
    for label in ["all"] + [k for k in ours if k != "all"]:
        o, r = ours[label], ref[label]
        name = label if label == "all" else f"{label}: {kinds_meta.get(label, label)}"
        print("| " + " | ".join([
            name, str(o["n"]), f"{o['hit@1']:.3f}", f"{r['hit@1']:.3f}", f"{o['hit@5']:.3f}", f"{r['hit@5']:.3f}",
            f"{o['mrr@10']:.3f}", f"{r['mrr@10']:.3f}", ratio(o["mrr@10"], r["mrr@10"]),
            f"{o['p50_ms']:.3f}", f"{r['p50_ms']:.3f}", ratio(o["p50_ms"], r["p50_ms"]),
        ]) + " |")


# ------------------------------------------------------------------ (b) latency at N pills


def replicated(items: list[dict[str, Any]], n: int, seed: int = 7) -> list[tuple[str, str, str]]:
    """``n`` (title, content, compound) rows: the public items, then copies with varied text.

    Copy k > 0 of an item keeps about two thirds of its words, takes the rest from another item at random,
    shuffles a little, and appends a counter word, so the vocabulary grows with N as real text's does.
    """
    rng = random.Random(seed)
    words = [(it["title"].split(), it["content"].split(), it["compound"]) for it in items]
    out: list[tuple[str, str, str]] = []
    k = 0
    while len(out) < n:
        for j, (title, content, compound) in enumerate(words):
            if len(out) >= n:
                break
            if k == 0:
                out.append((" ".join(title), " ".join(content), compound))
                continue
            donor_title, donor_content, _ = words[rng.randrange(len(words))]
            new_title = mix(rng, title, donor_title)
            new_content = mix(rng, content, donor_content)
            counter = counter_word(k * len(words) + j)
            out.append((" ".join(new_title + [counter]), " ".join(new_content), compound))
        k += 1
    return out


def mix(rng: random.Random, own: list[str], donor: list[str]) -> list[str]:
    if not own:
        return list(donor[:3])
    out = [w if rng.random() < 0.67 or not donor else rng.choice(donor) for w in own]
    if len(out) > 2:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return out


def counter_word(number: int) -> str:
    letters = "bcdfghjklmnpqrstvwxz"
    vowels = "aeiou"
    word = ""
    while True:
        number, c = divmod(number, len(letters))
        number, v = divmod(number, len(vowels))
        word += letters[c] + vowels[v]
        if not number:
            return "q" + word


def bulk_fill(project: Project, rows: list[tuple[str, str, str]]) -> float:
    """Insert the rows with strictly increasing ids (seq = the id's millisecond); the FTS triggers fire."""
    from django.db import transaction
    from django.utils import timezone

    from pillbox.ids import uuid7_at
    from pillbox.models import Pill, Prescription

    alias = project.alias()
    prescription = Prescription.objects.using(alias).get()
    last = Pill.objects.using(alias).order_by("-seq").values_list("seq", flat=True).first()
    ms = max(time.time_ns() // 1_000_000 - len(rows) - 1000, (last or 0) + 1)
    now = timezone.now()
    t0 = time.perf_counter()
    batch = 5000
    for start in range(0, len(rows), batch):
        objs = []
        for title, content, compound in rows[start:start + batch]:
            objs.append(Pill(id=uuid7_at(ms), seq=ms, prescription=prescription, compound=compound, title=title,
                             content=content, author_name="Bench", author_email="bench@example.org",
                             created_at=now, updated_at=now))
            ms += 1
        with transaction.atomic(using=alias):
            Pill.objects.using(alias).bulk_create(objs)
    return time.perf_counter() - t0


def bare_expression(ref: ModuleType, query: str) -> str:
    return " OR ".join(f'"{t}"*' for t in ref.extract_terms(query))


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[max(1, -(-len(s) * p // 100)) - 1] if s else float("nan")


def latency_at(root: Path, ref: ModuleType, items, queries, size: int, repeat: int) -> dict[str, Any]:
    project = Project(root, f"n{size}")
    build_s = bulk_fill(project, replicated(items, size))
    conn = sqlite3.connect(str(project.db_path))
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.v USING fts5vocab(main, pillbox_pill_fts, row)")
    n_terms = conn.execute("SELECT COUNT(*) FROM temp.v").fetchone()[0]

    def bare(q):
        return conn.execute(BARE_SQL, (bare_expression(ref, q["q"]),)).fetchall()

    # The engine alone (what the tool function calls after reading its arguments and the caller's reach).
    from pillbox import selectors
    from pillbox.access import reach_for
    from pillbox.search import Target, search

    reach = reach_for(project.caller)
    targets = [Target(alias=alias, kind="pill", bottles=frozenset(bottles))
               for alias, bottles in selectors.narrowed_dbs(reach, None).items()]

    groups = {
        "strict (a, c, d, e)": ([q for q in queries if q["kind"] != "b"], False),
        "typo (b)": ([q for q in queries if q["kind"] == "b"], False),
        "fuzzy: true (all)": (queries, True),
    }
    rows = {}
    for label, (qs, fuzzy) in groups.items():
        _, ours = timed_runs(
            lambda q, f=fuzzy: project.search({"query": q["q"], "limit": 20, "fuzzy": f}), qs, repeat)
        _, engine = timed_runs(
            lambda q, f=fuzzy: search(targets, query=q["q"], compound=None, limit=20, fuzzy=f), qs, repeat)
        _, base = timed_runs(bare, qs, repeat)
        o, e, b = list(ours.values()), list(engine.values()), list(base.values())
        rows[label] = {"n": len(qs), "ours_p50": statistics.median(o), "ours_p95": pct(o, 95),
                       "engine_p50": statistics.median(e), "engine_p95": pct(e, 95),
                       "bare_p50": statistics.median(b), "bare_p95": pct(b, 95)}
    conn.close()
    return {"size": size, "build_s": build_s, "vocab": n_terms, "rows": rows}


def print_latency(result: dict[str, Any]) -> None:
    print(f"\n#### {result['size']:,} pills ({result['vocab']:,} indexed words; bulk insert "
          f"{result['build_s']:.1f} s)\n")
    hdr = ["queries", "n", "p50 ms tool", "p50 ms search()", "p50 ms bare", "p50 tool/bare", "p50 search()/bare",
           "p95 ms tool", "p95 ms search()", "p95 ms bare", "p95 tool/bare"]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "|".join(["---"] * len(hdr)) + "|")
    for label, r in result["rows"].items():
        print("| " + " | ".join([
            label, str(r["n"]), f"{r['ours_p50']:.3f}", f"{r['engine_p50']:.3f}", f"{r['bare_p50']:.3f}",
            ratio(r["ours_p50"], r["bare_p50"]), ratio(r["engine_p50"], r["bare_p50"]),
            f"{r['ours_p95']:.3f}", f"{r['engine_p95']:.3f}", f"{r['bare_p95']:.3f}",
            ratio(r["ours_p95"], r["bare_p95"]),
        ]) + " |")


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="pills dataset JSON")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per query (median taken)")
    ap.add_argument("--sizes", default="20000", help="comma-separated pill counts for the latency part")
    ap.add_argument("--keep", type=Path, help="write both quality result files into this directory")
    ap.add_argument("--quick", action="store_true", help=f"repeat 1, {QUICK_SIZE:,} pills; exit 1 below the guard")
    a = ap.parse_args(argv)
    repeat = 1 if a.quick else max(1, a.repeat)
    sizes = [QUICK_SIZE] if a.quick else [int(s) for s in a.sizes.split(",") if s.strip()]

    data_path = a.data.resolve()
    data = json.loads(data_path.read_text(encoding="utf-8"))
    if data["meta"]["kind"] != "pills":
        raise SystemExit("not a pills dataset")
    score = load_score()
    ref = load_module("shared_bench_pillbox_ref", TOOLS / "pillbox_ref.py")
    items, queries = data["items"], data["queries"]

    tmp = Path(tempfile.mkdtemp(prefix="pills_bench_")).resolve()
    try:
        setup_django(tmp / "home")
        project = Project(tmp / "projects", "quality")
        t0 = time.perf_counter()
        mapping = store_public(project, items)
        store_s = time.perf_counter() - t0
        ours_res = run_ours_quality(project, mapping, queries, repeat)
        ref_res = run_ref_quality(ref, items, queries, repeat)
        if a.keep:
            a.keep.mkdir(parents=True, exist_ok=True)
            (a.keep / "ours.json").write_text(json.dumps(ours_res) + "\n")
            (a.keep / "original.json").write_text(json.dumps(ref_res) + "\n")
        ours, orig = summarise(score, data, ours_res), summarise(score, data, ref_res)
        meta = data["meta"]
        print(f"dataset: {data_path.name} ({meta['n_items']} pills, {meta['n_queries']} queries), repeat {repeat}; "
              f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}")
        print(f"stored through pillbox.services.pill_store in {store_s:.1f} s; used_fuzzy on "
              f"{sum(ours_res['used_fuzzy'].values())} queries (original: {sum(ref_res['used_fuzzy'].values())})\n")
        print_quality(ours, orig, meta.get("query_kinds", {}))

        lat_queries = queries[:QUICK_LATENCY_QUERIES] if a.quick else queries
        latencies = []
        for size in sizes:
            latencies.append(latency_at(tmp / "projects", ref, items, lat_queries, size, repeat))
            print_latency(latencies[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    strict = latencies[0]["rows"]["strict (a, c, d, e)"] if latencies else None
    strict_ratio = strict["engine_p50"] / strict["bare_p50"] if strict else float("nan")
    tool_ratio = strict["ours_p50"] / strict["bare_p50"] if strict else float("nan")
    goals = {
        f"MRR@10 >= {GOAL_MRR}": ours["all"]["mrr@10"] >= GOAL_MRR,
        f"kind b MRR@10 >= {GOAL_MRR_B}": ours.get("b", {"mrr@10": 0})["mrr@10"] >= GOAL_MRR_B,
        "no kind below the original": all(ours[k]["mrr@10"] >= orig[k]["mrr@10"] for k in ours),
        f"strict p50 of search() <= {GOAL_BARE_RATIO:.0f}x bare at {sizes[0]:,}": strict_ratio <= GOAL_BARE_RATIO,
        f"strict p50 of the tool <= {GOAL_BARE_RATIO:.0f}x bare at {sizes[0]:,}": tool_ratio <= GOAL_BARE_RATIO,
    }
    print("\ngoals: " + ", ".join(f"{k}: {'ok' if v else 'MISSED'}" for k, v in goals.items()), flush=True)

    if a.quick:
        failures = []
        if ours["all"]["mrr@10"] < QUICK_MIN_MRR:
            failures.append(f"MRR@10 {ours['all']['mrr@10']:.3f} < {QUICK_MIN_MRR}")
        if strict_ratio > QUICK_MAX_BARE_RATIO:
            failures.append(f"search() strict p50 is {strict_ratio:.2f}x the bare query's "
                            f"(> {QUICK_MAX_BARE_RATIO:.0f}x)")
        if failures:
            print("QUICK CHECK FAILED: " + "; ".join(failures), file=sys.stderr)
            return 1
        print("quick check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
