"""Search over pills and capsules: full text (SQLite FTS5 or PostgreSQL), a Jaro-Winkler typo pass, and meaning.

The query is folded the way the FTS5 tokenizer folds text (lowercase, accents removed, split on anything
that is not a letter or digit) so that terms can be checked against the index's own vocabulary. Every
term becomes a quoted prefix term joined with OR, so nothing an agent types is ever FTS syntax.

Ranking: FTS5 MATCH ranked by bm25 (column weights below) picks the best ``CANDIDATES`` rows (among the rows
matching every term first when more than ``RANK_ALL_UP_TO`` match some: see ``_lexical``); those are
re-ranked by coverage first (how many distinct query terms the row matches; a term matched only through a
typo expansion counts ``FUZZY_COVERAGE``), then by bm25, then newest first. With OR-joined terms, bm25
alone lets one rare word outweigh a row that has every word typed; coverage puts the rows that match
the whole query first.

Stop words (``STOP_WORDS``: English and Spanish function words, question words and the framing of a
question) are left out of the terms, unless the query has nothing else.

Typos: when the strict pass finds nothing (and the query has at least 5 characters), or at once with
``fuzzy``, each term of 4+ characters is expanded to indexed words within Jaro-Winkler 0.80 (length within
2) among the words a deletion neighbourhood of the vocabulary files beside it (``TypoIndex``: the
corrections worth offering, without scoring every indexed word). Beyond the seed, a term that no searched
database knows (the union of their vocabularies, so a word in one bottle is never a typo for another) is
expanded even when other terms matched, so one misspelled word is not silently dropped. Each term takes its
``MAX_EXPANSIONS`` most similar words, among those a person could have meant (``plausible``; ``_expansions``).
``used_fuzzy`` is set when a returned row contains an expansion word; each hit says how it matched the terms
(``MATCHES``) and which corrections it matched, and the answer shows the first's and all of them.

Meaning (``pillbox.semantic``): the query's sentence embedding is compared with every reachable row's vector;
the words' candidates get their cosine, and rows close enough in meaning join them (``used_semantic`` when a
shown row was found by meaning alone). See ``_fused`` and ``search`` for how the two are weighed. Rows of the
bottle holding the caller's working directory get ``CURRENT_BOTTLE_BOOST``. With ``cut``, rows far below the
best are left out after the first ``CLIFF_HEAD`` (``cliff``) and counted.

The constants were chosen by measurement with ``bench/pills_search.py`` on the shared public dataset.
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connections
from django.db.backends.utils import CursorWrapper
from rapidfuzz import process
from rapidfuzz.distance import OSA, JaroWinkler

from base.lru import BoundedLru
from pillbox import semantic, snippets
from pillbox.databases import change_marker
from pillbox.routers import is_local_alias
from pillbox.tokens import TAG_LENGTH, WORD, fold, tag_of

if TYPE_CHECKING:
    from typing import TypeAlias

    import numpy as np
    from django.db.backends.utils import CursorWrapper

    # What the queries here pass their placeholders.
    SqlParam: TypeAlias = str | int | uuid.UUID | None

MIN_FUZZY_QUERY = 5
MIN_FUZZY_TERM = 4
MAX_LEN_DIFF = 2
RANK_ALL_UP_TO = 2000  # rows matching some term that bm25 ranks all of (see _lexical)
SPELLED_OUT = 32  # the most indexed words a prefix term is counted through (see _count)
TYPO_SHARED_START = 2
TYPO_PREFIX = 7  # characters of a word its typo index files it under (SymSpell's prefix length)
JW_THRESHOLD = 0.80
MAX_EXPANSIONS = 5  # most similar indexed words per term (more only add noise: bench b 0.988 at 5, 0.958 at 24)
SNIPPET_TOKENS = 24
# The most distinct meaningful terms a query is searched with; the rest are ignored and the answer says so. A
# search's cost grows with its terms (FTS5's OR, coverage, typo expansions): 32 is far beyond a person's query
# (the recall set's longest has 12) and bounds what a 1,000-character query of 200 words can cost.
MAX_TERMS = 32
# A correction a person could plausibly have meant (see plausible()): on the public recall set every typo of
# kind b is one edit from its word (39 of 39 kept); nonsense words are two or more from any indexed word.
LONG_TYPO = 8  # a typed word this long may be two edits from the word meant; a shorter one, one edit
MIN_OMITTED = 5  # or, from this length, two letters left out (plausible())
# bm25 column weights (title, content, compound): with the coverage re-rank, 3-4x on the title ranks best
# (bench MRR@10 0.989 at 3,1,1; 0.981 at 1,1,1) without costing content-only queries (kind e 0.969 either way).
WEIGHTS = (3.0, 1.0, 1.0)
CANDIDATES = 60  # rows ranked by bm25 that the coverage re-rank looks at (the bench is flat from 60 up)
FUZZY_COVERAGE = 0.9  # a term matched only through a typo expansion, against 1 for a typed term
# Fusion of words and meaning (see _fused), set with bench/pills_search.py on the recall set.
BM25_WEIGHT = 0.099
# Measured on the recall set (kinds a-e, n, p; bench/pills_search.py): when every meaningful term is matched
# (typed or corrected) the query is a look-up and keeps the lexical order (rows found by meaning alone come
# after the words' rows); otherwise the words missed something and meaning weighs in fully. Any weight on
# look-ups cost them (kind a 1.000 -> 0.988 at 0.01, 0.983 at 0.05); one weight for every query lost 0.02-0.05
# MRR on look-ups for the same gain on n and p.
# Calibrated since on two kinds of memory (the public commit history and a conversational set, one pill per
# turn; bench/pills_search.py --conversations): the weight follows the share of the query's terms its best row
# matches. A look-up (all) keeps the word order; half or more: 3x; less than half (a paraphrase, a question in
# other words): the cosine decides (100x) and the words only break ties. One weight of 3 for every partial match
# left paraphrases below the model alone (conversations MRR@10 0.501 against 0.644; public p 0.157 / 0.166).
SIMILARITY_WEIGHT = 3.0
WEAK_SIMILARITY_WEIGHT = 100.0
WEAK_SHARE = 0.5  # under this share of the terms matched by the best row, the query's words are weak
LOOKUP_SIMILARITY_WEIGHT = 0.0
# In a look-up, rows found by meaning alone are ranked by their cosine below the words' rows (whose score is at
# least 0.9 / terms): without it they tied at 0, newest first, and a conversational look-up's answer sat 9th.
ALONE_AFTER_LOOKUP = 0.01
# Beside the words' rows, rows found by meaning alone need the model's floor less this (conversational
# paraphrases: MRR@10 0.646 at 0.20, 0.560 at 0.30).
BESIDE_WORDS_MARGIN = 0.10
SEMANTIC_CANDIDATES = 30  # rows found by meaning alone that may join the words' candidates, per database
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
WORDS_APART = re.compile(r"([^\W_]+)")  # WORD, kept by re.split between the text around the words
COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


# Words that carry no meaning for retrieval: English and Spanish function words, question words, and the
# framing of a question to a memory ("remind me how", "is there a note on", "what was decided about"). They
# never drive ranking, coverage or typo correction; a query made only of them is searched as typed.
STOP_WORDS = frozenset("""
a about above after again against all also am an and any are aren as at be because been before being below
between both but by can cannot could couldn did didn do does doesn doing don down during each either else ever
few for from further had hadn has hasn have haven having he her here hers herself him himself his how i if in
into is isn it its itself just let ll me might more most must mustn my myself no nor not now of off on once
only or other ought our ours ourselves out over own re s same shall shan she should shouldn so some such t than
that the their theirs them themselves then there these they this those through to too under until up us ve
very was wasn we were weren what whatever when whenever where wherever whether which while who whoever whom
whose why will with won would wouldn you your yours yourself yourselves
anything something thing things way ways please tell know remind remember recall happened decided done
work works handle handled note notes pill pills capsule capsules
el la los las lo un una unos unas y o u e ni que qué de del al a en con por para sin sobre entre hasta desde
como cómo cuando cuándo donde dónde quien quién quienes cual cuál cuales cuanto cuánto porque por qué es son
era fue ser estar está están estaba hay había se su sus mi mis tu tus nos nuestro nuestra le les me te ya
muy más mas pero si sí no este esta estos estas ese esa esos esas eso esto aquel algo alguna alguno hicimos
hacemos hace hacer cosa cosas nota notas
""".split())


FOLDED_STOP_WORDS = frozenset(fold(word) for word in STOP_WORDS)


def extract_terms(query: str) -> list[str]:
    """Lowercased, accent-free, deduplicated terms in the order typed."""
    seen: dict[str, None] = {}
    for term in WORD.findall(fold(query)):
        seen.setdefault(term, None)
    return list(seen)


def meaningful(terms: list[str]) -> list[str]:
    """The terms that drive ranking: all but stop words, or every term when the query is only stop words."""
    kept = [term for term in terms if term not in FOLDED_STOP_WORDS]
    return kept or terms


def match_expression(terms: Iterable[str], expansions: Iterable[str] = (), *,
                     every: dict[str, list[str]] | None = None, tags: Iterable[str] = ("",)) -> str:
    """FTS5's OR query; with ``every``, the query for rows matching every term (typed, or one of its
    expansions in ``every``). In the global database each word is asked under each of the caller's ``tags``
    (``pillbox.tokens``)."""
    tags = list(tags)
    if every is not None:
        return " AND ".join("(" + match_expression([term], every.get(term, ()), tags=tags) + ")" for term in terms)
    parts = [f'"{tag}{term}"*' for term in terms for tag in tags]
    parts += [f'"{tag}{word}"' for word in expansions for tag in tags]
    return " OR ".join(parts)


class TypoIndex:
    """A deletion neighbourhood (SymSpell's) over a vocabulary: where the words near a term are, without a scan.

    Every word is filed under its first ``TYPO_PREFIX`` characters and under each of them with one character
    deleted; a term looks up its own first characters with up to two deleted. A word shares a key with a term
    when their beginnings are one substitution, insertion, deletion or swap of neighbours apart (and some
    two-edit pairs); Jaro-Winkler then scores those few words (and the words sharing the term's first
    letters, which it favours) instead of the whole vocabulary. A key is a hash of the characters (collisions
    only add a candidate for Jaro-Winkler to turn down), sorted beside the word it came from: built with numpy,
    once per vocabulary (a few seconds and 90 MB for a million words), on its first typo.
    """

    def __init__(self, words: list[str]) -> None:
        import numpy as np  # here, not at import: a stdio server's cold start does not pay for it

        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        # One code point per character; zero (never in an indexed word) pads the short ones.
        points = np.frombuffer(("".join(words) + "\0" * TYPO_PREFIX).encode("utf-32-le"), dtype=np.uint32)
        starts = np.cumsum(lengths) - lengths
        columns = np.arange(TYPO_PREFIX)
        width = np.minimum(lengths, TYPO_PREFIX)
        heads = np.where(columns < width[:, None], points[starts[:, None] + columns], 0).astype(np.uint64)
        ids = np.arange(len(words), dtype=np.int32)
        keys, owners = [_packed(heads)], [ids]
        for gone in range(TYPO_PREFIX):
            kept = heads[width > gone]
            shortened = np.zeros_like(kept)
            shortened[:, :-1] = np.delete(kept, gone, axis=1)
            keys.append(_packed(shortened))
            owners.append(ids[width > gone])
        all_keys = np.concatenate(keys)
        order = np.argsort(all_keys, kind="stable")
        self.keys = all_keys[order]
        self.owners = np.concatenate(owners)[order]
        self.words = words

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.owners.nbytes)

    def candidates(self, term: str) -> list[str]:
        """The words filed under the term's first characters with up to two deleted, at most ``MAX_LEN_DIFF``
        characters longer or shorter."""
        import numpy as np

        variants = {term[:TYPO_PREFIX]}
        for _ in range(2):
            variants |= {variant[:at] + variant[at + 1:] for variant in variants for at in range(len(variant))}
        probes = np.array(sorted(_pack(variant) for variant in variants), dtype=np.uint64)
        lows = np.searchsorted(self.keys, probes, side="left")
        highs = np.searchsorted(self.keys, probes, side="right")
        ids = {int(owner) for low, high in zip(lows, highs, strict=True) for owner in self.owners[low:high]}
        return [self.words[at] for at in ids if abs(len(self.words[at]) - len(term)) <= MAX_LEN_DIFF]


TYPO_KEY_BASE = 1_000_003  # odd: multiplying by it modulo 2**64 loses nothing of the characters before


def _pack(prefix: str) -> int:
    """The key of up to ``TYPO_PREFIX`` characters (``_packed`` of one row, in Python)."""
    key = 0
    for char in prefix.ljust(TYPO_PREFIX, "\0"):
        key = (key * TYPO_KEY_BASE + ord(char)) & 0xFFFF_FFFF_FFFF_FFFF
    return key


def _packed(heads: np.ndarray) -> np.ndarray:
    """The key of every row of a code point matrix (``TYPO_PREFIX`` columns, zero-padded), modulo 2**64."""
    import numpy as np

    keys = np.zeros(len(heads), dtype=np.uint64)
    for column in heads.T:
        keys = keys * np.uint64(TYPO_KEY_BASE) + column
    return keys


@dataclass
class Vocabulary:
    words: list[str]  # sorted
    # The index's own terms (FTS5's vocabulary of a file the caller sees whole): a prefix term matches exactly
    # the rows holding one of the words it begins.
    exact: bool = False
    _typos: TypoIndex | None = None

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
    with connections[target.alias].cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*), MAX(m.seq), MAX(m.updated_at) {body}", params)
        version = tuple(cursor.fetchone())
        cached = _vocabularies.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        cursor.execute(f"SELECT m.title, m.content, m.compound {body}", params)
        seen: set[str] = set()
        for row in cursor.fetchall():
            seen.update(WORD.findall(fold(" ".join(row))))
    words = Vocabulary.of(list(seen))
    _vocabularies.put(key, (version, words), _vocabulary_bytes(words))
    return words


def vocabulary(target: Target) -> Vocabulary:
    if not target.on_postgres and target.everything_reachable:
        return _index_vocabulary(target.alias, target.fts, scoped=target.scoped_index)
    return _scoped_vocabulary(target)


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

    @property
    def on_postgres(self) -> bool:
        return connections[self.alias].vendor == "postgresql"

    @cached_property
    def everything_reachable(self) -> bool:
        """True when every row in this database's pill index is one the caller may see (a project's own file).
        Asked once per search: the vocabulary, the strict check, the count and the ranking all want it."""
        if self.kind != "pill":
            return False
        with connections[self.alias].cursor() as cursor:
            cursor.execute(
                "SELECT EXISTS(SELECT 1 FROM pillbox_prescription WHERE deleted_at IS NOT NULL "
                f"OR bottle_id NOT IN ({_marks(len(self.bottles))}))",
                [bottle.hex for bottle in sorted(self.bottles)],
            )
            row = cursor.fetchone()
        return not row[0]

    def scope_sql(self) -> tuple[str, str, list[SqlParam]]:
        """Extra joins, conditions and parameters that keep to the caller's rows of table alias ``m``."""
        if self.kind == "pill":
            marks = ", ".join(["%s"] * len(self.bottles))
            # SQLite keeps UUIDs as 32 hex digits; PostgreSQL has a uuid type.
            bottles = sorted(self.bottles) if self.on_postgres else [bottle.hex for bottle in sorted(self.bottles)]
            return (
                "JOIN pillbox_prescription r ON r.id = m.prescription_id",
                f"m.deleted_at IS NULL AND r.deleted_at IS NULL AND r.bottle_id IN ({marks})",
                list(bottles),
            )
        return "", "m.deleted_at IS NULL AND m.owner_id = %s", [self.owner_id]

    @property
    def bottle_column(self) -> str:
        return "r.bottle_id" if self.kind == "pill" else "NULL"

    @property
    def scoped_index(self) -> bool:
        """Whether the SQLite index knows whose each word is (the global database's: see migration 0008)."""
        return not is_local_alias(self.alias)

    @cached_property
    def tags(self) -> list[str]:
        """What the index's words of the caller's rows begin with: in the global database, the tags of their
        bottles (pills) or of their owner (capsules); nothing in a project's file (``pillbox.tokens``). Every
        statement of a search asks: hashed once per target."""
        if not self.scoped_index:
            return [""]
        if self.kind == "capsule":
            return [tag_of(self.owner_id)]
        return [tag_of(bottle.hex) for bottle in sorted(self.bottles)]


@dataclass(frozen=True)
class Hit:
    id: uuid.UUID
    seq: int
    compound: str
    title: str
    snippet: str
    bottle_id: uuid.UUID | None
    # 10 x the query terms the row matches (``FUZZY_COVERAGE`` for a term matched through an expansion), plus
    # its bm25 normalised within its database to (0, 1] (1 for the best): higher is better, and comparable
    # across databases. 1.0 for a listing by compound.
    score: float
    match: str = ""  # how the row matched the query's meaningful terms: one of MATCHES ("" in a listing)
    corrected: tuple[tuple[str, str], ...] = ()  # (typed, indexed word) of the corrections the row matched


# How a row matched the query's meaningful terms: every one as typed; every one, some through a correction;
# some of them; none (found by meaning alone).
ALL_WORDS, CORRECTED_WORDS, SOME_WORDS, MEANING = "all words", "corrected words", "some words", "meaning"
MATCHES = (ALL_WORDS, CORRECTED_WORDS, SOME_WORDS, MEANING)


@dataclass(frozen=True)
class Found:
    hits: list[Hit]
    total: int
    used_fuzzy: bool
    used_semantic: bool = False  # a shown hit was found by meaning alone
    ignored_terms: int = 0  # distinct meaningful terms beyond MAX_TERMS, left out of the search
    partial: bool = False  # the time budget ran out: the answer is what was found by then
    more: int = 0  # rows left out below the relevance cliff (see cliff())

    @property
    def match(self) -> str:
        """How the first row matched the query (``MATCHES``), "" without hits or for a listing."""
        return self.hits[0].match if self.hits else ""

    @property
    def corrections(self) -> list[tuple[str, str]]:
        """The corrections the shown rows matched, in the order of the rows, each once."""
        seen: dict[tuple[str, str], None] = {}
        for hit in self.hits:
            seen.update(dict.fromkeys(hit.corrected))
        return list(seen)


class _Budget:
    """A search's time budget (``SEARCH_TIME_BUDGET_MS``): the steps after it ran out are skipped or made cheap,
    and ``cut`` says that some were."""

    def __init__(self) -> None:
        budget = float(settings.SEARCH_TIME_BUDGET_MS)
        self.deadline = time.monotonic() + budget / 1000 if budget > 0 else None
        self.cut = False

    def excuse(self, since: float) -> None:
        """Leave out of the budget the time from ``since`` (``time.monotonic()``): a one-time cost of the process
        (a typo index built, the model loaded), not of the query."""
        if self.deadline is not None:
            self.deadline += time.monotonic() - since

    def spent(self) -> bool:
        """True (and the answer marked partial) once the budget has run out."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.cut = True
        return self.cut


@dataclass
class _Ranked:
    hits: list[Hit]
    total: int
    expanded: set[uuid.UUID]  # the hits that contain an expansion word
    by_meaning: set[uuid.UUID] = field(default_factory=set)  # the hits no query word matched


class _Coverage:
    """Which query terms a row's text matches: a typed term as a word prefix, an expansion as a whole word.

    A row's text is read once, as its words (maximal runs of letters and digits, ``WORD``): a typed term matches
    when a word begins with it, an expansion when it is a word. The cost follows the text's length and its
    distinct words, never the number of terms times the text (issue 23: 200 terms over 5,000-character rows).
    """

    def __init__(self, terms: list[str], expansions: dict[str, list[str]]) -> None:
        self.terms = terms
        self.fuzzy = [frozenset(expansions.get(term, ())) for term in terms]
        self.corrections = [expansions.get(term, []) for term in terms]  # most similar first
        self._first: dict[str, int | None] = {}  # a folded word -> the first term matching it (rows share words)

    def of(self, text: str) -> tuple[float, bool]:
        """(coverage, whether an expansion word matched)."""
        words = sorted(set(WORD.findall(_quick_fold(text))))
        covered = 0.0
        expanded = False
        for term, fuzzy in zip(self.terms, self.fuzzy, strict=True):
            at = bisect.bisect_left(words, term)
            if at < len(words) and words[at].startswith(term):
                covered += 1.0
                if fuzzy and not expanded and not fuzzy.isdisjoint(words):
                    expanded = True
            elif fuzzy and not fuzzy.isdisjoint(words):
                covered += FUZZY_COVERAGE
                expanded = True
        return covered, expanded

    def matched(self, text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """How a row found by words matched (``MATCHES``), and the corrections it matched (typed, word): read as
        ``of`` reads a row, once, as its words."""
        words = sorted(set(WORD.findall(_quick_fold(text))))
        present = set(words)
        typed = 0
        corrected = []
        for term, fixes in zip(self.terms, self.corrections, strict=True):
            at = bisect.bisect_left(words, term)
            if at < len(words) and words[at].startswith(term):
                typed += 1
            elif found := next((word for word in fixes if word in present), None):
                corrected.append((term, found))
        if typed == len(self.terms):
            return ALL_WORDS, ()
        if typed + len(corrected) == len(self.terms):
            return CORRECTED_WORDS, tuple(corrected)
        return SOME_WORDS, tuple(corrected)

    def snippet(self, text: str) -> str:
        """Up to ``SNIPPET_TOKENS`` words of ``text`` around the most query terms, '…' where it is cut.

        The same choice as FTS5's ``snippet()`` (the window holding the most distinct terms, centred on them),
        made here on the few rows shown, since FTS5 would re-run the whole MATCH for each of them. One pass over
        the matched words (a sliding window), however many terms and matches.
        """
        parts = WORDS_APART.split(text)  # the text between words and the words, in turn: words at odd places
        words = parts[1::2]
        if not words:
            return text.strip()
        offsets = list(accumulate(map(len, parts), initial=0))  # word i is text[offsets[2i + 1]:offsets[2i + 2]]
        start = 0
        if len(words) > SNIPPET_TOKENS and (matches := self._positions(text, words)):
            best = (-1, 0)
            inside: dict[int, int] = {}  # term index -> its matches in the window
            end = 0
            for at, (first, _) in enumerate(matches):
                while end < len(matches) and matches[end][0] < first + SNIPPET_TOKENS:
                    inside[matches[end][1]] = inside.get(matches[end][1], 0) + 1
                    end += 1
                if at:
                    gone = matches[at - 1][1]
                    inside[gone] -= 1
                    if not inside[gone]:
                        del inside[gone]
                score = 1000 * len(inside) + (end - at)
                last = matches[end - 1][0]
                begin = max(0, min(first - (SNIPPET_TOKENS - (last - first + 1)) // 2, len(words) - SNIPPET_TOKENS))
                if score > best[0]:
                    best = (score, begin)
            start = best[1]
        end = min(len(words), start + SNIPPET_TOKENS)
        last = offsets[2 * end] if end < len(words) else len(text)
        return snippets.window(text, offsets[2 * start + 1] if start else 0, last)

    def _positions(self, text: str, words: list[str]) -> list[tuple[int, int]]:
        """(token position, term index) of every word of ``text`` that a query term matches, in text order: the
        first term (in the order typed) that the word begins with, or that has the word as an expansion."""
        found: list[tuple[int, int]] = []
        first = self._first
        # ASCII text lowers word for word (the same tokens); other text is folded a word at a time.
        folded = WORD.findall(text.lower()) if text.isascii() else [_quick_fold(word) for word in words]
        for position, word in enumerate(folded):
            if word not in first:
                pairs = enumerate(zip(self.terms, self.fuzzy, strict=True))
                first[word] = next((index for index, (term, fuzzy) in pairs
                                    if word.startswith(term) or word in fuzzy), None)
            index = first[word]
            if index is not None:
                found.append((position, index))
        return found


def _quick_fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    return COMBINING.sub("", unicodedata.normalize("NFKD", text)).lower()


def _marks(count: int) -> str:
    return ", ".join(["%s"] * count)


def _tsquery(terms: Iterable[str], expansions: Iterable[str] = (), *,
             every: dict[str, list[str]] | None = None) -> str:
    """PostgreSQL's form of the OR query (or, with ``every``, of the query for every term): typed terms as
    prefixes, expansions as words (terms are letters and digits only, so nothing here is syntax an agent
    typed)."""
    if every is not None:
        return " & ".join("(" + _tsquery([term], every.get(term, ())) + ")" for term in terms)
    return " | ".join([f"{term}:*" for term in terms] + list(expansions))


# ts_rank_cd's weights are {D, C, B, A}: content is D, compound B, title A, in the proportions of WEIGHTS.
PG_WEIGHTS = f"{{{round(WEIGHTS[1] / WEIGHTS[0], 3)}, 0, {round(WEIGHTS[2] / WEIGHTS[0], 3)}, 1.0}}"


def _from(target: Target, terms: list[str], words: list[str],
          compound: str | None, *, every: dict[str, list[str]] | None = None) -> tuple[str, list[SqlParam], str, str]:
    """FROM and WHERE of the caller's rows matching the terms (or their expansions; with ``every``, all the
    terms), their parameters, the row key column, and a relevance expression where lower is better."""
    joins, where, params = target.scope_sql()
    if compound is not None:
        where += " AND m.compound = %s"
        params = [*params, compound]
    if target.on_postgres:
        body = (f"FROM {target.table} m {joins} CROSS JOIN to_tsquery('simple', pillbox_fold(%s)) q "
                f"WHERE m.search_vector @@ q AND {where}")
        return (body, [_tsquery(terms, words, every=every), *params], "m.seq",
                f"-ts_rank_cd('{PG_WEIGHTS}', m.search_vector, q)")
    fts = target.fts
    # The caller's own words only (tagged with their scopes in the global database): others' rows are never
    # read, ranked nor joined.
    expression = match_expression(terms, words, every=every, tags=target.tags)
    # A project file's index still has migration 0006's empty scope column, which weighs nothing.
    weights = WEIGHTS if target.scoped_index else (*WEIGHTS, 0)
    score = f"bm25({fts}, {', '.join(str(w) for w in weights)})"
    if compound is None and target.everything_reachable:
        # Only the index: no join per matching row, and the count is the index's own.
        return f"FROM {fts} WHERE {fts} MATCH %s", [expression], f"{fts}.rowid", score
    # CROSS JOIN keeps the index as the outer loop: SQLite would otherwise walk the caller's rows by their
    # owner or prescription index and run the MATCH once per row (seconds at 100,000 rows, for a count).
    body = f"FROM {fts} CROSS JOIN {target.table} m ON m.seq = {fts}.rowid {joins} WHERE {fts} MATCH %s AND {where}"
    return body, [expression, *params], "m.seq", score


def _any_match(target: Target, terms: list[str], compound: str | None, vocabulary: Vocabulary) -> bool:
    """Whether the strict pass (the typed terms alone) finds anything in this database."""
    prefixes, spelled = _spelled_out(terms, vocabulary)
    if not prefixes and not spelled:
        return False
    with connections[target.alias].cursor() as cursor:
        body, params, _, _ = _from(target, prefixes, spelled, compound)
        cursor.execute(f"SELECT 1 {body} LIMIT 1", params)
        return cursor.fetchone() is not None


@dataclass
class _Candidate:
    seq: int
    coverage: float  # query terms matched (0 for a row found by meaning alone)
    closeness: float  # bm25 normalised within its database to (0, 1]; 0 when not found by words
    expanded: bool
    similarity: float = 0.0  # cosine with the query; 0 without vectors


def _lexical(target: Target, terms: list[str], expansions: dict[str, list[str]], compound: str | None,
             limit: int, vocabulary: Vocabulary, budget: _Budget | None = None,
             ) -> tuple[list[_Candidate], int, dict[int, tuple[Any, ...]]]:
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
        total = _count(cursor, target, terms, words, compound, vocabulary)
        candidates: list[tuple[int, float]] = []
        if total > RANK_ALL_UP_TO and len(terms) > 1:
            body, params, key, relevance = _from(target, terms, words, compound, every=expansions)
            cursor.execute(f"SELECT {key}, {relevance} AS score {body} ORDER BY score, {key} DESC LIMIT %s",
                           [*params, wanted])
            candidates = cursor.fetchall()
        if total and len(candidates) < limit:
            body, params, key, relevance = _from(target, terms, words, compound)
            cursor.execute(f"SELECT {key}, {relevance} AS score {body} ORDER BY score, {key} DESC LIMIT %s",
                           [*params, wanted])
            candidates = cursor.fetchall()
    if not candidates:
        return [], total, {}
    rows = _rows(target, [seq for seq, _ in candidates])
    coverage = _Coverage(terms, expansions)
    best = candidates[0][1] or -1.0
    out: list[_Candidate] = []
    for seq, bm25 in candidates:
        row = rows.get(seq)
        if row is None:  # cannot happen: the index holds live rows only
            continue
        if out and budget is not None and budget.spent():
            break
        covered, expanded = coverage.of(f"{row[3]}\n{row[4]}\n{row[2]}")
        closeness = min(max(bm25 / best, 0.0), 1.0) if bm25 is not None else 1.0
        out.append(_Candidate(seq, covered, closeness, expanded))
    return out, total, rows


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


def _rows(target: Target, seqs: list[int]) -> dict[int, tuple[Any, ...]]:
    if not seqs:
        return {}
    joins = "JOIN pillbox_prescription r ON r.id = m.prescription_id" if target.kind == "pill" else ""
    with connections[target.alias].cursor() as cursor:
        cursor.execute(
            f"SELECT m.seq, m.id, m.compound, m.title, m.content, {target.bottle_column} FROM {target.table} m "
            f"{joins} WHERE m.seq IN ({_marks(len(seqs))})",
            seqs,
        )
        return {row[0]: row for row in cursor.fetchall()}


# ---------------------------------------------------------------- meaning


@dataclass
class _Vectors:
    seqs: np.ndarray  # int64, one per row
    compounds: list[str]
    matrix: np.ndarray  # float32 [rows, dimensions], unit rows
    position: dict[int, int]
    missing: int  # the scope's live rows without a vector of this model


VECTOR_CACHE_ENTRIES = 64
VECTOR_CACHE_BYTES = 256 * 1024 * 1024
_vectors: BoundedLru[tuple[Any, ...], tuple[Any, _Vectors]] = BoundedLru(
    max_items=VECTOR_CACHE_ENTRIES, max_bytes=VECTOR_CACHE_BYTES
)


def _vectors_of(target: Target, model_key: str, dimensions: int) -> _Vectors:
    """The caller's rows' vectors in one database, cached until the rows or their vectors change."""
    import numpy as np  # here, not at import: a stdio server's cold start does not pay for it
    kind = semantic.KINDS[target.kind]
    joins, where, params = target.scope_sql()
    body = (f"FROM {target.table} m {joins} LEFT JOIN {kind.vectors} v ON v.{kind.key} = m.id AND v.model = %s "
            f"WHERE {where}")
    params = [model_key, *params]
    key = ("vectors", target.alias, target.kind, target.owner_id, target.bottles, model_key, dimensions)
    connection = connections[target.alias]
    with connection.cursor() as cursor:
        if target.on_postgres:
            cursor.execute(f"SELECT COUNT(*), COUNT(v.{kind.key}), MAX(m.seq), MAX(m.updated_at) {body}", params)
            version: tuple[Any, ...] = tuple(cursor.fetchone())
        else:
            # Nothing in the file changed since the last read (by this connection or another): the cheap check,
            # where counting the scope's rows would cost more than the search at 20,000 pills.
            version = change_marker(target.alias) or ()
        cached = _vectors.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        if not target.on_postgres:
            cursor.execute(f"SELECT COUNT(*) - COUNT(v.{kind.key}) {body}", params)
            missing = cursor.fetchone()[0]
        else:
            missing = version[0] - version[1]
        cursor.execute(f"SELECT m.seq, m.compound, v.vector {body} AND v.{kind.key} IS NOT NULL", params)
        # A vector of another length (a damaged row) is left out rather than breaking the search.
        fetched = [row for row in cursor.fetchall() if len(row[2]) == dimensions * 2]
    seqs = np.array([row[0] for row in fetched], dtype=np.int64)
    if fetched:
        matrix = np.frombuffer(b"".join(bytes(row[2]) for row in fetched), dtype=semantic.VECTOR_DTYPE)
        matrix = matrix.reshape(len(fetched), -1).astype(np.float32)
    else:
        matrix = np.zeros((0, 0), dtype=np.float32)
    found = _Vectors(seqs, [row[1] for row in fetched], matrix, {int(seq): i for i, seq in enumerate(seqs)},
                     missing=missing)
    _vectors.put(key, (version, found), matrix.nbytes + seqs.nbytes + 100 * len(fetched))
    return found


def _semantic(target: Target, model: semantic.Embedder, query_vector: np.ndarray, compound: str | None,
              lexical: list[_Candidate], floor: float) -> list[_Candidate]:
    """Gives the lexical candidates their similarity; returns the rows found by meaning alone (above the floor)."""
    import numpy as np
    vectors = _vectors_of(target, model.key, query_vector.shape[0])
    if 0 < vectors.missing <= semantic.BATCH:
        # Rows stored a moment ago whose backfill has not run yet: one model run (a few ms) makes them findable.
        if semantic.catch_up(target.alias, target.kind):
            vectors = _vectors_of(target, model.key, query_vector.shape[0])
    if vectors.missing:
        semantic.schedule_backfill(target.alias, target.kind)
    if not len(vectors.seqs) or vectors.matrix.shape[1] != query_vector.shape[0]:
        return []
    similarity = vectors.matrix @ query_vector
    for candidate in lexical:
        at = vectors.position.get(candidate.seq)
        if at is not None:
            candidate.similarity = float(similarity[at])
    if compound is not None:
        similarity = np.where(np.array([c == compound for c in vectors.compounds]), similarity, -1.0)
    seen = {candidate.seq for candidate in lexical}
    count = min(SEMANTIC_CANDIDATES + len(seen), len(similarity))
    top = np.argpartition(-similarity, count - 1)[:count]
    top = top[np.argsort(-similarity[top])]
    out: list[_Candidate] = []
    for at in top:
        value = float(similarity[at])
        if value < floor or len(out) >= SEMANTIC_CANDIDATES:
            break
        seq = int(vectors.seqs[at])
        if seq not in seen:
            out.append(_Candidate(seq, 0.0, 0.0, False, value))
    return out


def _fused(candidate: _Candidate, terms: int, *, meaning: float | None) -> float:
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


def _scored(target: Target, candidates: list[_Candidate], rows: dict[int, tuple[Any, ...]], coverage: _Coverage,
            terms: int, limit: int, *, meaning: float | None, boosted: frozenset[uuid.UUID],
            budget: _Budget | None = None) -> _Ranked:
    missing = [c.seq for c in candidates if c.seq not in rows]
    if missing:
        rows = {**rows, **_rows(target, missing)}
    scored = []
    bottles: dict[object, uuid.UUID | None] = {}  # the candidates come from a few bottles: one UUID each
    for candidate in candidates:
        row = rows.get(candidate.seq)
        if row is None:
            continue
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
                  snippet=shown, bottle_id=bottle, score=score, match=match, corrected=corrected)
        hits.append(hit)
        if candidate.expanded:
            expanded.add(hit.id)
        if candidate.coverage == 0:
            by_meaning.add(hit.id)
    return _Ranked(hits, 0, expanded, by_meaning)


def _hit(row: tuple[Any, ...]) -> Hit:
    id_hex, seq, compound, title, snippet, bottle_hex = row
    return Hit(
        id=as_uuid(id_hex), seq=seq, compound=compound, title=title,
        snippet=snippets.head(snippet, snippets.LISTING_WIDTH),
        bottle_id=as_uuid(bottle_hex) if bottle_hex else None, score=1.0,
    )


def as_uuid(value: str | uuid.UUID) -> uuid.UUID:
    """SQLite hands back UUIDs as hex text, PostgreSQL as UUIDs."""
    return value if isinstance(value, uuid.UUID) else uuid.UUID(value)


def _listing(target: Target, compound: str, limit: int) -> tuple[list[Hit], int]:
    joins, where, params = target.scope_sql()
    body = f"FROM {target.table} m {joins} WHERE {where} AND m.compound = %s"
    with connections[target.alias].cursor() as cursor:
        cursor.execute(
            f"SELECT m.id, m.seq, m.compound, m.title, substr(m.content, 1, {snippets.LISTING_WIDTH + 40}), "
            f"{target.bottle_column} "
            f"{body} ORDER BY m.seq DESC LIMIT %s",
            [*params, compound, limit],
        )
        rows = cursor.fetchall()
        cursor.execute(f"SELECT COUNT(*) {body}", [*params, compound])
        total = cursor.fetchone()[0]
    return [_hit(row) for row in rows], total



def _merge(results: list[list[Hit]], limit: int, *, by_score: bool) -> list[Hit]:
    """Merge per-database results: by score (coverage, then normalised bm25), then newest."""
    ranked = [(position, hit) for position, hits in enumerate(results) for hit in hits]
    if by_score:
        ranked.sort(key=lambda item: (-item[1].score, item[0], -item[1].seq))
    else:
        ranked.sort(key=lambda item: (-item[1].seq, item[0]))
    return [hit for _, hit in ranked[:limit]]


def plausible(typed: str, word: str) -> bool:
    """Whether a person typing ``typed`` could have meant ``word``: one edit apart (a substitution, insertion,
    deletion or swap of neighbours; two for a word of ``LONG_TYPO`` characters or more, or two letters left out
    of a word from ``MIN_OMITTED`` typed characters on), starting with the same letter or with the first two
    swapped. Jaro-Winkler alone takes 'plorbt' for 'port'."""
    if not (word[0] == typed[0] or word[:2] == typed[1::-1]):
        return False
    edits = 2 if len(typed) >= LONG_TYPO else 1
    if OSA.distance(typed, word, score_cutoff=edits) <= edits:
        return True
    # Letters left out are the commonest slip of fast typing ('statles' for 'stateless'): two of them are still
    # a plausible word from five letters on, when every typed letter is the word's, in order.
    return len(typed) >= MIN_OMITTED and len(word) - len(typed) == 2 and _in_order(typed, word)


def _in_order(typed: str, word: str) -> bool:
    letters = iter(word)
    return all(letter in letters for letter in typed)


@functools.cache
def language_words() -> frozenset[str]:
    """The whole words of the bundled model's word-piece vocabulary (about 22,000 English words and common
    names): what tells a real word from a typo or from nonsense. Empty (those checks off) without the model's
    package."""
    try:
        path = semantic.bundled_model_dir() / "vocab.txt"
        return frozenset(word for word in path.read_text(encoding="utf-8").split() if word.isalpha())
    except (semantic.ModelIntegrityError, OSError):
        return frozenset()


INFLECTIONS = ("s", "es", "ed", "d", "ing", "er", "ers", "ly")  # what a word of the list may end with besides


def worded(terms: list[str]) -> bool:
    """Whether most of the terms are words of the language (``language_words``, or one of them with an ending
    of ``INFLECTIONS``): rows found by meaning alone answer only such a query, since the model finds 'Flake'
    close to 'flibber wobnak' (cosine 0.60)."""
    words = language_words()

    def word(term: str) -> bool:
        return term in words or any(term.endswith(end) and term[:-len(end)] in words for end in INFLECTIONS)

    return not words or 2 * sum(map(word, terms)) > len(terms)


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


def cliff(hits: list[Hit], share: float) -> int:
    """How many of the ranked hits to show: the first ``CLIFF_HEAD``, then those scoring at least ``share`` x
    the first's."""
    if len(hits) <= CLIFF_HEAD or hits[0].score <= 0:
        return len(hits)
    bar = share * hits[0].score
    return next((at for at in range(CLIFF_HEAD, len(hits)) if hits[at].score < bar), len(hits))


def _widened(budget: _Budget, words: Vocabulary, terms: list[str], expand_all: bool,
             known: Callable[[str], bool]) -> dict[str, list[str]]:
    """``_expansions``, whose first typo in a vocabulary builds its typo index: that once, out of the budget."""
    since, building = time.monotonic(), words._typos is None
    expansions = _expansions(words, terms, expand_all, known)
    if building and words._typos is not None:
        budget.excuse(since)
    return expansions


def search(targets: list[Target], *, query: str | None, compound: str | None, limit: int, fuzzy: bool,
           current: frozenset[uuid.UUID] = frozenset(), cut: bool = False) -> Found:
    """Search every target; ``query`` or ``compound`` (or both) must be given. Hits in the ``current`` bottles
    (where the caller's working directory is) rank ahead of others at comparable relevance. With ``cut``, rows
    far below the best are left out (``cliff``) and counted in ``Found.more``."""
    targets = [target for target in targets if target.kind == "capsule" or target.bottles]
    if not query:
        assert compound is not None
        listed = [_listing(target, compound, limit) for target in targets]
        return Found(_merge([hits for hits, _ in listed], limit, by_score=False),
                     sum(total for _, total in listed), used_fuzzy=False)
    terms = meaningful(extract_terms(query))
    ignored = max(0, len(terms) - MAX_TERMS)
    terms = terms[:MAX_TERMS]
    if not terms or not targets:
        return Found([], 0, used_fuzzy=False, ignored_terms=ignored)

    # First pass: the typed terms, widened at once for a term no searched database knows (a likely typo),
    # and for every term with ``fuzzy``. Without such a term this is the strict pass.
    vocabularies = [vocabulary(target) for target in targets]
    # Counted from here: reading a scope's vocabulary once (then cached) is not the query's cost.
    budget = _Budget()

    def known(term: str) -> bool:
        return any(words.has_prefix(term) for words in vocabularies)

    passes: list[tuple[dict[str, list[str]], list[_Candidate], int, dict[int, tuple[Any, ...]]]] = []
    partly_widened = False
    for target, words in zip(targets, vocabularies, strict=True):
        if passes and budget.spent():  # the first database is always searched: an answer has something
            passes.append(({}, [], 0, {}))
            continue
        expansions = _widened(budget, words, terms, fuzzy, known)
        partly_widened |= bool(expansions) and len(expansions) < sum(len(t) >= MIN_FUZZY_TERM for t in terms)
        passes.append((expansions, *_lexical(target, terms, expansions, compound, limit, words, budget)))
    if not fuzzy and len(query) >= MIN_FUZZY_QUERY and not budget.spent() and (
        not any(total for _, _, total, _ in passes)
        or (partly_widened and not any(_any_match(target, terms, compound, words)
                                       for target, words in zip(targets, vocabularies, strict=True)))
    ):
        # The strict pass finds nothing: the seed's fuzzy pass, every term of 4+ characters widened.
        passes = []
        for target, words in zip(targets, vocabularies, strict=True):
            expansions = _widened(budget, words, terms, True, known)
            passes.append((expansions, *_lexical(target, terms, expansions, compound, limit, words, budget))
                          if expansions else ({}, [], 0, {}))

    covered = max((c.coverage for _, lexical, _, _ in passes for c in lexical), default=0.0)
    lookup = covered >= FUZZY_COVERAGE * len(terms)
    # A look-up (every term matched) keeps its words' order, and rows found by meaning alone come after its words'
    # rows: when those already fill the page, neither the query's embedding nor the similarity scan can change the
    # answer, and neither is paid for. A model still loading is waited for briefly (a wait the time budget
    # excuses, as a load once per process); until it is ready, search is by words.
    page_full = lookup and sum(len(lexical) for _, lexical, _, _ in passes) >= limit
    loading = time.monotonic()
    model = None if page_full or budget.spent() else semantic.embedder(wait=semantic.SEARCH_WAIT)
    budget.excuse(loading)
    query_vector = semantic.embed_query(model, query) if model is not None else None
    meaning, floor = None, 1.0
    if model is not None and query_vector is not None:
        meaning = (LOOKUP_SIMILARITY_WEIGHT if lookup else SIMILARITY_WEIGHT if covered >= WEAK_SHARE * len(terms)
                   else WEAK_SIMILARITY_WEIGHT)
        # With nothing found by words, only a row very close in meaning may make the answer non-empty, and only
        # for a query made of words (worded()).
        words_found = any(lexical for _, lexical, _, _ in passes)
        floor = (model.floor - BESIDE_WORDS_MARGIN if words_found
                 else model.floor + semantic.ALONE_MARGIN if worded(terms) else 2.0)
    results = []
    total = 0
    for target, (expansions, lexical, lexical_total, rows) in zip(targets, passes, strict=True):
        candidates = list(lexical)
        if meaning is not None:
            assert model is not None and query_vector is not None
            by_meaning = _semantic(target, model, query_vector, compound, candidates, floor)
            candidates.extend(by_meaning)
            lexical_total += len(by_meaning)
        total += lexical_total
        results.append(_scored(target, candidates, rows, _Coverage(terms, expansions), len(terms), limit,
                               meaning=meaning, boosted=current, budget=budget))
    hits = _merge([r.hits for r in results], limit, by_score=True)
    shown = cliff(hits, CLIFF_LOOKUP if lookup else CLIFF_OTHER) if cut else len(hits)
    more, hits = len(hits) - shown, hits[:shown]
    expanded = set().union(*(r.expanded for r in results))
    by_meaning_ids = set().union(*(r.by_meaning for r in results))
    return Found(hits, total, used_fuzzy=any(hit.id in expanded for hit in hits),
                 used_semantic=any(hit.id in by_meaning_ids for hit in hits), ignored_terms=ignored,
                 partial=budget.cut, more=more)
