"""The words a search checks its terms against: a scope's vocabulary (``Vocabulary``), read and cached per scope
(``vocabulary``), and the typo expansions of the terms taken from it (``widened``)."""

from __future__ import annotations

import bisect
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connections
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler

from base.lru import BoundedLru
from pillbox.databases import change_marker
from pillbox.search.budget import Budget
from pillbox.search.targets import Target
from pillbox.search.typos import MAX_LEN_DIFF, TYPO_PREFIX, TypoIndex, language_words, plausible
from pillbox.tokens import TAG_LENGTH, WORD, fold

MIN_FUZZY_TERM = 4
TYPO_SHARED_START = 2
JW_THRESHOLD = 0.80
MAX_EXPANSIONS = 5  # most similar indexed words per term (more only add noise: bench b 0.988 at 5, 0.958 at 24)


@dataclass
class Vocabulary:
    words: list[str]  # sorted
    # The index's own terms (FTS5's vocabulary of a file the caller sees whole): a prefix term matches exactly
    # the rows holding one of the words it begins.
    exact: bool = False
    _typos: TypoIndex | None = None
    # PostgreSQL: the scope's rows and their mean length in words (bm25's statistics, read with the version).
    rows: int = 0
    mean_length: float = 0.0

    @classmethod
    def of(cls, words: list[str], *, exact: bool = False) -> Vocabulary:
        words.sort()
        return cls(words=words, exact=exact)

    def has_prefix(self, term: str) -> bool:
        at = bisect.bisect_left(self.words, term)
        return at < len(self.words) and self.words[at].startswith(term)

    def with_prefix(self, term: str, most: int) -> list[str] | None:
        """The words beginning with ``term``, or None when there are more than ``most``."""
        at = bisect.bisect_left(self.words, term)
        end = bisect.bisect_left(self.words, term + "\U0010ffff", at, min(at + most + 1, len(self.words)))
        if end == at + most + 1 or (end < len(self.words) and self.words[end].startswith(term)):
            return None
        return self.words[at:end]

    def near(self, term: str) -> list[str]:
        """Indexed words within Jaro-Winkler 0.80 of ``term`` and at most 2 characters longer or shorter, among
        those its typo index files beside it."""
        if self._typos is None:
            # Built on the first typo: most vocabularies serve strict searches only.
            self._typos = TypoIndex(self.words)
        # Jaro-Winkler favours a shared start: the words beginning as the term does are candidates too.
        start = term[:TYPO_SHARED_START]
        shared = self.words[bisect.bisect_left(self.words, start):bisect.bisect_left(self.words, start + "\U0010ffff")]
        candidates = set(self._typos.candidates(term))
        candidates.update(word for word in shared if abs(len(word) - len(term)) <= MAX_LEN_DIFF)
        # Ties keep the order of a scan by length, then alphabetically.
        ordered = sorted(candidates, key=lambda word: (len(word), word))
        found = process.extract(term, ordered, scorer=JaroWinkler.similarity, score_cutoff=JW_THRESHOLD,
                                limit=MAX_EXPANSIONS + 1)
        return [word for word, _, _ in found if word != term][:MAX_EXPANSIONS]


VOCABULARY_CACHE_ENTRIES = 256
VOCABULARY_CACHE_BYTES = 256 * 1024 * 1024
# Per-scope vocabularies, keyed by (alias, fts table) or (alias, kind, owner, bottles).
# One process serves many bottles and users: without a bound, every scope ever searched would keep its vocabulary
# (and vectors) in memory for the life of the server.
_vocabularies: BoundedLru[tuple[Any, ...], tuple[Any, Vocabulary]] = BoundedLru(
    max_items=VOCABULARY_CACHE_ENTRIES, max_bytes=VOCABULARY_CACHE_BYTES
)


def _vocabulary_bytes(words: Vocabulary) -> int:
    # Each word is a str object referenced from the sorted list, plus its typo index (built on the first typo:
    # counted from the start) of up to TYPO_PREFIX + 1 keys of 12 bytes.
    return sum(sys.getsizeof(word) + 8 + 12 * (min(len(word), TYPO_PREFIX) + 1) for word in words.words) + 64


def _index_vocabulary(alias: str, fts_table: str, *, scoped: bool) -> Vocabulary:
    """Every word of a SQLite FTS5 index (without its scope's tag, when ``scoped``), cached until this or
    another connection changes the database (``change_marker``)."""
    version = change_marker(alias)
    cached = _vocabularies.get((alias, fts_table))
    if cached is not None and cached[0] == version:
        return cached[1]
    with connections[alias].cursor() as cursor:
        cursor.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{fts_table}_vocab USING fts5vocab(main, {fts_table}, row)"
        )
        if scoped:  # the words without their scope's tag (pillbox.tokens)
            cursor.execute(f"SELECT DISTINCT substr(term, {TAG_LENGTH + 1}) FROM temp.{fts_table}_vocab")
        else:
            cursor.execute(f"SELECT term FROM temp.{fts_table}_vocab")
        words = Vocabulary.of([row[0] for row in cursor.fetchall()], exact=True)
    _vocabularies.put((alias, fts_table), (version, words), _vocabulary_bytes(words))
    return words


def _scoped_vocabulary(target: Target) -> Vocabulary:
    """The words of the caller's own rows only: in a database shared with others, their words must not decide
    whether the caller's word counts as a typo (nor what it is corrected to). Cached per scope until the
    caller's rows change (their count, newest row or latest edit)."""
    joins, where, params = target.scope_sql()
    body = f"FROM {target.table} m {joins} WHERE {where}"
    key = (target.alias, target.kind, target.owner_id, target.bottles)
    # On PostgreSQL the same statement reads the rows' mean length, which the ranking needs (lexical.PgStats).
    length = ", COALESCE(AVG(m.search_length), 0)" if target.on_postgres else ""
    with connections[target.alias].cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*), MAX(m.seq), MAX(m.updated_at){length} {body}", params)
        version = tuple(cursor.fetchone())
        cached = _vocabularies.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        cursor.execute(f"SELECT m.title, m.content, m.compound {body}", params)
        seen: set[str] = set()
        for row in cursor.fetchall():
            seen.update(WORD.findall(fold(" ".join(row))))
    words = Vocabulary.of(list(seen))
    if target.on_postgres:
        words.rows, words.mean_length = int(version[0]), float(version[3])
    _vocabularies.put(key, (version, words), _vocabulary_bytes(words))
    return words


def vocabulary(target: Target) -> Vocabulary:
    if not target.on_postgres and target.everything_reachable:
        return _index_vocabulary(target.alias, target.fts, scoped=target.scoped_index)
    return _scoped_vocabulary(target)


def _expansions(words: Vocabulary, terms: list[str], expand_all: bool,
                known: Callable[[str], bool]) -> dict[str, list[str]]:
    """Typo expansions: every term of 4+ characters with ``expand_all``, else only those that no searched
    database knows (``known`` looks across all of them: a word one bottle lacks is not a typo when another
    bottle has it). Only plausible() corrections, and none when most of the query's terms are neither known
    nor correctable: 'xyzzy plugh' is not a typo of 'plug'. A word of the language (``language_words``) is
    corrected only beside a term the memory knows as typed ('mach actual date', not 'bake a cake'), and never
    to a word it begins or that begins it ('user' is not a typo of 'use', nor 'stored' of 'store')."""
    typed = set(terms)
    out = {}
    anchored = any(known(term) for term in terms)
    language = language_words()
    for term in terms:
        if len(term) >= MIN_FUZZY_TERM and (expand_all or not known(term)) and (anchored or term not in language):
            near = [word for word in words.near(term) if word not in typed and plausible(term, word)
                    and not (term in language and (word.startswith(term) or term.startswith(word)))]
            if near:
                out[term] = near
    understood = sum(1 for term in terms if term in out or known(term))
    return out if 2 * understood > len(terms) else {}


def widened(budget: Budget, words: Vocabulary, terms: list[str], expand_all: bool,
             known: Callable[[str], bool]) -> dict[str, list[str]]:
    """``_expansions``, whose first typo in a vocabulary builds its typo index: that once, out of the budget."""
    since, building = time.monotonic(), words._typos is None
    expansions = _expansions(words, terms, expand_all, known)
    if building and words._typos is not None:
        budget.excuse(since)
    return expansions
