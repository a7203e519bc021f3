#!/usr/bin/env python3
"""Score fusions of words and meaning offline, on every corpus captured by ``bench/fusion_capture.py`` at once.

    .venv/bin/python bench/fusion_eval.py CAPTURE.pickle

Prints, per corpus and kind, MRR@10 and R@5 for words only, the model alone, the tool's fusion (``scoring.fuse``,
the engine's weights and floors) and the false-absence and confidence figures, so that a change to the fusion
is judged on all corpora together, never on one.
"""

from __future__ import annotations

import pickle
import sys
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import REPO

sys.path.insert(0, str(REPO))

ABSENT_KINDS = ("absent", "nonsense")


def words_order(record: dict[str, Any]) -> list[int]:
    ranked = sorted(record["lexical"], key=lambda c: (-(c[1] + 0.099 * c[2]), -c[0]))
    return [c[0] for c in ranked]


def meaning_order(record: dict[str, Any]) -> list[int]:
    pool = {seq: s for seq, _, _, s in record["lexical"]} | dict(record["meaning"])
    return [seq for seq, _ in sorted(pool.items(), key=lambda item: (-item[1], -item[0]))]


def tool_order(record: dict[str, Any]) -> tuple[list[int], str]:
    """The engine's fusion (``pillbox.search.engine``'s weights, floors and confidence) over the captured
    signals: change a constant there and this scores the change on every corpus."""
    from pillbox.search import engine, scoring

    terms = max(record["terms"], 1)
    covered = max((c[1] for c in record["lexical"]), default=0.0)
    spread = record["spread"]
    from pillbox.search.meaning import Spread
    from pillbox.search.results import ALL_WORDS, MEANING, SOME_WORDS, Hit

    z = (spread["max"] - spread["mean"]) / spread["std"] if spread and spread["std"] > 1e-9 else 0.0
    strong = Spread(spread.get("max", 0.0), z, len(record["ids"])).stands_out(engine.STRONG_MARGIN)
    lookup = covered >= 0.9 * terms
    weight = (engine.LOOKUP_SIMILARITY_WEIGHT if lookup else engine.HALF_WEIGHT if covered >= engine.WEAK_SHARE * terms
              else engine.STRONG_WEIGHT if strong else engine.WEAK_WEIGHT)
    floor = (0.30 - engine.BESIDE_WORDS_MARGIN if record["lexical"]
             else 0.30 - engine.ALONE_MARGIN if record["worded"] else 2.0)
    pool = {seq: (c, b, s) for seq, c, b, s in record["lexical"]}
    held = record.get("meaning_words", {})  # what the words match in a row meaning brought (scoring.rank)
    pool.update({seq: (held.get(seq, 0.0), 0.0, s) for seq, s in record["meaning"] if seq not in pool and s >= floor})

    def score(item: tuple[int, tuple[float, float, float]]) -> float:
        c, b, s = item[1]
        if not weight and not c:
            return float(scoring.ALONE_AFTER_LOOKUP * s)
        return float((c + scoring.BM25_WEIGHT * b) / terms + weight * s)

    ranked = [seq for seq, _ in sorted(pool.items(), key=lambda item: (-score(item), -item[0]))]
    if not ranked:
        return [], ""
    c, _, s = pool[ranked[0]]
    match = ALL_WORDS if c >= 0.9 * terms else SOME_WORDS if c else MEANING
    first = Hit(id=uuid.UUID(int=0), seq=ranked[0], compound="", title="", snippet="", bottle_id=None, score=0.0,
                match=match, similarity=s)
    rivals = sum(1 for seq in ranked[1:] if pool[seq][0] >= 0.9 * terms)
    level = engine.confidence(first, Spread(spread.get("max", 0.0), z, len(record["ids"])), meaning_on=True,
                              rivals=rivals)
    return ranked, level


def metrics(record: dict[str, Any], ranked: list[int]) -> dict[str, float]:
    ids = record["ids"]
    named = [ids.get(seq, "?") for seq in ranked[:20]]
    evidence = set(record["evidence"])
    first = next((at for at, name in enumerate(named, 1) if name in evidence), None)
    return {"mrr@10": 1 / first if first and first <= 10 else 0.0,
            "r@5": len(set(named[:5]) & evidence) / len(evidence),
            "hit@1": float(first == 1), "empty": float(not ranked)}


def table(records: list[dict[str, Any]], systems: dict[str, Callable[[dict[str, Any]], list[int]]]) -> None:
    sums: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for record in records:
        if record["kind"] in ABSENT_KINDS:
            continue
        for name, system in systems.items():
            values = metrics(record, system(record))
            for group in (record["kind"], "all"):
                for metric, value in values.items():
                    sums[(record["corpus"], group, f"{metric} {name}")].append(value)
    corpora = sorted({key[0] for key in sums})
    for corpus in corpora:
        groups = sorted({key[1] for key in sums if key[0] == corpus}, key=lambda g: (g != "all", g))
        print(f"\n{corpus}")
        print("| kind | n | " + " | ".join(f"{m} {s}" for m in ("mrr@10", "r@5") for s in systems) + " | empty |")
        for group in groups:
            n = len(sums[(corpus, group, f"mrr@10 {next(iter(systems))}")])
            cells = [f"{sum(v) / n:.3f}" for m in ("mrr@10", "r@5") for s in systems
                     for v in [sums[(corpus, group, f"{m} {s}")]]]
            empty = sum(sums[(corpus, group, f"empty {list(systems)[-1]}")]) / n
            print(f"| {group} | {n} | " + " | ".join(cells) + f" | {empty:.1%} |")


def confidence_report(records: list[dict[str, Any]]) -> None:
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    absent: dict[tuple[str, str], list[str]] = defaultdict(list)
    for record in records:
        ranked, level = tool_order(record)
        if record["kind"] in ABSENT_KINDS:
            absent[(record["corpus"], record["kind"])].append(level if ranked else "none")
            continue
        right = bool(ranked) and record["ids"].get(ranked[0]) in set(record["evidence"])
        by[(record["corpus"], level if ranked else "none")].append(float(right))
    print("\nconfidence: share of first rows right (answers)")
    for corpus in sorted({key[0] for key in by}):
        cells = [f"{level} {sum(v) / len(v):.1%} ({len(v)})" for level in ("high", "medium", "low", "none")
                 if (v := by.get((corpus, level)))]
        print(f"  {corpus}: " + ", ".join(cells))
    print("absent topics and nonsense: how they were answered")
    for (corpus, kind), levels in sorted(absent.items()):
        n = len(levels)
        print(f"  {corpus} {kind} ({n}): " + ", ".join(f"{level} {levels.count(level) / n:.0%}"
                                                    for level in ("none", "low", "medium", "high")))


def main() -> int:

    import tempfile

    from common import setup_django

    setup_django(Path(tempfile.mkdtemp(prefix="fusion-eval-")))
    records = pickle.loads(Path(sys.argv[1]).read_bytes())
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    if only:
        records = [r for r in records if r["corpus"] in only]
    table(records, {"words": words_order, "meaning": meaning_order, "tool": lambda r: tool_order(r)[0]})
    confidence_report(records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
