"""Ranking the candidates: words and meaning fused into one score per row (``scored``), the databases' rows
merged into one answer (``merge``), and the relevance cliff (``cliff``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from pillbox.search import snippets
from pillbox.search.budget import Budget
from pillbox.search.coverage import Coverage
from pillbox.search.lexical import Candidate, fetch_rows
from pillbox.search.results import MEANING, Hit, as_uuid
from pillbox.search.targets import Target

# Fusion of words and meaning (see _fused), set with bench/pills_search.py on the recall set.
BM25_WEIGHT = 0.099
# In a look-up, rows found by meaning alone are ranked by their cosine below the words' rows (whose score is at
# least 0.9 / terms): without it they tied at 0, newest first, and a conversational look-up's answer sat 9th.
ALONE_AFTER_LOOKUP = 0.01
# The relevance cliff (see cliff()), at a limit up to CLIFF_LIMIT: after the first CLIFF_HEAD rows (so MRR@10
# never moves), rows scoring under a share of the best row's score are left out and counted. Measured on the
# public recall set and the conversational one, with and without meaning: beyond the 10th row, a right answer
# to a look-up (every term matched) scored at least 0.994 of the best, while rows matching fewer terms score
# 0.67 or less; for other queries a right answer was seen at 0.244 (conversational multi-hop), so their cliff
# stays low and rarely cuts.
CLIFF_HEAD = 10
CLIFF_LOOKUP = 0.7
CLIFF_OTHER = 0.15
CLIFF_LIMIT = 20
CURRENT_BOTTLE_BOOST = 0.05  # half the bm25 spread among rows matching as many terms: ahead only when comparable


@dataclass
class Ranked:
    hits: list[Hit]
    total: int
    expanded: set[uuid.UUID]  # the hits that contain an expansion word
    by_meaning: set[uuid.UUID] = field(default_factory=set)  # the hits no query word matched


def _fused(candidate: Candidate, terms: int, *, meaning: float | None) -> float:
    """The ranking score: words (coverage, then bm25), and meaning beside them with the weight ``meaning``.

    Without meaning this is the lexical order (coverage, then bm25: ``BM25_WEIGHT`` keeps bm25 below the gap
    between a typed and a corrected term). With it, the words' part is scaled to the share of the query's
    terms matched, and the cosine similarity is added with the weight chosen for the query (see search()).
    """
    words = candidate.coverage + BM25_WEIGHT * candidate.closeness
    if meaning is None:
        return words
    if not meaning and not candidate.coverage:
        # A look-up: rows found by meaning alone come after every row of the words, the closest first.
        return ALONE_AFTER_LOOKUP * candidate.similarity
    return words / max(terms, 1) + meaning * candidate.similarity


def rank(target: Target, candidates: list[Candidate], rows: dict[int, tuple[Any, ...]], coverage: Coverage,
         terms: int, limit: int, *, meaning: float | None, boosted: frozenset[uuid.UUID],
         budget: Budget | None = None) -> Ranked:
    missing = [c.seq for c in candidates if c.seq not in rows]
    if missing:
        rows = {**rows, **fetch_rows(target, missing)}
    scored = []
    bottles: dict[object, uuid.UUID | None] = {}  # the candidates come from a few bottles: one UUID each
    for candidate in candidates:
        row = rows.get(candidate.seq)
        if row is None:
            continue
        if not candidate.coverage:
            # Found by meaning, but past the words' candidates (the best by bm25): the words it holds are matched
            # still, so it ranks by them as the words' pass would, and is counted once.
            candidate.coverage, candidate.expanded = coverage.of(f"{row[3]}\n{row[4]}\n{row[2]}")
        score = _fused(candidate, terms, meaning=meaning)
        if row[5] not in bottles:
            bottles[row[5]] = as_uuid(row[5]) if row[5] else None
        bottle = bottles[row[5]]
        if bottle is not None and bottle in boosted:
            score += CURRENT_BOTTLE_BOOST
        scored.append((score, candidate, row, bottle))
    scored.sort(key=lambda item: (-item[0], -item[1].seq))
    hits, expanded, by_meaning = [], set(), set()
    for score, candidate, row, bottle in scored[:limit]:
        _, id_hex, compound_, title, content, _ = row
        # Past the time budget, a row shows its beginning instead of the words around the query's terms.
        shown = snippets.head(content, snippets.LISTING_WIDTH) if budget is not None and budget.spent() \
            else " ".join(coverage.snippet(content).split())
        match, corrected = coverage.matched(f"{title}\n{content}\n{compound_}") if candidate.coverage else (MEANING, ())
        hit = Hit(id=as_uuid(id_hex), seq=candidate.seq, compound=compound_, title=title,
                  snippet=shown, bottle_id=bottle, score=score, match=match, corrected=corrected,
                  similarity=candidate.similarity)
        hits.append(hit)
        if candidate.expanded:
            expanded.add(hit.id)
        if candidate.coverage == 0:
            by_meaning.add(hit.id)
    return Ranked(hits, 0, expanded, by_meaning)


def merge(results: list[list[Hit]], limit: int, *, by_score: bool) -> list[Hit]:
    """Merge per-database results: by score (coverage, then normalised bm25), then newest."""
    ranked = [(position, hit) for position, hits in enumerate(results) for hit in hits]
    if by_score:
        ranked.sort(key=lambda item: (-item[1].score, item[0], -item[1].seq))
    else:
        ranked.sort(key=lambda item: (-item[1].seq, item[0]))
    return [hit for _, hit in ranked[:limit]]


def cliff(hits: list[Hit], share: float) -> int:
    """How many of the ranked hits to show: the first ``CLIFF_HEAD``, then those scoring at least ``share`` x
    the first's."""
    if len(hits) <= CLIFF_HEAD or hits[0].score <= 0:
        return len(hits)
    bar = share * hits[0].score
    return next((at for at in range(CLIFF_HEAD, len(hits)) if hits[at].score < bar), len(hits))
