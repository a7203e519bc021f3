#!/usr/bin/env python3
"""A look-up pill_search over stdio at 20,000 pills: with meaning on it should cost what words only cost.

    .venv/bin/python bench/stdio_lookup.py [--size 20000] [--repeat 5]

Builds a project whose local bottle holds the public recall set replicated to --size pills (the way
bench/pills_latency.py does, every copy given its source pill's vector), then starts `manage.py mcp pillbox` in it
three times: words only (``EMBEDDINGS=off``), meaning on with the model in the server (``EMBEDDINGS_SHARED=off``)
and meaning on with the model in the shared process (the default). Each server is warmed up (a question answered
by meaning first), then times a no-op round trip (``ping``) and the look-ups (kind a) over the newline-delimited
JSON-RPC stdio transport. Reported: each look-up's p50 with the round trip taken out, and meaning on against words
only in the same run (goal: at most 4 ms, and meaning no slower than words).
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
from typing import Any

import pills_latency
import pills_quality
import stdio_memory
from common import DATA, REPO, setup_django

GOAL_MS = 4.0
WARM_QUESTION = "where are backups of postgres kept"


def build(tmp: Path, size: int) -> pills_quality.Project:
    items = json.loads((DATA / "pills_recall_s1.json").read_text(encoding="utf-8"))["items"]
    source, mapping = pills_latency.embedded_source(tmp / "projects", items)
    return pills_latency.scaled(tmp / "projects", source, mapping, items, size)


def p50_ms(timings: list[float]) -> float:
    return statistics.median(timings) * 1000


def measure(project: pills_quality.Project, home: Path, mode: str, lookups: list[str], repeat: int) -> dict[str, Any]:
    meaning, shared = stdio_memory.MODES[mode]
    env = stdio_memory.base_env(home, f"bench-{project.workdir.name}", EMBEDDINGS=meaning, EMBEDDINGS_SHARED=shared,
                                EMBEDDINGS_SOCKET_DIR=str(home.parent / f"run-{mode}"), EMBEDDINGS_SHARED_IDLE="0")
    server = stdio_memory.started(project.workdir, env)
    try:
        semantic = False
        for _ in range(30):  # the model loads in the background; each search waits for it up to a second
            semantic = "used_semantic: true" in server.call("pill_search", query=WARM_QUESTION)
            if semantic or meaning == "off":
                break
        for query in lookups:
            server.call("pill_search", query=query)
        pings, found = [], []
        for _ in range(repeat):
            for query in lookups:
                t0 = time.perf_counter()
                server.request("ping")
                pings.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                server.call("pill_search", query=query)
                found.append(time.perf_counter() - t0)
    finally:
        stdio_memory.stop(server)
    return {"ping": p50_ms(pings), "lookup": p50_ms(found), "semantic": semantic}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    os.environ.setdefault("EMBEDDINGS_CACHE", str(REPO / ".cache" / "models"))
    tmp = Path(tempfile.mkdtemp(prefix="stdio_lookup_")).resolve()
    try:
        setup_django(tmp / "home")
        project = build(tmp, a.size)
        from django.db import connections

        connections.close_all()
        data = json.loads((DATA / "pills_recall_s1.json").read_text(encoding="utf-8"))
        lookups = [q["q"] for q in data["queries"] if q["kind"] == "a"]
        rows = {mode: measure(project, tmp / "home", mode, lookups, a.repeat) for mode in stdio_memory.MODES}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    words = rows["off"]["lookup"] - rows["off"]["ping"]
    print(f"\n{a.size:,} pills, {len(lookups)} look-ups (kind a) x {a.repeat}\n")
    print("| server | ping p50 ms | look-up p50 ms | look-up less the round trip | against words only |")
    print("|---|---|---|---|---|")
    labels = {"off": "words only", "in-process": "meaning on, model in the server",
              "shared": "meaning on, one model process"}
    for mode in ("off", "in-process", "shared"):
        row = rows[mode]
        net = row["lookup"] - row["ping"]
        warm = "" if mode == "off" or row["semantic"] else " (meaning never came on)"
        print(f"| {labels[mode]}{warm} | {row['ping']:.2f} | {row['lookup']:.2f} | {net:.2f} | {net / words:.2f}x |")
    worst = max(rows[m]["lookup"] - rows[m]["ping"] for m in ("in-process", "shared"))
    print(f"\ngoal: a look-up with meaning on <= {GOAL_MS:.0f} ms less the round trip: "
          f"{'ok' if worst <= GOAL_MS else 'MISSED'} ({worst:.2f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
