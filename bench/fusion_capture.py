#!/usr/bin/env python3
"""Capture what the search weighs, per query, on every corpus at once, for calibrating the fusion offline.

    .venv/bin/python bench/fusion_capture.py OUT.pickle [--keep DIR]

For each query of every corpus present (LoCoMo's five conversations with two title forms, the public recall set,
the team's conversational corpus, the young project of bench/young.py, and the absent-topic and nonsense queries
of each), the search runs through the `pill_search` tool with meaning on, and this records what the engine had
before it ranked: the words' candidates (coverage, normalised bm25, cosine), the rows close in meaning with no
floor, the query's term count, and the cosine's spread over the whole scope. ``bench/fusion_eval.py`` then scores
any fusion of these offline, on all corpora together, with the same scoring as ``pillbox.search.scoring``.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

import corpora
from common import DATA, setup_django


class Recorder:
    """Patches the engine's passes to record their inputs (the answer itself is unchanged but for the floor)."""

    def __init__(self) -> None:
        self.current: dict[str, Any] = {}
        self.joined: list[Any] = []

    def install(self) -> None:
        import numpy as np

        from pillbox.search import engine
        from pillbox.search.meaning import semantic_pass, vectors_of
        from pillbox.search.terms import meaningful
        from pillbox.search.typos import worded

        original_pass, original_meaningful = semantic_pass, meaningful

        def recording_pass(target, model, query_vector, compound, lexical, floor):  # type: ignore[no-untyped-def]
            found, spread = original_pass(target, model, query_vector, compound, lexical, -1.0)
            vectors = vectors_of(target, model.key, query_vector.shape[0])
            similarity = vectors.matrix @ query_vector if len(vectors.seqs) else np.zeros(1)
            top = np.sort(similarity)[::-1]
            self.current.update(
                lexical=[(c.seq, c.coverage, c.closeness, c.similarity) for c in lexical],
                meaning=[(c.seq, c.similarity) for c in found],
                spread={"max": float(top[0]), "second": float(top[1]) if len(top) > 1 else 0.0,
                        "p90": float(np.quantile(similarity, 0.9)), "mean": float(similarity.mean()),
                        "std": float(similarity.std()), "tenth": float(top[min(9, len(top) - 1)])})
            kept = [c for c in found if c.similarity >= floor]
            self.joined = kept  # the engine's ranking fills in the words these rows hold (scoring.rank)
            return kept, spread

        def recording_meaningful(terms):  # type: ignore[no-untyped-def]
            kept = original_meaningful(terms)[:engine.MAX_TERMS]
            self.current.update(terms=len(kept), worded=worded(kept), words=kept)
            return kept

        setattr(engine, "semantic_pass", recording_pass)  # noqa: B010 (the engine's own name, patched)
        setattr(engine, "meaningful", recording_meaningful)  # noqa: B010

    def ask(self, project: Any, query: str) -> dict[str, Any]:
        from pills_quality import embeddings

        embeddings(False)
        words_text = project.search({"query": query, "limit": 20})
        self.current = {"lexical": [], "meaning": [], "spread": {}, "terms": 0, "worded": False}
        self.joined = []
        embeddings(True)
        text = project.search({"query": query, "limit": 20})
        # Rows found by meaning past the words' candidates still hold some of the words: their coverage.
        held = {c.seq: c.coverage for c in self.joined if c.coverage}
        return {**self.current, "meaning_words": held, "text": text, "words_text": words_text}


def seq_ids(project: Any) -> dict[int, str]:
    from pills_quality import connections_of

    from pillbox import ids
    from pillbox.search.results import as_uuid

    with connections_of(project.alias()) as cursor:
        cursor.execute("SELECT seq, id FROM pillbox_pill")
        return {seq: ids.short(as_uuid(id_hex)) for seq, id_hex in cursor.fetchall()}


def capture_corpus(recorder: Recorder, root: Path, name: str, items: list[dict[str, Any]],
                   queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from pills_quality import Project, embeddings, store_public

    from pillbox.embeddings import backfill

    project = Project(root, name)
    mapping_file = root / f"{name}.ids.json"
    if project.reused and mapping_file.exists():
        mapping = json.loads(mapping_file.read_text())
    else:
        embeddings(False)
        mapping = store_public(project, items)
        embeddings(True)
        backfill.backfill(project.alias(), "pill")
        mapping_file.write_text(json.dumps(mapping))
    by_seq = {seq: mapping.get(short, "?") for seq, short in seq_ids(project).items()}
    out = []
    for q in queries:
        record = recorder.ask(project, q["q"])
        out.append({**q, **record, "corpus": name.split("-")[0], "ids": by_seq})
    return out


def locomo_corpora() -> list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]]:
    import locomo

    out = []
    for path in sorted(locomo.LOCOMO.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        conversation = data.get("conversation", data)
        for title in ("speaker-date", "text"):
            items = []
            for _session, date, turn in locomo.turns(conversation):
                content = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    content += f" [shares a photo: {turn['blip_caption']}]"
                items.append({"id": turn["dia_id"], "title": locomo.TITLES[title](turn, date), "content": content,
                              "compound": "dialogue"})
            queries = [{"key": f"{path.stem}-{at}", "q": qa["question"], "kind": locomo.CATEGORIES[qa["category"]],
                        "evidence": locomo.evidence_of(qa)}
                       for at, qa in enumerate(data["qa"]) if qa.get("category") in locomo.CATEGORIES
                       and locomo.evidence_of(qa)]
            out.append((f"locomo{'' if title == 'speaker-date' else 't'}-{path.stem}", items, queries))
    return out


def shaped(corpus: corpora.Corpus) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    queries = [{"key": q.key, "q": q.q, "kind": q.kind, "evidence": list(q.evidence)} for q in corpus.queries]
    queries += [{"key": q.key, "q": q.q, "kind": q.kind, "evidence": []} for q in corpus.absent]
    return corpus.items, queries


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--keep", type=Path, help="keep the bottles here and reuse them")
    ap.add_argument("--only", help="comma-separated corpus name prefixes")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fusion-") as scratch:
        root = a.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        setup_django(root / "home")
        import young

        recorder = Recorder()
        recorder.install()
        sets = []
        if (DATA / "pills_recall_s1.json").exists():
            sets.append(("recall", *shaped(corpora.load(DATA / "pills_recall_s1.json"))))
        sets.append(("conversations", *shaped(corpora.load(corpora.CONVERSATIONS))))
        sets.append(("young", *young.corpus()))
        sets += locomo_corpora()
        if a.only:
            sets = [s for s in sets if s[0].startswith(tuple(a.only.split(",")))]
        records = []
        for name, items, queries in sets:
            records += capture_corpus(recorder, root / "projects", name, items, queries)
            print(f"{name}: {len(queries)} queries", file=sys.stderr)
    a.out.write_bytes(pickle.dumps(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
