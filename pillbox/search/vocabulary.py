"""The words a search checks its terms against: a scope's vocabulary (``Vocabulary``), read and cached per scope
(``vocabulary``), and the typo expansions of the terms taken from it (``widened``)."""

from __future__ import annotations

import bisect
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import connections
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler

from base.lru import BoundedLru
from pillbox.databases import change_marker
from pillbox.search import changes
from pillbox.search.budget import Budget
from pillbox.search.targets import Target, marks
from pillbox.search.typos import MAX_LEN_DIFF, TYPO_PREFIX, TypoIndex, language_words, plausible
from pillbox.tokens import TAG_LENGTH, WORD, fold

if TYPE_CHECKING:
    from pillbox.search.targets import SqlParam

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
    # How many rows hold each word, so that a write takes a word out once no row holds it (``update``).
    counts: dict[str, int] = field(default_factory=dict)
    at: changes.Position | None = None  # where in the change log this copy is
    marker: tuple[object, ...] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    # PostgreSQL: the scope's rows and their mean length in words (bm25's statistics), as of the log's ``stats_at``.
    rows: int = 0
    mean_length: float = 0.0
    stats_at: changes.Position | None = None

    @classmethod
    def of(cls, counts: dict[str, int], *, exact: bool = False) -> Vocabulary:
        return cls(words=sorted(counts), exact=exact, counts=counts)

    def update(self, came: list[set[str]], gone: list[set[str]]) -> None:
        """The words of rows now in the scope (``came``) and of rows as they were when last counted (``gone``)."""
        for row in came:
            for word in row:
                held = self.counts.get(word, 0)
                self.counts[word] = held + 1
                if not held:
                    bisect.insort(self.words, word)
                    if self._typos is not None:
                        self._typos.add(word)
        for row in gone:
            for word in row:
                if word not in self.counts:
                    continue  # a word the index splits otherwise than ``words_of``
                if self.counts[word] > 1:
                    self.counts[word] -= 1
                    continue
                del self.counts[word]
                at = bisect.bisect_left(self.words, word)
                if at < len(self.words) and self.words[at] == word:
                    del self.words[at]
                if self._typos is not None:
                    self._typos.remove(word)

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
            self._typos = TypoIndex(list(self.words))  # its own copy: a write changes ``words`` in place
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
_vocabularies: BoundedLru[tuple[Any, ...], Vocabulary] = BoundedLru(
    max_items=VOCABULARY_CACHE_ENTRIES, max_bytes=VOCABULARY_CACHE_BYTES
)


def _vocabulary_bytes(words: Vocabulary) -> int:
    # Each word is a str object referenced from the sorted list, plus its typo index (built on the first typo:
    # counted from the start) of up to TYPO_PREFIX + 1 keys of 12 bytes, and its count (a dict entry).
    return sum(sys.getsizeof(word) + 8 + 12 * (min(len(word), TYPO_PREFIX) + 1) + 60 for word in words.words) + 64


def words_of(*texts: str) -> set[str]:
    return set(WORD.findall(fold(" ".join(texts))))


def _index_vocabulary(alias: str, fts_table: str, *, scoped: bool) -> Vocabulary:
    """Every word of a SQLite FTS5 index (without its scope's tag, when ``scoped``), read once, then kept in step
    with the rows written since by this or another connection (``_refresh``)."""
    key = (alias, fts_table)
    cached = _vocabularies.get(key)
    kind = fts_table.removeprefix("pillbox_").removesuffix("_fts")
    if cached is not None and _refresh(cached, alias, kind, lambda entries, first: _index_rows(alias, kind, first)):
        return cached
    with changes.snapshot(alias), connections[alias].cursor() as cursor:
        at = changes.position(alias)
        cursor.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{fts_table}_vocab USING fts5vocab(main, {fts_table}, row)"
        )
        if scoped:  # the words without their scope's tag (pillbox.tokens)
            cursor.execute(f"SELECT substr(term, {TAG_LENGTH + 1}), SUM(doc) FROM temp.{fts_table}_vocab GROUP BY 1")
        else:
            cursor.execute(f"SELECT term, doc FROM temp.{fts_table}_vocab")
        words = Vocabulary.of(dict(cursor.fetchall()), exact=True)
    words.at = at
    _vocabularies.put(key, words, _vocabulary_bytes(words))
    return words


Rows = tuple[list[set[str]], list[set[str]]]  # the words of the rows now, and as they were when last counted


def _index_rows(alias: str, kind: str, first: list[changes.Change]) -> Rows:
    """The words of the rows the index holds (the live ones) among those that changed; every row that was live
    was counted."""
    seqs = [entry.seq for entry in first]
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SELECT title, content, compound FROM pillbox_{kind} WHERE deleted_at IS NULL "
                       f"AND seq IN ({marks(len(seqs))})", seqs)
        came = [words_of(*row) for row in cursor.fetchall()]
    return came, [words_of(entry.words) for entry in first if entry.words is not None]


def _refresh(words: Vocabulary, alias: str, kind: str,
             rows: Callable[[list[changes.Change], list[changes.Change]], Rows | None]) -> bool:
    """Brings ``words`` up to date with the rows of ``kind`` written since it was read: their words as they were
    then out (from the first entry of each row since: the state last counted), their words now in (``rows``
    gives both). False when that cannot be done row by row (the log was pruned past it; ``rows`` gives None)."""
    marker = change_marker(alias)
    with words.lock:
        if marker is not None and marker == words.marker:
            return True
        quiet = changes.unchanged(alias, words.at) if words.at is not None else None
        if quiet is not None:
            words.at, words.marker = quiet, marker
            return True
        # The log and the rows in one snapshot: a row written between the two would be counted as it is now and
        # then taken out as it was (the next entry's text).
        with changes.snapshot(alias):
            found = changes.since(alias, words.at) if words.at is not None else None
            if found is None:
                return False
            entries, at = found
            entries = [entry for entry in entries if entry.kind in (kind, "prescription")]
            first: dict[int, changes.Change] = {}
            for entry in entries:
                if entry.seq is not None:
                    first.setdefault(entry.seq, entry)
            found_rows = rows(entries, list(first.values())) if entries else ([], [])
        if found_rows is None:
            return False
        words.update(*found_rows)
        words.at, words.marker = at, marker
        return True


def _scoped_vocabulary(target: Target) -> Vocabulary:
    """The words of the caller's own rows only: in a database shared with others, their words must not decide
    whether the caller's word counts as a typo (nor what it is corrected to). Read once per scope, then kept
    in step with the rows written since."""
    joins, where, params = target.scope_sql(windowed=False)  # a time window narrows rows, not the words known
    body = f"FROM {target.table} m {joins} WHERE {where}"
    key = (target.alias, target.kind, target.owner_id, target.bottles)

    def rows(entries: list[changes.Change], first: list[changes.Change]) -> Rows | None:
        if target.kind == "pill" and any(entry.kind == "prescription" for entry in entries):
            return None  # a prescription's pills came or went: read the scope whole
        if not first:
            return [], []
        seqs = [entry.seq for entry in first]
        with connections[target.alias].cursor() as cursor:
            cursor.execute(f"SELECT m.title, m.content, m.compound {body} AND m.seq IN ({marks(len(seqs))})",
                           [*params, *seqs])
            came = [words_of(*row) for row in cursor.fetchall()]
        counted = _in_scope(target, {entry.scope for entry in first if entry.words is not None and entry.scope})
        return came, [words_of(entry.words) for entry in first if entry.words is not None and entry.scope in counted]

    cached = _vocabularies.get(key)
    if cached is not None and _refresh(cached, target.alias, target.kind, rows):
        return _with_statistics(target, body, params, cached)
    counts: dict[str, int] = {}
    with changes.snapshot(target.alias), connections[target.alias].cursor() as cursor:
        at = changes.position(target.alias)
        cursor.execute(f"SELECT m.title, m.content, m.compound {body}", params)
        for row in cursor.fetchall():
            for word in words_of(*row):
                counts[word] = counts.get(word, 0) + 1
    words = Vocabulary.of(counts)
    words.at = at
    _vocabularies.put(key, words, _vocabulary_bytes(words))
    return _with_statistics(target, body, params, words)


def _with_statistics(target: Target, body: str, params: list[SqlParam], words: Vocabulary) -> Vocabulary:
    """On PostgreSQL, the scope's rows and their mean length, which the ranking needs (``lexical.PgStats``): read
    again when the change log moved since they were (a row written, revised, superseded, discarded; a prescription
    closed or gone), else kept with the vocabulary, which has just asked the log."""
    if target.on_postgres and (words.stats_at is None or words.stats_at != words.at):
        at = words.at
        with connections[target.alias].cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*), COALESCE(AVG(m.search_length), 0) {body}", params)
            rows, mean = cursor.fetchone()
        words.rows, words.mean_length, words.stats_at = int(rows), float(mean), at
    return words


def _in_scope(target: Target, scopes: set[str]) -> set[str]:
    """Which of the changed rows' former scopes (a pill's prescription, a capsule's owner, as the change log
    names them) are the caller's: their rows were counted. Prescriptions are as they were then: a change to one
    makes the scope read whole."""
    if target.kind == "capsule":
        return {scope for scope in scopes if scope == str(target.owner_id)}
    if not scopes:
        return set()
    named = sorted(scopes)
    bottles = sorted(target.bottles) if target.on_postgres else [bottle.hex for bottle in sorted(target.bottles)]
    with connections[target.alias].cursor() as cursor:
        cursor.execute(f"SELECT id FROM pillbox_prescription WHERE deleted_at IS NULL AND id IN "
                       f"({marks(len(named))}) AND bottle_id IN ({marks(len(bottles))})", [*named, *bottles])
        return {str(row[0]) for row in cursor.fetchall()} & scopes


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
