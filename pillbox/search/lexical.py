"""The pass by words over one database: the caller's rows matching the terms, found and ranked by FTS5's bm25
(or PostgreSQL's full text), the best of them kept as candidates with their coverage.

Ranking: FTS5 MATCH ranked by bm25 (column weights below) picks the best ``CANDIDATES`` rows (among the rows
matching every term first when more than ``RANK_ALL_UP_TO`` match some: see ``lexical_pass``); those are
re-ranked by coverage first (how many distinct query terms the row matches; a term matched only through a
typo expansion counts ``FUZZY_COVERAGE``), then by bm25, then newest first. With OR-joined terms, bm25
alone lets one rare word outweigh a row that has every word typed; coverage puts the rows that match
the whole query first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connections
from django.db.backends.utils import CursorWrapper

from base.lru import BoundedLru
from pillbox.databases import change_marker
from pillbox.search.budget import Budget
from pillbox.search.coverage import Coverage
from pillbox.search.spans import key_range
from pillbox.search.targets import Target, marks
from pillbox.search.terms import match_expression
from pillbox.search.vocabulary import Vocabulary

if TYPE_CHECKING:
    from pillbox.search.targets import SqlParam

RANK_ALL_UP_TO = 2000  # rows matching some term that bm25 ranks all of (see lexical_pass)
SPELLED_OUT = 32  # the most indexed words a prefix term is counted through (see _count)
# bm25 column weights (title, content, compound): with the coverage re-rank, 3-4x on the title ranks best
# (bench MRR@10 0.989 at 3,1,1; 0.981 at 1,1,1) without costing content-only queries (kind e 0.969 either way).
WEIGHTS = (3.0, 1.0, 1.0)
# A project file's superseded pills, left out of its index-only statements by value (``superseded_keys``); past
# this many, by a subquery.
SUPERSEDED_INLINE = 5000
SUPERSEDED_CACHE_ENTRIES = 64
SUPERSEDED_CACHE_BYTES = 16 * 1024 * 1024
CANDIDATES = 60  # rows ranked by bm25 that the coverage re-rank looks at (the bench is flat from 60 up)


def _tsquery(terms: Iterable[str], expansions: Iterable[str] = (), *,
             every: dict[str, list[str]] | None = None) -> str:
    """PostgreSQL's form of the OR query (or, with ``every``, of the query for every term): typed terms as
    prefixes, expansions as words (terms are letters and digits only, so nothing here is syntax an agent
    typed)."""
    if every is not None:
        return " & ".join("(" + _tsquery([term], every.get(term, ())) + ")" for term in terms)
    return " | ".join([f"{term}:*" for term in terms] + list(expansions))


# ts_rank_cd's weights are {D, C, B, A}: content is D, compound B, title A, in the proportions of WEIGHTS. For a
# query of one phrase, ts_rank_cd is the sum of the weights of the phrase's occurrences in the row: the
# phrase's weighted frequency, in units of the title's weight.
PG_WEIGHTS = f"{{{round(WEIGHTS[1] / WEIGHTS[0], 3)}, 0, {round(WEIGHTS[2] / WEIGHTS[0], 3)}, 1.0}}"
# FTS5's bm25 constants (its defaults), so that both backends rank alike.
BM25_K1 = 1.2
BM25_B = 0.75
MIN_IDF = 1e-6


@dataclass(frozen=True)
class PgStats:
    """What bm25 needs on PostgreSQL, counted in the caller's scope: rows, their mean length in words, and how
    many rows hold each phrase (a typed term as a prefix, then each expansion word)."""

    rows: int
    mean_length: float
    holding: tuple[int, ...]

    def idf(self, at: int) -> float:
        return max(math.log((self.rows - self.holding[at] + 0.5) / (self.holding[at] + 0.5)), MIN_IDF)


def _phrases(terms: Iterable[str], expansions: Iterable[str]) -> list[str]:
    """The OR query's phrases in PostgreSQL's syntax: typed terms as prefixes, expansions as words."""
    return [f"{term}:*" for term in terms] + list(expansions)


def _pg_bm25(phrases: list[str], stats: PgStats) -> tuple[str, str, list[SqlParam]]:
    """FTS5's bm25 (lower is better) over the rows of a query, on PostgreSQL: a lateral join computing each
    phrase's weighted frequency in the row once, its parameters, and the expression over them (for each phrase
    its rarity in the scope times its saturated, length-normalised frequency)."""
    columns = ", ".join(f"{WEIGHTS[0]} * ts_rank_cd('{PG_WEIGHTS}', m.search_vector, to_tsquery('simple', %s)) "
                        f"AS f{at}" for at in range(len(phrases)))
    norm = f"{BM25_K1} * ({1 - BM25_B} + {BM25_B} * m.search_length / {max(stats.mean_length, 1.0)!r})"
    parts = [f"{stats.idf(at)!r} * fr.f{at} * {BM25_K1 + 1} / (fr.f{at} + {norm})" for at in range(len(phrases))]
    return f"CROSS JOIN LATERAL (SELECT {columns}) fr", "-(" + " + ".join(parts) + ")", list(phrases)


def pg_stats(cursor: CursorWrapper, target: Target, phrases: list[str], compound: str | None,
             vocabulary: Vocabulary) -> tuple[PgStats, int]:
    """The scope's bm25 statistics (its rows and mean length come with its vocabulary) and how many rows match
    any phrase and each one, in one statement by the full-text index."""
    joins, where, params = target.shown_sql()
    rows, mean = vocabulary.rows, vocabulary.mean_length
    if compound is not None:
        where += " AND m.compound = %s"
        params = [*params, compound]
    counts = ", ".join("COUNT(*) FILTER (WHERE m.search_vector @@ to_tsquery('simple', %s))" for _ in phrases)
    cursor.execute(f"SELECT COUNT(*), {counts} FROM {target.table} m {joins} "
                   f"WHERE m.search_vector @@ to_tsquery('simple', %s) AND {where}",
                   [*phrases, " | ".join(phrases), *params])
    total, *holding = cursor.fetchone()
    return PgStats(int(rows), float(mean), tuple(int(n) for n in holding)), int(total)


def _from(target: Target, terms: list[str], words: list[str], compound: str | None, *,
          every: dict[str, list[str]] | None = None, stats: PgStats | None = None,
          ) -> tuple[str, list[SqlParam], str, str]:
    """FROM and WHERE of the caller's rows matching the terms (or their expansions; with ``every``, all the
    terms), their parameters, the row key column, and a relevance expression where lower is better."""
    joins, where, params = target.shown_sql()
    if compound is not None:
        where += " AND m.compound = %s"
        params = [*params, compound]
    if target.on_postgres:
        # Counting needs no relevance; ranking joins each phrase's frequency in the row (_pg_bm25).
        lateral, relevance, frequency_params = _pg_bm25(_phrases(terms, words), stats) if stats else ("", "0", [])
        body = (f"FROM {target.table} m {joins} CROSS JOIN to_tsquery('simple', pillbox_fold(%s)) q {lateral} "
                f"WHERE m.search_vector @@ q AND {where}")
        return body, [_tsquery(terms, words, every=every), *frequency_params, *params], "m.seq", relevance
    fts = target.fts
    # The caller's own words only (tagged with their scopes in the global database): others' rows are never
    # read, ranked nor joined.
    expression = match_expression(terms, words, every=every, tags=target.tags)
    # A project file's index still has migration 0006's empty scope column, which weighs nothing.
    weights = WEIGHTS if target.scoped_index else (*WEIGHTS, 0)
    score = f"bm25({fts}, {', '.join(str(w) for w in weights)})"
    if compound is None and target.everything_reachable:
        # Only the index: no join per matching row, and the count is the index's own. The superseded rows are
        # few, read once by their index; a time window is the range of keys its rows are (``spans``), when they
        # are one.
        gone = () if target.include_superseded else superseded_keys(target)
        hidden = "" if not gone else f" AND {fts}.rowid NOT IN ({marks(len(gone))})" \
            if len(gone) <= SUPERSEDED_INLINE else \
            f" AND {fts}.rowid NOT IN (SELECT seq FROM {target.table} WHERE superseded_by_id IS NOT NULL)"
        if len(gone) > SUPERSEDED_INLINE:
            gone = ()
        if target.window is None:
            return f"FROM {fts} WHERE {fts} MATCH %s{hidden}", [expression, *gone], f"{fts}.rowid", score
        if (keys := key_range(target)) is not None:
            return (f"FROM {fts} WHERE {fts} MATCH %s AND {fts}.rowid BETWEEN %s AND %s{hidden}",
                    [expression, *keys, *gone], f"{fts}.rowid", score)
    # CROSS JOIN keeps the index as the outer loop: SQLite would otherwise walk the caller's rows by their
    # owner or prescription index and run the MATCH once per row (seconds at 100,000 rows, for a count).
    body = f"FROM {fts} CROSS JOIN {target.table} m ON m.seq = {fts}.rowid {joins} WHERE {fts} MATCH %s AND {where}"
    return body, [expression, *params], "m.seq", score


_superseded: BoundedLru[str, tuple[tuple[object, ...], tuple[int, ...]]] = BoundedLru(
    max_items=SUPERSEDED_CACHE_ENTRIES, max_bytes=SUPERSEDED_CACHE_BYTES)


def superseded_keys(target: Target) -> tuple[int, ...]:
    """The keys of a project file's superseded pills, read once per change of the file: a search's statement
    leaves them out by value (a subquery there would scan the pill table at every statement, 2 ms at 20,000)."""
    marker = change_marker(target.alias)
    kept = _superseded.get(target.alias)
    if kept is not None and marker is not None and kept[0] == marker:
        return kept[1]
    with connections[target.alias].cursor() as cursor:
        cursor.execute(f"SELECT seq FROM {target.table} WHERE superseded_by_id IS NOT NULL ORDER BY seq")
        keys = tuple(int(row[0]) for row in cursor.fetchall())
    if marker is not None:
        _superseded.put(target.alias, (marker, keys), 8 * len(keys) + 64)
    return keys


def any_match(target: Target, terms: list[str], compound: str | None, vocabulary: Vocabulary) -> bool:
    """Whether the strict pass (the typed terms alone) finds anything in this database."""
    prefixes, spelled = _spelled_out(terms, vocabulary)
    if not prefixes and not spelled:
        return False
    with connections[target.alias].cursor() as cursor:
        body, params, _, _ = _from(target, prefixes, spelled, compound)
        cursor.execute(f"SELECT 1 {body} LIMIT 1", params)
        return cursor.fetchone() is not None


@dataclass
class Candidate:
    seq: int
    coverage: float  # query terms matched (0 for a row found by meaning alone)
    closeness: float  # bm25 normalised within its database to (0, 1]; 0 when not found by words
    expanded: bool
    similarity: float = 0.0  # cosine with the query; 0 without vectors


def lexical_pass(target: Target, terms: list[str], expansions: dict[str, list[str]], compound: str | None,
                 limit: int, vocabulary: Vocabulary, budget: Budget | None = None,
                 ) -> tuple[list[Candidate], int, dict[int, tuple[Any, ...]]]:
    """The strict (or, with expansions, widened) pass over one database: candidates with their coverage.

    When many rows match some term, the rows matching every term (which rank first: coverage) are looked at
    first, and when they fill the page they are the candidates: bm25 is then computed over them, not over
    every row matching any term (a few hundred against tens of thousands at a million pills). Otherwise the
    candidates are the best ``CANDIDATES`` rows by bm25 among all matches. Once the ``budget`` has run out, the
    candidates not yet covered are left out (they are the ones bm25 ranks lowest; the best is always kept).
    """
    words = sorted({word for found in expansions.values() for word in found})
    wanted = max(CANDIDATES, limit)
    with connections[target.alias].cursor() as cursor:
        stats = None
        if target.on_postgres:
            stats, total = pg_stats(cursor, target, _phrases(terms, words), compound, vocabulary)
        else:
            total = _count(cursor, target, terms, words, compound, vocabulary)
        candidates: list[tuple[int, float]] = []
        if total > RANK_ALL_UP_TO and len(terms) > 1:
            body, params, key, relevance = _from(target, terms, words, compound, every=expansions, stats=stats)
            candidates = _ranked(cursor, key, relevance, body, params, wanted)
        if total and len(candidates) < limit:
            body, params, key, relevance = _from(target, terms, words, compound, stats=stats)
            candidates = _ranked(cursor, key, relevance, body, params, wanted)
    if not candidates:
        return [], total, {}
    rows = fetch_rows(target, [seq for seq, _ in candidates])
    coverage = Coverage(terms, expansions)
    best = candidates[0][1] or -1.0
    out: list[Candidate] = []
    for seq, bm25 in candidates:
        row = rows.get(seq)
        if row is None:  # cannot happen: the index holds live rows only
            continue
        if out and budget is not None and budget.spent():
            break
        covered, expanded = coverage.of(f"{row[3]}\n{row[4]}\n{row[2]}")
        closeness = min(max(bm25 / best, 0.0), 1.0) if bm25 is not None else 1.0
        out.append(Candidate(seq, covered, closeness, expanded))
    return out, total, rows


def _ranked(cursor: CursorWrapper, key: str, relevance: str, body: str, params: list[SqlParam],
            wanted: int) -> list[tuple[int, float]]:
    """The best ``wanted`` rows by relevance, ties broken by the newest (the same order on both backends)."""
    cursor.execute(f"SELECT {key}, {relevance} AS score {body} ORDER BY score, {key} DESC LIMIT %s",
                   [*params, wanted])
    return [(int(seq), float(score)) for seq, score in cursor.fetchall()]


def _count(cursor: CursorWrapper, target: Target, terms: list[str], words: list[str], compound: str | None,
           vocabulary: Vocabulary) -> int:
    """How many rows match any term (or expansion)."""
    prefixes, spelled = _spelled_out(terms, vocabulary)
    if not prefixes and not spelled and not words:
        return 0
    body, params, _, _ = _from(target, prefixes, sorted({*spelled, *words}), compound)
    cursor.execute(f"SELECT COUNT(*) {body}", params)
    return int(cursor.fetchone()[0])


def _spelled_out(terms: list[str], vocabulary: Vocabulary) -> tuple[list[str], list[str]]:
    """The prefix terms to keep, and the indexed words standing for the others: a prefix term is spelled out as
    the words it covers when they are few. The same rows, read from those words' own lists instead of a merge
    of every list under the prefix (what makes FTS5's prefix queries grow with the index); not for ranking,
    where bm25 would weigh each word apart."""
    prefixes: list[str] = []
    spelled: list[str] = []
    for term in terms:
        covered = vocabulary.with_prefix(term, SPELLED_OUT) if vocabulary.exact else None
        if covered is None:
            prefixes.append(term)
        else:
            spelled.extend(covered)
    return prefixes, spelled


def fetch_rows(target: Target, seqs: list[int]) -> dict[int, tuple[Any, ...]]:
    if not seqs:
        return {}
    joins = "JOIN pillbox_prescription r ON r.id = m.prescription_id" if target.kind == "pill" else ""
    with connections[target.alias].cursor() as cursor:
        cursor.execute(
            f"SELECT m.seq, m.id, m.compound, m.title, m.content, {target.bottle_column} FROM {target.table} m "
            f"{joins} WHERE m.seq IN ({marks(len(seqs))})",
            seqs,
        )
        return {row[0]: row for row in cursor.fetchall()}
