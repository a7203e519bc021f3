#!/usr/bin/env python3
"""The approximate index (pillbox/search/ann.py) against the exact scan, on real text vectors scaled up.

    .venv/bin/python bench/vector_index.py [--sizes 20000,200000] [--million] [--queries 200] [--threads 2]

Vectors: the public recall set's 1,442 pills embedded with the bundled model, then mixed up to each size: row r is
normalize(e_i + w e_j + w/2 e_k + n), e_i pill r mod 1,442, e_j and e_k two pills at random, w uniform in
0.2-0.6, n Gaussian noise of norm 0.05: rows around real texts, each about one of them with two others' topics
in it, not random vectors (on which no graph index is any good). Tighter copies (normalize(0.85 e_i + 0.15 e_k +
noise of norm 0.1): 139 near-duplicates of every pill at 200,000) are much harder for a graph: recall@30 0.69 at
ef 64 and 0.82 at ef 1,024 there, for an answer whose rows differ by noise alone. Queries: the set's own questions and
paraphrases (kinds n and p) embedded as a search embeds them.

Per size: the index's build time; the query path of a large scope (``ann.Part.closest`` over the file mapped
with ``view=True``, every candidate scored again exactly, plus the cosine's mean and spread from the part's
sums) against the exact scan of a float32 matrix kept in memory: p50 / p95 per query, recall@30 of the
approximate top 30 against the exact top 30, and the process's memory: anonymous (its own) and file-backed (the
mapped index, shared by every process on the machine) resident kilobytes after each path. The exact matrix is
made after the index's figures, so its memory is counted apart.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import DATA, setup_django


def memory() -> dict[str, int]:
    """Resident kilobytes of this process: its own (anonymous) and of mapped files."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("RssAnon", "RssFile", "VmRSS"):
            fields[name] = int(value.split()[0])
    return fields


def embedded(texts: list[str], cache: Path) -> Any:
    import numpy as np

    if cache.is_file():
        return np.load(cache)
    from pillbox.embeddings import loader

    model = loader.embedder(wait=120)
    assert model is not None, "the bundled model is needed"
    vectors = np.vstack([model.embed(texts[at:at + 64]) for at in range(0, len(texts), 64)]).astype(np.float32)
    np.save(cache, vectors)
    return vectors


def scaled(source: Any, size: int, seed: int = 11) -> Any:
    """``size`` rows around the real ones: row r is pill (r mod 1,442) with two other pills mixed in at random
    weights, and a little noise; the set itself is among them."""
    import numpy as np

    rng = np.random.default_rng(seed)
    base = source[np.arange(size) % len(source)]
    first = source[rng.integers(0, len(source), size)]
    second = source[rng.integers(0, len(source), size)]
    weight = rng.uniform(0.2, 0.6, size=(size, 1)).astype(np.float32)
    noise = rng.normal(0.0, 0.05 / np.sqrt(source.shape[1]), size=base.shape).astype(np.float32)
    rows = base + weight * first + 0.5 * weight * second + noise
    rows[:len(source)] = source
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float16)  # as stored


def pct(values: list[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] * 1000


def run(size: int, source: Any, queries: Any, threads: int, folder: Path) -> dict[str, Any]:
    import numpy as np

    from pillbox.search import ann, changes

    rows = scaled(source, size)
    seqs = np.arange(1, size + 1, dtype=np.int64)
    index = ann._new_index(rows.shape[1])
    started = time.perf_counter()
    for at in range(0, size, 10_000):
        index.add(seqs[at:at + 10_000].astype(np.uint64), rows[at:at + 10_000], threads=threads)
    build = time.perf_counter() - started
    file = folder / f"n{size}.usearch"
    index.save(str(file))
    del index
    gc.collect()
    before = memory()
    from usearch.index import Index

    view = Index.restore(str(file), view=True)
    assert view is not None
    view.expansion_search = max(64, min(ann.EXPANSION, size // 50))  # type: ignore[misc]  # as ann.current
    sums = ann.Sums.empty(rows.shape[1])
    for at in range(0, size, 10_000):
        sums.add(rows[at:at + 10_000])
    opened = ann.Opened(view, changes.Position(after=0), (0,), "bench", rows.shape[1], sums.total, sums.outer)
    del rows
    gc.collect()
    started = time.perf_counter()
    part = ann.Part(opened, seqs, np.ones(size, dtype=bool), np.zeros(size, dtype=np.int32), ["ops"],
                    np.zeros(size, dtype=np.int64), np.zeros(opened.dimensions),
                    np.zeros((opened.dimensions, opened.dimensions)))
    part.start()  # a scope of every row: the index's sums, nothing to take off
    sums_s = time.perf_counter() - started
    wanted = 30
    approximate, timings = [], []
    for query in queries:
        t0 = time.perf_counter()
        found, similarity, _ = part.closest(query, None, wanted)
        part.moments(query)
        order = np.argsort(-similarity)[:wanted]
        timings.append(time.perf_counter() - t0)
        approximate.append(set(found[order].tolist()))
    indexed = memory()
    matrix = np.vstack([part.vectors(seqs[at:at + 8192]) for at in range(0, size, 8192)])
    exact, scans = [], []
    for query in queries:
        t0 = time.perf_counter()
        similarity = matrix @ query
        top = np.argpartition(-similarity, wanted - 1)[:wanted]
        float(similarity.mean()), float(similarity.std())
        scans.append(time.perf_counter() - t0)
        exact.append(set(seqs[top].tolist()))
    scanned = memory()
    recall = statistics.mean(len(a & e) / wanted for a, e in zip(approximate, exact, strict=True))
    return {"size": size, "build_s": round(build, 1), "part_s": round(sums_s, 3), "file_mb": round(
        file.stat().st_size / 2**20), "index_p50_ms": round(pct(timings, 50), 2),
        "index_p95_ms": round(pct(timings, 95), 2), "exact_p50_ms": round(pct(scans, 50), 2),
        "exact_p95_ms": round(pct(scans, 95), 2), "recall_at_30": round(recall, 4),
        "index_anon_mb": round((indexed["RssAnon"] - before["RssAnon"]) / 1024),
        "index_file_mb": round((indexed["RssFile"] - before["RssFile"]) / 1024),
        "exact_anon_mb": round((scanned["RssAnon"] - indexed["RssAnon"]) / 1024),
        "process_rss_mb": round(indexed["VmRSS"] / 1024)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="20000,200000")
    ap.add_argument("--million", action="store_true", help="also 1,000,000 vectors (not in CI)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2, help="threads that build the index")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")] + ([1_000_000] if args.million else [])
    with tempfile.TemporaryDirectory(prefix="pillbox-vector-index-") as scratch:
        folder = Path(scratch)
        setup_django(folder / "home")
        data = json.loads((DATA / "pills_recall_s1.json").read_text(encoding="utf-8"))
        texts = [f"{item['title']}\n{item['content']}" for item in data["items"]]
        asked = [q["q"] for q in data["queries"] if q.get("kind") in ("n", "p")][:args.queries]
        cache = Path(tempfile.gettempdir()) / "pillbox-bench-recall-vectors.npy"
        source = embedded(texts, cache)
        from pillbox.embeddings import loader

        model = loader.embedder(wait=120)
        assert model is not None
        queries = [loader.embed_query(model, text) for text in asked]
        print(f"{len(source)} pills embedded, {len(queries)} queries (kinds n and p)", flush=True)
        rows = []
        for size in sizes:
            row = run(size, source, queries, args.threads, folder)
            rows.append(row)
            print(json.dumps(row), flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
