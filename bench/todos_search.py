#!/usr/bin/env python3
"""Benchmark todos.search against Fuse.js 7 (the seed's engine) on the shared dataset.

    .venv/bin/python bench/todos_search.py [--repeat 3] [--data FILE] [--keep DIR] [--quick]

Both engines run in this one invocation on the same machine, so the speed ratio is
meaningful even on a busy box. Per-query latency is the median of R timed runs after one
untimed warm-up pass over all queries, search only; index builds are timed separately.
Quality is scored with the shared score.py (imported from the shared bench tools).

The cold search: the public set's todos are stored through ``put_todo`` in a temporary
PILLBOX_HOME, then each sample is a fresh process (Django set up and the user looked up, as in
a stdio server after its setup) timing its first ``search_todos`` through the tool function,
``includeCompleted: true`` so the index covers all 1,200 todos: the database read, the index
build and the search. Its anchor is Fuse.js's own cold search in the same run: its index build
(``build_ms``) plus its median search. The same processes time the warm call that follows. Each
is reported as wall time and as the CPU time of the calling thread (which a busy machine
inflates far less).

--quick is the CI regression guard: repeat 1, five cold samples, and a non-zero exit when
overall MRR@10 is below half the goal, our median latency is more than 20% of Fuse's (twice the
goal), or the cold search's median is over twice Fuse.js's cold search in the same run (the
goal is 50 ms; the guard is a ratio so that a busy CI machine does not fail it: ours has been
0.8-1.3x Fuse.js's cold search, busy and quiet).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import DATA, REPO, TOOLS, load_score, ratio, setup_django, summarise

DEFAULT_DATA = DATA / "todos_oauth_toolkit_s1.json"
NODE_DIR = REPO / "bench" / ".node"

# The goals, as set in the issue; --quick guards at half / double of them.
GOAL_MRR = 0.92
GOAL_SPEEDUP = 10.0
QUICK_MIN_MRR = GOAL_MRR / 2
QUICK_MAX_LATENCY_SHARE = 2.0 / GOAL_SPEEDUP
GOAL_COLD_MS = 50.0
QUICK_MAX_COLD_SHARE = 2.0  # of Fuse.js's cold search in the same run
COLD_SAMPLES = 9

sys.path.insert(0, str(REPO))
from todos.search import Doc, TodoIndex  # noqa: E402


def ensure_fuse() -> None:
    if (NODE_DIR / "node_modules" / "fuse.js" / "package.json").exists():
        return
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    print("installing fuse.js@7 into bench/.node ...", file=sys.stderr)
    subprocess.run(
        ["npm", "install", "--prefix", str(NODE_DIR), "--silent", "--no-audit", "--no-fund", "fuse.js@7"],
        check=True,
    )


def run_ours(data: dict[str, Any], repeat: int, top: int = 20) -> dict[str, Any]:
    # Same population as fuse_ref.mjs: deleted todos never appear, and a query with
    # include_completed=false sees only the pending ones (one index per variant).
    items = [t for t in data["items"] if not t.get("deletedAt")]
    variants = {
        True: [Doc(t["id"], t["name"], t["description"] or "") for t in items],
        False: [Doc(t["id"], t["name"], t["description"] or "") for t in items if not t["completed"]],
    }
    indexes: dict[bool, TodoIndex] = {}
    build_ms: dict[bool, float] = {}
    for flag, docs in variants.items():
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            indexes[flag] = TodoIndex.build(docs)
            times.append((time.perf_counter() - t0) * 1000)
        build_ms[flag] = statistics.median(times)

    queries = data["queries"]

    def index_for(q: dict[str, Any]) -> TodoIndex:
        return indexes[q.get("include_completed") is not False]

    for q in queries:
        index_for(q).search(q["q"], top)

    results: dict[str, list[str]] = {}
    latency: dict[str, float] = {}
    for q in queries:
        index = index_for(q)
        times = []
        ranked: list[str] = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            ranked = index.search(q["q"], top)
            times.append((time.perf_counter() - t0) * 1000)
        results[str(q["i"])] = ranked
        latency[str(q["i"])] = round(statistics.median(times), 4)
    return {
        "system": "ours",
        "engine": f"todos.search on python {sys.version.split()[0]}",
        "build_ms": round(build_ms[True], 3),
        "build_ms_pending": round(build_ms[False], 3),
        "results": results,
        "latency_ms": latency,
    }


def run_fuse(data_path: Path, repeat: int, out: Path) -> dict[str, Any]:
    ensure_fuse()
    cmd = [
        "node",
        str(TOOLS / "fuse_ref.mjs"),
        str(data_path),
        "--repeat",
        str(repeat),
        "--fuse-dir",
        str(NODE_DIR),
        "--out",
        str(out),
    ]
    subprocess.run(cmd, check=True)
    with open(out, encoding="utf-8") as f:
        answer: dict[str, Any] = json.load(f)
    return answer


def child(argv: list[str]) -> None:
    """``--child load HOME DATA`` stores the todos; ``--child cold HOME QUERY`` prints one sample's times."""
    what, home = argv[0], Path(argv[1])
    setup_django(home)
    from accounts.services import user_get_or_create
    from mcp_bridge.server import run_tool
    from mcp_bridge.tools import Caller
    from todos.tools import TOOLSET

    caller = Caller(user=user_get_or_create(username="bench"), transport="stdio", workdir=None)

    def call(tool: str, arguments: dict[str, Any]) -> str:
        reply = run_tool(TOOLSET, TOOLSET.by_name[tool], caller, arguments)
        if reply.is_error:
            raise SystemExit(f"{tool}({arguments}) failed: {reply.text}")
        return reply.text

    if what == "load":
        items = json.loads(Path(argv[2]).read_text(encoding="utf-8"))["items"]
        for item in items:
            call("put_todo", {"id": item["id"], "name": item["name"], "description": item["description"] or "",
                              "priority": item["priority"],
                              "completedAt": item["completedAt"] if item["completed"] else None})
            if item.get("deletedAt"):
                call("delete_todo", {"id": item["id"]})
        return
    arguments = {"query": argv[2], "includeCompleted": True}
    wall, cpu = [], []
    for _ in range(2):
        t0, c0 = time.perf_counter(), time.thread_time()
        json.loads(call("search_todos", arguments))
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
    print(json.dumps({"cold_ms": wall[0], "cold_cpu_ms": cpu[0], "warm_ms": wall[1], "warm_cpu_ms": cpu[1]}))


def run_cold(data_path: Path, data: dict[str, Any], samples: int) -> dict[str, Any]:
    """Medians of the first and the second ``search_todos`` of fresh processes, on the stored public set."""
    script = str(Path(__file__).resolve())
    queries = [q["q"] for q in data["queries"]]
    with tempfile.TemporaryDirectory(prefix="todos_cold_") as home:
        subprocess.run([sys.executable, script, "--child", "load", home, str(data_path)], check=True)
        runs = []
        for sample in range(samples):
            query = queries[sample * len(queries) // samples]
            out = subprocess.run([sys.executable, script, "--child", "cold", home, query], check=True,
                                 stdout=subprocess.PIPE).stdout
            runs.append(json.loads(out))
    medians = {name: statistics.median(r[name] for r in runs) for name in runs[0]}
    return {**medians, "cold_max_ms": max(r["cold_ms"] for r in runs),
            "todos": sum(1 for t in data["items"] if not t.get("deletedAt"))}


def print_table(ours: dict[str, dict[str, Any]], fuse: dict[str, dict[str, Any]], kinds_meta: dict[str, str]) -> None:
    hdr = [
        "kind",
        "n",
        "hit@1 ours",
        "hit@1 fuse",
        "hit@5 ours",
        "hit@5 fuse",
        "MRR@10 ours",
        "MRR@10 fuse",
        "MRR ours/fuse",
        "p50 ms ours",
        "p50 ms fuse",
        "speed fuse/ours",
    ]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "|".join(["---"] * len(hdr)) + "|")
    for label in ["all"] + [k for k in ours if k != "all"]:
        o, f = ours[label], fuse[label]
        name = label if label == "all" else f"{label}: {kinds_meta.get(label, label)}"
        cells = [
            name,
            str(o["n"]),
            f"{o['hit@1']:.3f}",
            f"{f['hit@1']:.3f}",
            f"{o['hit@5']:.3f}",
            f"{f['hit@5']:.3f}",
            f"{o['mrr@10']:.3f}",
            f"{f['mrr@10']:.3f}",
            ratio(o["mrr@10"], f["mrr@10"]),
            f"{o['p50_ms']:.3f}",
            f"{f['p50_ms']:.2f}",
            f"{f['p50_ms'] / o['p50_ms']:.0f}x",
        ]
        print("| " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="todos dataset JSON")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per query (median taken)")
    ap.add_argument("--keep", type=Path, help="copy both result files into this directory")
    ap.add_argument("--quick", action="store_true", help="repeat 1; exit 1 below the regression guard")
    ap.add_argument("--cold-samples", type=int, default=COLD_SAMPLES, help="fresh processes for the cold search")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(a.child)
        return 0
    repeat = 1 if a.quick else max(1, a.repeat)

    data_path = a.data.resolve()
    with open(data_path, encoding="utf-8") as f:
        data = json.load(f)
    score = load_score()

    with tempfile.TemporaryDirectory(prefix="todos_bench_") as tmp:
        ours_res = run_ours(data, repeat)
        ours_path = Path(tmp) / "ours.json"
        ours_path.write_text(json.dumps(ours_res) + "\n", encoding="utf-8")
        fuse_res = run_fuse(data_path, repeat, Path(tmp) / "fuse.json")
        if a.keep:
            a.keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(ours_path, a.keep / "ours.json")
            shutil.copy(Path(tmp) / "fuse.json", a.keep / "fuse.json")

    samples = 5 if a.quick else max(1, a.cold_samples)
    cold = run_cold(data_path, data, samples)
    ours = summarise(score, data, ours_res)
    fuse = summarise(score, data, fuse_res)
    meta = data["meta"]
    print(f"dataset: {data_path.name} ({meta['n_items']} todos, {meta['n_queries']} queries), repeat {repeat}")
    print(
        f"index build: ours {ours_res['build_ms']:.2f} ms (all), {ours_res['build_ms_pending']:.2f} ms (pending); "
        f"fuse {fuse_res.get('build_ms', float('nan')):.2f} ms ({fuse_res.get('engine', 'fuse.js')})\n"
    )
    print_table(ours, fuse, meta.get("query_kinds", {}))

    fuse_cold = fuse_res.get("build_ms", float("nan")) + fuse["all"]["p50_ms"]
    print(
        f"\ncold search_todos through the tool, {cold['todos']} todos (a fresh process's first search, "
        f"median of {samples}; load average {os.getloadavg()[0]:.1f}): ours {cold['cold_ms']:.1f} ms "
        f"(max {cold['cold_max_ms']:.1f}; CPU {cold['cold_cpu_ms']:.1f} ms), the warm call after it "
        f"{cold['warm_ms']:.1f} ms (CPU {cold['warm_cpu_ms']:.1f}); Fuse.js cold (index build + median search) "
        f"{fuse_cold:.1f} ms; ratio {cold['cold_ms'] / fuse_cold:.2f}"
    )

    empty = TodoIndex.build(Doc(t["id"], t["name"], t["description"] or "") for t in data["items"]).search(
        "zqxjv wqpfz"
    )
    print(f"\nunrelated query 'zqxjv wqpfz' -> {len(empty)} results")

    share = ours["all"]["p50_ms"] / fuse["all"]["p50_ms"]
    goals = {
        f"MRR@10 >= {GOAL_MRR}": ours["all"]["mrr@10"] >= GOAL_MRR,
        "hit@1 >= 0.88": ours["all"]["hit@1"] >= 0.88,
        "kind e MRR@10 >= 0.65": ours.get("e", {"mrr@10": 1.0})["mrr@10"] >= 0.65,
        "ahead of fuse on every kind": all(ours[k]["mrr@10"] > fuse[k]["mrr@10"] for k in ours),
        f"p50 <= 1/{GOAL_SPEEDUP:.0f} of fuse": share <= 1 / GOAL_SPEEDUP,
        "unrelated query -> []": not empty,
        f"cold search <= {GOAL_COLD_MS:.0f} ms": cold["cold_ms"] <= GOAL_COLD_MS,
    }
    print("goals: " + ", ".join(f"{k}: {'ok' if v else 'MISSED'}" for k, v in goals.items()))

    if a.quick:
        failures = []
        if ours["all"]["mrr@10"] < QUICK_MIN_MRR:
            failures.append(f"MRR@10 {ours['all']['mrr@10']:.3f} < {QUICK_MIN_MRR:.2f}")
        if share > QUICK_MAX_LATENCY_SHARE:
            failures.append(f"p50 is {share:.1%} of fuse's (> {QUICK_MAX_LATENCY_SHARE:.0%})")
        if cold["cold_ms"] > QUICK_MAX_COLD_SHARE * fuse_cold:
            failures.append(f"cold search {cold['cold_ms']:.1f} ms is over {QUICK_MAX_COLD_SHARE:.0f}x Fuse.js's "
                            f"{fuse_cold:.1f} ms")
        if failures:
            print("QUICK CHECK FAILED: " + "; ".join(failures), file=sys.stderr)
            return 1
        print("quick check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
