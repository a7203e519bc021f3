"""Duplicate detection and tidy-up: precision and recall of pillbox.duplicates on the labelled set
(bench/duplicate_cases.py), per pass and across thresholds, and the time a plan and a tidy take at 1,000 pills.

    .venv/bin/python bench/duplicates.py [--pills 1000] [--text-only] [--skip-tidy]

Pairs are scored: a predicted pair is two notes put in one group; it is right when the set says they are one
lesson. The embeddings are the bundled model's (the vectors pill_duplicates reads).
"""

from __future__ import annotations

import argparse
import itertools
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import duplicate_cases  # noqa: E402
from common import setup_django  # noqa: E402


def labelled_notes() -> tuple[list[Any], dict[str, int], dict[int, str]]:
    """The set's notes, which lesson each one is (its cluster) and which pass each lesson is meant for."""
    from pillbox.duplicates import Note

    start = datetime(2026, 1, 1, tzinfo=UTC)
    notes: list[Any] = []
    cluster: dict[str, int] = {}
    kinds: dict[int, str] = {}
    texts: list[tuple[int, tuple[str, str]]] = []
    for number, (kind, items) in enumerate(duplicate_cases.SAME):
        kinds[number] = kind
        texts += [(number, item) for item in items]
    number = len(duplicate_cases.SAME)
    for lookalikes in duplicate_cases.APART:
        for item in lookalikes:
            texts.append((number, item))
            number += 1
    for item in duplicate_cases.ALONE:
        texts.append((number, item))
        number += 1
    vectors = embed([f"{title}\n{content}" for _, (title, content) in texts])
    for index, (label, (title, content)) in enumerate(texts):
        note_id = f"n{index:03d}"
        notes.append(Note(id=note_id, title=title, content=content, created_at=start + timedelta(hours=index),
                          vector=vectors[index] if vectors is not None else None))
        cluster[note_id] = label
    return notes, cluster, kinds


def embed(texts: list[str]) -> Any:
    from pillbox.embeddings.loader import embedder

    model = embedder(wait=None)
    if model is None:
        print("(no embedding model: the meaning pass is skipped)")
        return None
    return model.embed(texts)


def score(notes: list[Any], cluster: dict[str, int], kinds: dict[int, str], **options: Any) -> dict[str, Any]:
    from pillbox.duplicates import groups

    predicted: set[tuple[str, str]] = set()
    for group in groups(notes, **options):
        ids = sorted(note.id for note in group.members)
        predicted.update(itertools.combinations(ids, 2))
    truth = {pair for pair in itertools.combinations(sorted(cluster), 2) if cluster[pair[0]] == cluster[pair[1]]}
    right = predicted & truth
    per_kind = {}
    for kind in ("exact", "near", "meaning"):
        wanted = {pair for pair in truth if kinds.get(cluster[pair[0]]) == kind}
        per_kind[kind] = len(wanted & predicted) / len(wanted) if wanted else 0.0
    return {"pairs": len(predicted), "precision": len(right) / len(predicted) if predicted else 1.0,
            "recall": len(right) / len(truth), "per_kind": per_kind,
            "wrong": sorted(predicted - truth), "missed": sorted(truth - predicted)}


def report(label: str, result: dict[str, Any], notes_by_id: dict[str, Any], *, verbose: bool = False) -> None:
    kinds = "  ".join(f"{kind} {value:.2f}" for kind, value in result["per_kind"].items())
    print(f"{label:<34} pairs {result['pairs']:>3}  precision {result['precision']:.3f}  "
          f"recall {result['recall']:.3f}  (recall by lesson kind: {kinds})")
    for left, right in result["wrong"]:
        print(f"    wrong: {notes_by_id[left].content!r} ~ {notes_by_id[right].content!r}")
    if verbose:
        for left, right in result["missed"]:
            print(f"    missed: {notes_by_id[left].content!r} ~ {notes_by_id[right].content!r}")


def quality() -> None:
    from pillbox.duplicates import EXACT, MEANING, MEANING_THRESHOLD, NEAR, NEAR_THRESHOLD

    notes, cluster, kinds = labelled_notes()
    by_id = {note.id: note for note in notes}
    lessons = sum(1 for _ in duplicate_cases.SAME)
    print(f"labelled set: {len(notes)} notes, {lessons} lessons stored more than once, "
          f"{sum(len(group) for group in duplicate_cases.APART)} look-alikes in {len(duplicate_cases.APART)} sets")
    print("\nper pass, at the thresholds in use:")
    report("exact", score(notes, cluster, kinds, modes=(EXACT,)), by_id)
    report(f"exact + near (≥ {NEAR_THRESHOLD:.0f})", score(notes, cluster, kinds, modes=(EXACT, NEAR)), by_id,
           verbose=True)
    if notes[0].vector is not None:
        report(f"exact + near + meaning (≥ {MEANING_THRESHOLD})",
               score(notes, cluster, kinds, modes=(EXACT, NEAR, MEANING)), by_id, verbose=True)
        report(f"meaning alone (≥ {MEANING_THRESHOLD})", score(notes, cluster, kinds, modes=(MEANING,)), by_id)
    print("\nnear threshold sweep (exact + near):")
    for percent in (80, 84, 86, 88, 90, 92, 95):
        result = score(notes, cluster, kinds, modes=(EXACT, NEAR), near=percent)
        print(f"  {percent:>3}  precision {result['precision']:.3f}  recall {result['recall']:.3f}")
    if notes[0].vector is not None:
        print("\nmeaning threshold sweep (the meaning pass alone, guards on):")
        for cutoff in (0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.93, 0.95):
            result = score(notes, cluster, kinds, modes=(MEANING,), meaning=cutoff)
            print(f"  {cutoff:.2f}  precision {result['precision']:.3f}  recall {result['recall']:.3f}  "
                  f"(meaning lessons {result['per_kind']['meaning']:.2f})")


def lesson(rng: random.Random, vocabulary: list[str]) -> tuple[str, str]:
    words = rng.choices(vocabulary, k=rng.randint(12, 60))
    return " ".join(words[:4]).capitalize(), " ".join(words).capitalize() + "."


def timed(function: Callable[[], str]) -> tuple[float, str]:
    started = time.perf_counter()
    answer = function()
    return time.perf_counter() - started, answer


def timings(root: Path, count: int, *, meaning: bool = True) -> None:
    """A project bottle of ``count`` pills, each lesson stored twice (the copy with other case and punctuation), so
    a tidy of all of it touches every pill: the plan, the tidy and its undo, timed through the tools."""
    import os

    from pills_quality import Project, store_public

    from pillbox.embeddings import backfill

    os.environ["EMBEDDINGS"] = "off"  # stores only; the vectors are made below, timed apart
    rng = random.Random(33)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 10))) for _ in range(6000)]
    items = []
    for number in range(count // 2):
        title, content = lesson(rng, vocabulary)
        items.append({"id": f"{number}a", "title": title, "content": content, "compound": "note"})
        items.append({"id": f"{number}b", "title": title.lower(), "content": content.rstrip(".").lower() + "!",
                      "compound": "note"})
    project = Project(root, "tidy-bench")
    store_public(project, items)
    print(f"\ntidy at {count} pills ({count // 2} lessons stored twice), through the tools, one process:")
    search = {"query": " ".join(items[0]["content"].split()[:3]), "limit": 100}
    before = project.search(search)
    seconds, answer = timed(lambda: project.call("pill_duplicates", {"bottle_id": project.bottle_id}))
    plan = re.search(r"^plan: (\S+)$", answer, re.M)
    groups = re.search(r"^groups: (\d+)$", answer, re.M)
    print(f"  pill_duplicates (by text)   {seconds * 1000:8.1f} ms   groups {groups[1] if groups else 0}")
    if plan is None:
        raise SystemExit(f"no plan: {answer[:300]}")
    seconds, answer = timed(lambda: project.call("pill_tidy", {"plan_id": plan[1]}))
    tidy = re.search(r"^tidy: (\S+)$", answer, re.M)
    print(f"  pill_tidy (all groups)      {seconds * 1000:8.1f} ms   {answer.splitlines()[3]}   (goal ≤ 1000 ms)")
    if tidy is None:
        raise SystemExit(f"no tidy: {answer[:300]}")
    seconds, answer = timed(lambda: project.call("pill_tidy_undo", {"tidy_id": tidy[1]}))
    print(f"  pill_tidy_undo              {seconds * 1000:8.1f} ms   {answer.splitlines()[2]}")
    print(f"  pill_search after the undo: {'byte-identical' if project.search(search) == before else 'DIFFERENT'}")
    if not meaning:
        return
    os.environ["EMBEDDINGS"] = "on"
    seconds, _ = timed(lambda: str(backfill.backfill(project.alias(), "pill")))
    print(f"  (embedding the {count} pills: {seconds:.1f} s, the background backfill's work, not the plan's)")
    seconds, answer = timed(lambda: project.call("pill_duplicates", {"bottle_id": project.bottle_id,
                                                                    "by_meaning": True}))
    groups = re.search(r"^groups: (\d+)$", answer, re.M)
    print(f"  pill_duplicates (by_meaning){seconds * 1000:8.1f} ms   groups {groups[1] if groups else 0}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pills", type=int, default=1000)
    parser.add_argument("--skip-tidy", action="store_true")
    parser.add_argument("--text-only", action="store_true", help="time the plan by text only (no embedding)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        setup_django(Path(home))
        quality()
        if not options.skip_tidy:
            timings(Path(home), options.pills, meaning=not options.text_only)


if __name__ == "__main__":
    main()
