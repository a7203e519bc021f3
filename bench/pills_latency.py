"""The latency part of ``pills_search.py`` ((b) latency at N pills): the public set replicated with varied text
and bulk-inserted into a project's bottle, the tool function and the engine timed against the bare FTS5 query on
the same file, and the growth goals across sizes."""

from __future__ import annotations

import random
import sqlite3
import statistics
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from common import ratio
from pills_quality import Project, embeddings, timed_runs

GOAL_GROWTH = 3.0  # strict p50 at the largest size against the first
GOAL_TYPO_MS = 50.0  # typo and fuzzy: true p50 at the largest size
# Above this size the latency part is words only: a million vectors are 1.5 GB of float32, past the vector
# cache's bound, and the speed goals there are for words.
VECTORS_UP_TO = 200_000

BARE_SQL = "SELECT rowid FROM pillbox_pill_fts WHERE pillbox_pill_fts MATCH ? ORDER BY rank LIMIT 20"


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


def pct(values: list[float], p: int) -> float:
    s = sorted(values)
    return s[max(1, -(-len(s) * p // 100)) - 1] if s else float("nan")


def copy_vectors(source_alias: str, target: Project, items: list[dict[str, Any]],
                 mapping: dict[str, str]) -> int:
    """Give each replicated pill its source item's vector (rows were inserted in ``replicated`` order)."""
    from django.db import connections

    from pillbox.embeddings import loader

    embeddings(True)
    model = loader.embedder()
    assert model is not None
    by_item: dict[str, bytes] = {}
    with connections[source_alias].cursor() as cursor:
        cursor.execute("SELECT p.id, v.vector FROM pillbox_pill p JOIN pillbox_pill_vector v ON v.pill_id = p.id")
        for pill_hex, blob in cursor.fetchall():
            item = mapping.get(pill_hex[:12])
            if item is not None:
                by_item[item] = bytes(blob)
    order = [it["id"] for it in items]
    alias = target.alias()
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT id FROM pillbox_pill ORDER BY seq")
        pills = [row[0] for row in cursor.fetchall()]
        rows = [(pill, model.key, by_item[order[i % len(order)]]) for i, pill in enumerate(pills)
                if order[i % len(order)] in by_item]
        cursor.executemany("INSERT INTO pillbox_pill_vector (pill_id, model, vector) VALUES (%s, %s, %s)", rows)
    return len(rows)


def latency_at(root: Path, ref: ModuleType, items: list[dict[str, Any]], queries: list[dict[str, Any]], size: int,
               repeat: int, *,
               source_alias: str, mapping: dict[str, str]) -> dict[str, Any]:
    project = Project(root, f"n{size}")
    embeddings(False)
    meaning = size <= VECTORS_UP_TO
    build_s = None
    if not project.reused:
        build_s = bulk_fill(project, replicated(items, size))
        if meaning:
            copy_vectors(source_alias, project, items, mapping)
    conn = sqlite3.connect(str(project.db_path))
    vectors = conn.execute("SELECT COUNT(*) FROM pillbox_pill_vector").fetchone()[0]
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.v USING fts5vocab(main, pillbox_pill_fts, row)")
    n_terms = conn.execute("SELECT COUNT(*) FROM temp.v").fetchone()[0]

    def bare(q: dict[str, Any]) -> list[Any]:
        return conn.execute(BARE_SQL, (bare_expression(ref, q["q"]),)).fetchall()

    # The engine alone (what the tool function calls after reading its arguments and the caller's reach).
    from pillbox import selectors
    from pillbox.access import reach_for
    from pillbox.search.engine import search
    from pillbox.search.targets import Target

    reach = reach_for(project.caller)
    targets = [Target(alias=alias, kind="pill", bottles=frozenset(bottles))
               for alias, bottles in selectors.narrowed_dbs(reach, None).items()]

    groups = {
        STRICT: ([q for q in queries if q["kind"] in "acde"], False),
        TYPO: ([q for q in queries if q["kind"] == "b"], False),
        "questions, paraphrases (n, p)": ([q for q in queries if q["kind"] in "np"], False),
        FUZZY: (queries, True),
    }
    rows = {}
    for label, (qs, fuzzy) in groups.items():
        if not qs:
            continue
        row: dict[str, Any] = {"n": len(qs)}
        for on in (True, False) if meaning else (False,):
            embeddings(on)
            mode = "on" if on else "off"
            _, ours = timed_runs(
                lambda q, f=fuzzy: project.search({"query": q["q"], "limit": 20, "fuzzy": f}), qs, repeat)
            _, engine = timed_runs(
                lambda q, f=fuzzy: search(targets, query=q["q"], compound=None, limit=20, fuzzy=f), qs, repeat)
            o, e = list(ours.values()), list(engine.values())
            row |= {f"ours_{mode}_p50": statistics.median(o), f"ours_{mode}_p95": pct(o, 95),
                    f"engine_{mode}_p50": statistics.median(e), f"engine_{mode}_p95": pct(e, 95)}
        _, base = timed_runs(bare, qs, repeat)
        b = list(base.values())
        rows[label] = row | {"bare_p50": statistics.median(b), "bare_p95": pct(b, 95)}
    conn.close()
    return {"size": size, "build_s": build_s, "vocab": n_terms, "vectors": vectors, "rows": rows}


def cell(row: dict[str, Any], key: str) -> str:
    """A latency cell; '-' for meaning at a size measured with words only."""
    return f"{row[key]:.3f}" if key in row else "-"


STRICT, TYPO, FUZZY = "strict (a, c, d, e)", "typo (b)", "fuzzy: true (all)"


def bare_ratio(result: dict[str, Any], label: str, who: str) -> float:
    """The p50 of the tool function (``ours``) or of the engine (``engine``), words only, against the bare
    query's in the same run."""
    row = result["rows"][label]
    return float(row[f"{who}_off_p50"]) / float(row["bare_p50"])


def growth_goals(latencies: list[dict[str, Any]]) -> dict[str, bool]:
    """From the first size to the last: the strict p50's growth, and the typo and fuzzy p50 at the last."""
    if len(latencies) < 2:
        return {}
    first, last = latencies[0], latencies[-1]
    growth = last["rows"][STRICT]["ours_off_p50"] / first["rows"][STRICT]["ours_off_p50"]
    typo, fuzzy = last["rows"][TYPO]["ours_off_p50"], last["rows"][FUZZY]["ours_off_p50"]
    span = f"{first['size']:,} to {last['size']:,}"
    return {
        f"tool strict p50 grows <= {GOAL_GROWTH:.0f}x from {span} ({growth:.2f}x)": growth <= GOAL_GROWTH,
        f"tool typo p50 <= {GOAL_TYPO_MS:.0f} ms at {last['size']:,} ({typo:.1f} ms)": typo <= GOAL_TYPO_MS,
        f"tool fuzzy p50 <= {GOAL_TYPO_MS:.0f} ms at {last['size']:,} ({fuzzy:.1f} ms)": fuzzy <= GOAL_TYPO_MS,
    }


def print_latency(result: dict[str, Any]) -> None:
    built = "kept from an earlier run" if result["build_s"] is None else f"bulk insert {result['build_s']:.1f} s"
    print(f"\n#### {result['size']:,} pills ({result['vocab']:,} indexed words, {result['vectors']:,} vectors; "
          f"{built})\n")
    hdr = ["queries", "n", "p50 ms tool, meaning", "p50 ms tool, words", "p50 tool meaning/words",
           "p50 ms search(), meaning", "p50 ms search(), words", "p50 ms bare", "p50 search() words/bare",
           "p95 ms tool, meaning", "p95 ms tool, words"]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "|".join(["---"] * len(hdr)) + "|")
    for label, r in result["rows"].items():
        print("| " + " | ".join([
            label, str(r["n"]), cell(r, "ours_on_p50"), cell(r, "ours_off_p50"),
            ratio(r["ours_on_p50"], r["ours_off_p50"]) if "ours_on_p50" in r else "-",
            cell(r, "engine_on_p50"), cell(r, "engine_off_p50"), cell(r, "bare_p50"),
            ratio(r["engine_off_p50"], r["bare_p50"]), cell(r, "ours_on_p95"), cell(r, "ours_off_p95"),
        ]) + " |")


def embedded_source(root: Path, items: list[dict[str, Any]]) -> tuple[Project, dict[str, str]]:
    """The public set stored through the tools in a project of its own, every vector written: what the scaled
    copies take their vectors from (``scaled``)."""
    from pills_quality import embeddings, store_public

    from pillbox.embeddings import backfill

    source = Project(root, "source")
    embeddings(False)
    mapping = store_public(source, items)
    embeddings(True)
    backfill.backfill(source.alias(), "pill")
    return source, mapping


def scaled(root: Path, source: Project, mapping: dict[str, str], items: list[dict[str, Any]], size: int) -> Project:
    """A project holding the public set replicated to ``size`` pills, each with its source pill's vector."""
    project = Project(root, f"n{size}")
    bulk_fill(project, replicated(items, size))
    copy_vectors(source.alias(), project, items, mapping)
    return project

