"""Full-text search over pills and capsules: SQLite FTS5, bm25, and a Jaro-Winkler typo pass.

The query is folded the way the FTS5 tokenizer folds text (lowercase, accents removed, split on anything
that is not a letter or digit) so that terms can be checked against the index's own vocabulary. Every
term becomes a quoted prefix term joined with OR, so nothing an agent types is ever FTS syntax.

Typos: when the strict pass finds nothing (and the query has at least 5 characters), or at once with
``fuzzy``, each term of 4+ characters is expanded to indexed words within Jaro-Winkler 0.80 (length within
2). Beyond the seed, a term that matches no indexed word at all is expanded even when other terms matched,
so one misspelled word is not silently dropped.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import connections
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler

MIN_FUZZY_QUERY = 5
MIN_FUZZY_TERM = 4
MAX_LEN_DIFF = 2
JW_THRESHOLD = 0.80
MAX_EXPANSIONS = 24
SNIPPET_TOKENS = 24
# bm25 column weights (title, content, compound); see bench/pills_search.py for how they were chosen.
WEIGHTS = (4.0, 1.0, 2.0)
WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char)).lower()


def extract_terms(query: str) -> list[str]:
    """Lowercased, accent-free, deduplicated terms in the order typed."""
    seen: dict[str, None] = {}
    for term in WORD.findall(fold(query)):
        seen.setdefault(term, None)
    return list(seen)


def match_expression(terms: Iterable[str], expansions: Iterable[str] = ()) -> str:
    parts = [f'"{term}"*' for term in terms] + [f'"{word}"' for word in expansions]
    return " OR ".join(parts)


@dataclass
class Vocabulary:
    words: list[str]  # sorted
    by_length: dict[int, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, words: list[str]) -> Vocabulary:
        words.sort()
        by_length: dict[int, list[str]] = {}
        for word in words:
            by_length.setdefault(len(word), []).append(word)
        return cls(words=words, by_length=by_length)

    def has_prefix(self, term: str) -> bool:
        at = bisect.bisect_left(self.words, term)
        return at < len(self.words) and self.words[at].startswith(term)

    def near(self, term: str) -> list[str]:
        """Indexed words within Jaro-Winkler 0.80 of ``term`` and at most 2 characters longer or shorter."""
        candidates: list[str] = []
        for length in range(max(1, len(term) - MAX_LEN_DIFF), len(term) + MAX_LEN_DIFF + 1):
            candidates.extend(self.by_length.get(length, ()))
        found = process.extract(
            term, candidates, scorer=JaroWinkler.similarity, score_cutoff=JW_THRESHOLD, limit=MAX_EXPANSIONS + 1
        )
        return [word for word, _, _ in found if word != term][:MAX_EXPANSIONS]


_vocabularies: dict[tuple[str, str], tuple[tuple[int, int], Vocabulary]] = {}


def vocabulary(alias: str, fts_table: str) -> Vocabulary:
    """The index's words, cached until this or another connection changes the database."""
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA data_version")
        version = (cursor.fetchone()[0], connection.connection.total_changes)
        cached = _vocabularies.get((alias, fts_table))
        if cached is not None and cached[0] == version:
            return cached[1]
        cursor.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{fts_table}_vocab USING fts5vocab(main, {fts_table}, row)"
        )
        cursor.execute(f"SELECT term FROM temp.{fts_table}_vocab")
        words = Vocabulary.of([row[0] for row in cursor.fetchall()])
    _vocabularies[(alias, fts_table)] = (version, words)
    return words


@dataclass(frozen=True)
class Target:
    """One database to search, and the rows of it the caller may see."""

    alias: str
    kind: str  # "pill" or "capsule"
    bottles: frozenset[uuid.UUID] = frozenset()
    owner_id: int | None = None

    @property
    def fts(self) -> str:
        return f"pillbox_{self.kind}_fts"

    @property
    def table(self) -> str:
        return f"pillbox_{self.kind}"

    def scope_sql(self) -> tuple[str, str, list[object]]:
        """Extra joins, conditions and parameters that keep to the caller's rows of table alias ``m``."""
        if self.kind == "pill":
            marks = ", ".join(["%s"] * len(self.bottles))
            return (
                "JOIN pillbox_prescription r ON r.id = m.prescription_id",
                f"m.deleted_at IS NULL AND r.deleted_at IS NULL AND r.bottle_id IN ({marks})",
                [bottle.hex for bottle in sorted(self.bottles)],
            )
        return "", "m.deleted_at IS NULL AND m.owner_id = %s", [self.owner_id]

    @property
    def bottle_column(self) -> str:
        return "r.bottle_id" if self.kind == "pill" else "NULL"


@dataclass(frozen=True)
class Hit:
    id: uuid.UUID
    seq: int
    compound: str
    title: str
    snippet: str
    bottle_id: uuid.UUID | None
    score: float  # 1.0 for the best hit of its database, lower is worse


@dataclass(frozen=True)
class Found:
    hits: list[Hit]
    total: int
    used_fuzzy: bool


def _hit(row: tuple, best: float | None) -> Hit:
    id_hex, seq, compound, title, snippet, bottle_hex, score = row
    normalised = score / best if best and score is not None else 1.0
    return Hit(
        id=uuid.UUID(id_hex), seq=seq, compound=compound, title=title, snippet=" ".join(snippet.split()),
        bottle_id=uuid.UUID(bottle_hex) if bottle_hex else None, score=normalised,
    )


def _matching(target: Target, expression: str, compound: str | None, limit: int) -> tuple[list[Hit], int]:
    joins, where, params = target.scope_sql()
    if compound is not None:
        where += " AND m.compound = %s"
        params = [*params, compound]
    weights = ", ".join(str(w) for w in WEIGHTS)
    body = (
        f"FROM {target.fts} JOIN {target.table} m ON m.seq = {target.fts}.rowid {joins} "
        f"WHERE {target.fts} MATCH %s AND {where}"
    )
    with connections[target.alias].cursor() as cursor:
        cursor.execute(
            f"SELECT m.id, m.seq, m.compound, m.title, snippet({target.fts}, 1, '', '', '…', {SNIPPET_TOKENS}), "
            f"{target.bottle_column}, bm25({target.fts}, {weights}) AS score {body} ORDER BY score, m.seq DESC LIMIT %s",
            [expression, *params, limit],
        )
        rows = cursor.fetchall()
        total = len(rows)
        if total >= limit:
            cursor.execute(f"SELECT COUNT(*) {body}", [expression, *params])
            total = cursor.fetchone()[0]
    best = rows[0][-1] if rows else None
    return [_hit(row, best) for row in rows], total


def _listing(target: Target, compound: str, limit: int) -> tuple[list[Hit], int]:
    joins, where, params = target.scope_sql()
    body = f"FROM {target.table} m {joins} WHERE {where} AND m.compound = %s"
    with connections[target.alias].cursor() as cursor:
        cursor.execute(
            f"SELECT m.id, m.seq, m.compound, m.title, substr(m.content, 1, 200), {target.bottle_column}, NULL "
            f"{body} ORDER BY m.seq DESC LIMIT %s",
            [*params, compound, limit],
        )
        rows = cursor.fetchall()
        cursor.execute(f"SELECT COUNT(*) {body}", [*params, compound])
        total = cursor.fetchone()[0]
    return [_hit(row, None) for row in rows], total


def _merge(results: list[list[Hit]], limit: int, *, by_score: bool) -> list[Hit]:
    """Merge per-database results: by normalised score (bm25 is not comparable across files), then newest."""
    ranked = [(position, hit) for position, hits in enumerate(results) for hit in hits]
    if by_score:
        ranked.sort(key=lambda item: (-item[1].score, item[0], -item[1].seq))
    else:
        ranked.sort(key=lambda item: (-item[1].seq, item[0]))
    return [hit for _, hit in ranked[:limit]]


def search(targets: list[Target], *, query: str | None, compound: str | None, limit: int, fuzzy: bool) -> Found:
    """Search every target; ``query`` or ``compound`` (or both) must be given."""
    targets = [target for target in targets if target.kind == "capsule" or target.bottles]
    if not query:
        assert compound is not None
        listed = [_listing(target, compound, limit) for target in targets]
        return Found(_merge([hits for hits, _ in listed], limit, by_score=False),
                     sum(total for _, total in listed), used_fuzzy=False)
    terms = extract_terms(query)
    if not terms or not targets:
        return Found([], 0, used_fuzzy=False)

    strict = [_matching(target, match_expression(terms), compound, limit) for target in targets]
    strict_total = sum(total for _, total in strict)
    expand_all = fuzzy or (strict_total == 0 and len(query) >= MIN_FUZZY_QUERY)
    final = []
    widened = False
    for target, strict_result in zip(targets, strict, strict=True):
        words = vocabulary(target.alias, target.fts)
        typos = [t for t in terms if len(t) >= MIN_FUZZY_TERM and (expand_all or not words.has_prefix(t))]
        extra = sorted({word for term in typos for word in words.near(term)} - set(terms))
        if extra:
            widened = True
            final.append(_matching(target, match_expression(terms, extra), compound, limit))
        else:
            final.append(strict_result)

    hits = _merge([h for h, _ in final], limit, by_score=True)
    total = sum(t for _, t in final)
    used_fuzzy = widened and bool(hits) and (
        total != strict_total or [h.id for h in hits] != [h.id for h in _merge([h for h, _ in strict], limit, by_score=True)]
    )
    return Found(hits, total, used_fuzzy=used_fuzzy)
