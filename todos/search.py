"""Fuzzy, word-level search over to-do items (name + Markdown description).

Pure Python + rapidfuzz; no Django here so it can be tested and benchmarked alone.

How a query is answered:

1. Text is folded (NFKD, combining marks dropped, casefolded) and cut into words of
   letters/digits only, so Markdown punctuation, underscores and URL separators never
   become words. camelCase / PascalCase identifiers also contribute their parts, so
   "validator" finds "OAuth2Validator".
2. Each query word is expanded against the sorted vocabulary: the exact word, words it
   is a prefix of (bisect), and, when the word itself is not in the vocabulary, words
   within a small, length-dependent edit distance (rapidfuzz OSA, so a transposition is
   one edit). Every expansion carries a quality in (0, 1].
3. A document's score for a query word is the best quality x BM25F weight over the
   expansions it contains (name field boosted over the description). The document's
   total is dominated by coverage, the idf-weighted share of query words it matches, so
   a todo matching every word beats one matching a single word very strongly; BM25F and
   a small bonus for query words adjacent in the document break the remaining ties.
4. Documents that match no query word are never returned, so a query unrelated to every
   todo gives [].
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate

from rapidfuzz import process
from rapidfuzz.distance import OSA

__all__ = ["Doc", "TodoIndex", "fold", "tokenize"]

MAX_QUERY_CHARS = 1000

# BM25F parameters. The name is a short, deliberate summary of the todo, so a word there
# says more about the todo than the same word somewhere in a long description.
NAME_WEIGHT = 2.5
DESC_WEIGHT = 1.0
NAME_B = 0.5
DESC_B = 0.75
K1 = 1.2

# Expansion qualities: an exact word must beat a completion of it, and a completion
# must beat a guess at a typo of roughly the same length.
PREFIX_BASE = 0.55
FUZZY_QUALITY = 0.8

# Coverage dominates relevance, as in engines that rank AND-matches above OR-matches:
# at this scale one more matched query word outweighs any realistic BM25F difference
# (a single word's BM25F is at most idf * (K1 + 1), about 15 for a word seen once in
# 1,200 todos), yet BM25F still orders documents of equal coverage.
COVERAGE_SCALE = 30.0
ADJACENT_BONUS = 0.6

MIN_PREFIX_LEN = 2
MAX_PREFIX_EXPANSIONS = 64
MIN_FUZZY_LEN = 4

# Sorts after every character, so [word, word + _MAX_CHAR) is the range of completions.
_MAX_CHAR = chr(0x10FFFF)
_WORD_RE = re.compile(r"[^\W_]+")
# For ASCII text the same words, cut in C: every ASCII character that is not a letter or a digit becomes a space
# (and, when many fields are cut at once, the NUL between them stays).
_ASCII_GAPS = bytes(c if c < 128 and chr(c).isalnum() else 32 for c in range(256))
_SEPARATOR = "\x00"
_ASCII_GAPS_BETWEEN_FIELDS = bytes(c if c < 128 and chr(c).isalnum() or c == 0 else 32 for c in range(256))
# No character below U+0300 is a combining mark: only runs from there on are read one character at a time.
_MARKS_RE = re.compile("[\u0300-\U0010ffff]+")
# A capital after a small letter or a digit, where a camelCase word splits; the capital comes first in the
# pattern so that the regex engine skips from capital to capital over the rest.
_CAMEL_HINT_RE = re.compile(r"[A-Z](?<=[a-z0-9][A-Z])")
# Splits "OAuth2Validator" into OAuth2 / Validator and "HTTPServer" into HTTP / Server.
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+")


@dataclass(frozen=True, slots=True)
class Doc:
    key: str
    name: str
    description: str


def fold(text: str) -> str:
    """Lowercase and strip diacritics so "Café" and "cafe" are the same word."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return _MARKS_RE.sub(_without_combining, decomposed).casefold()


def _without_combining(run: re.Match[str]) -> str:
    return "".join(ch for ch in run.group() if not unicodedata.combining(ch))


def tokenize(text: str) -> list[str]:
    """Folded words of text, in order. Used for queries (no camelCase parts)."""
    if text.isascii():
        return text.lower().encode().translate(_ASCII_GAPS).decode().split()
    return _WORD_RE.findall(fold(text))


def _fields_tokens(texts: list[str]) -> tuple[list[list[str]], list[list[str]]]:
    """(positional words, searchable words) of each document field.

    The searchable words add the parts of camelCase identifiers, kept out of the positional list so adjacency of
    the real words is not disturbed. An index is thousands of fields, so they are cut together, in a few passes
    of C over all of them; queries are cut with the same rule, so a word always reads the same both ways.
    """
    blob = _SEPARATOR.join(texts)
    if texts and blob.count(_SEPARATOR) == len(texts) - 1:
        cut = blob.lower().encode().translate(_ASCII_GAPS_BETWEEN_FIELDS).decode().split(_SEPARATOR)
        words = [field.split() if text.isascii() else tokenize(text) for field, text in zip(cut, texts, strict=True)]
    else:  # a field holding the separator itself
        words = [tokenize(text) for text in texts]
    searchable = list(words)
    starts = list(accumulate((len(text) + 1 for text in texts), initial=0))
    end = 0
    # Most fields have no lower-to-upper transition at all: only the words holding one are read again.
    for hint in _CAMEL_HINT_RE.finditer(blob):
        if hint.start() < end:  # another transition in the word just read
            continue
        start = hint.start()
        while start and blob[start - 1].isalnum():  # back to the word's first letter (isalnum is [^\W_])
            start -= 1
        word = _WORD_RE.match(blob, start)
        assert word is not None
        end = word.end()
        pieces = _CAMEL_RE.findall(word.group())
        if len(pieces) > 1:
            i = bisect_right(starts, start) - 1
            if searchable[i] is words[i]:
                searchable[i] = list(words[i])
            # The pieces are ASCII letters and digits: folding them is lowering them.
            searchable[i].extend(piece.lower() for piece in pieces)
    return words, searchable


def _fuzzy_max_edits(length: int) -> int:
    # One edit in a four-letter word is already a quarter of it; allow a second edit
    # only when the word is long enough that two edits still leave it recognisable.
    if length < MIN_FUZZY_LEN:
        return 0
    return 1 if length < 8 else 2


class TodoIndex:
    """Immutable search index over a fixed set of todos; build once, search often.

    A process builds it at its first search, so the build does only what every search needs: the words of each
    todo and their weighted field frequencies. A word's BM25F weights are made the first time a query reaches
    it, and kept.
    """

    __slots__ = ("_keys", "_tf", "_weights", "_vocab", "_by_length", "_fields", "_key_rank", "approximate_bytes")

    def __init__(
        self,
        keys: list[str],
        tf: dict[str, dict[int, float]],
        fields: list[tuple[list[str], list[str]]],
    ) -> None:
        self._keys = keys
        # word -> {todo: length-normalised, weighted frequency over both fields}; its length is the word's df.
        self._tf = tf
        self._weights: dict[str, dict[int, float]] = {}
        self._vocab = sorted(tf)
        by_length: dict[int, list[str]] = {}
        for word in self._vocab:
            by_length.setdefault(len(word), []).append(word)
        self._by_length = by_length
        # Word sequences of (name, description), kept for the adjacency check.
        self._fields = fields
        # Ties are broken by key so equal-scoring results never depend on input order.
        rank = [0] * len(keys)
        for r, i in enumerate(sorted(range(len(keys)), key=keys.__getitem__)):
            rank[i] = r
        self._key_rank = rank
        # CPython's rough cost of what this index holds (a dict slot and float per posting, twice: its frequency
        # and, once searched, its weight; a list slot and a shared str per word): enough for a cache to bound its
        # memory, not an exact measure.
        self.approximate_bytes = (
            sum(len(word) + 160 + 240 * len(docs) for word, docs in tf.items())
            + sum(16 * (len(name) + len(description)) + 120 for name, description in fields)
            + sum(len(key) + 90 for key in keys)
        )

    @classmethod
    def build(cls, docs: Iterable[Doc]) -> TodoIndex:
        rows = list(docs)
        keys = [doc.key for doc in rows]
        name_words, name_all = _fields_tokens([doc.name for doc in rows])
        desc_words, desc_all = _fields_tokens([doc.description for doc in rows])
        fields = list(zip(name_words, desc_words, strict=True))
        searchable = zip(name_all, desc_all, strict=True)

        n = len(keys)
        # Field lengths count real words only; camelCase parts are bonus vocabulary.
        avg_name = (sum(len(f[0]) for f in fields) / n if n else 0.0) or 1.0
        avg_desc = (sum(len(f[1]) for f in fields) / n if n else 0.0) or 1.0

        # BM25F: field frequencies are length-normalised, weighted and summed before
        # saturation, so a word repeated in both fields is not two independent matches.
        field_tf: dict[str, dict[int, float]] = {}
        for i, (n_all, d_all) in enumerate(searchable):
            n_words, d_words = fields[i]
            name_norm = NAME_WEIGHT / (1.0 - NAME_B + NAME_B * len(n_words) / avg_name)
            desc_norm = DESC_WEIGHT / (1.0 - DESC_B + DESC_B * len(d_words) / avg_desc)
            tf: dict[str, float] = {}
            for w in n_all:
                tf[w] = tf.get(w, 0.0) + name_norm
            for w in d_all:
                tf[w] = tf.get(w, 0.0) + desc_norm
            for w, f in tf.items():
                entry = field_tf.get(w)
                if entry is None:
                    field_tf[w] = {i: f}
                else:
                    entry[i] = f
        return cls(keys, field_tf, fields)

    def _idf(self, word: str) -> float:
        df = len(self._tf[word])
        return math.log(1.0 + (len(self._keys) - df + 0.5) / (df + 0.5))

    def _postings(self, word: str) -> dict[int, float]:
        """The word's BM25F weight in each todo holding it, made once (threads making it at once agree)."""
        weights = self._weights.get(word)
        if weights is None:
            k1 = K1
            scale = self._idf(word) * (k1 + 1.0)
            weights = {i: scale * f / (f + k1) for i, f in self._tf[word].items()}
            self._weights[word] = weights
        return weights

    def __len__(self) -> int:
        return len(self._keys)

    def _expand(self, word: str) -> dict[str, float]:
        """Vocabulary words that may stand for a query word, with a quality each."""
        found: dict[str, float] = {}
        tf = self._tf
        exact = word in tf
        if exact:
            found[word] = 1.0
        if len(word) >= MIN_PREFIX_LEN:
            vocab = self._vocab
            lo = bisect_left(vocab, word)
            hi = bisect_left(vocab, word + _MAX_CHAR, lo)
            completions = vocab[lo + 1 : hi] if exact else vocab[lo:hi]
            if len(completions) > MAX_PREFIX_EXPANSIONS:
                # A very short fragment can stand for hundreds of words; keep the ones
                # in the most todos (the likeliest meaning) so latency stays bounded.
                completions = heapq.nlargest(MAX_PREFIX_EXPANSIONS, completions, key=lambda w: len(tf[w]))
            m = len(word)
            for cand in completions:
                # A fragment covering most of the word is nearly as good as the word.
                found[cand] = PREFIX_BASE + (1.0 - PREFIX_BASE) * 0.9 * m / len(cand)
        if not exact:
            k = _fuzzy_max_edits(len(word))
            if k:
                by_length = self._by_length
                m = len(word)
                choices: list[str] = []
                for length in range(m - k, m + k + 1):
                    bucket = by_length.get(length)
                    if bucket:
                        choices.extend(bucket)
                for cand, dist, _ in process.extract(word, choices, scorer=OSA.distance, score_cutoff=k, limit=None):
                    q = FUZZY_QUALITY * (1.0 - dist / (m + 1))
                    if q > found.get(cand, 0.0):
                        found[cand] = q
        return found

    def search(self, query: str, limit: int = 20) -> list[str]:
        """Keys of the best-matching todos, best first; [] when nothing matches."""
        if limit <= 0 or not query:
            return []
        words = tokenize(query[:MAX_QUERY_CHARS])
        if not words:
            return []
        # Repeated query words add nothing but noise to coverage.
        terms = list(dict.fromkeys(words))
        idf = self._idf

        expansions: list[dict[str, float]] = []
        importance: list[float] = []
        for term in terms:
            exp = self._expand(term)
            expansions.append(exp)
            if exp:
                # A query word is as informative as the rarest reading we trust most.
                importance.append(max(idf(w) * q for w, q in exp.items()))
            else:
                importance.append(0.0)
        total_importance = sum(importance)
        if total_importance <= 0.0:
            return []

        # score[d] accumulates coverage*scale + bm25f; best_word[t][d] remembers which
        # vocabulary word matched so adjacency can be checked on the few top documents.
        scores: dict[int, float] = {}
        matched_words: list[dict[int, str]] = []
        for exp, imp in zip(expansions, importance, strict=True):
            best: dict[int, float] = {}
            best_word: dict[int, str] = {}
            for w, q in exp.items():
                for d, weight in self._postings(w).items():
                    s = q * weight
                    if s > best.get(d, 0.0):
                        best[d] = s
                        best_word[d] = w
            matched_words.append(best_word)
            cov = COVERAGE_SCALE * imp / total_importance
            for d, s in best.items():
                w = best_word[d]
                # Coverage credit scales with how good a reading of the query word the
                # matched vocabulary word is (exact > completion > typo).
                credit = cov * exp[w] + s
                scores[d] = scores.get(d, 0.0) + credit
        if not scores:
            return []

        if len(terms) > 1:
            self._adjacency_bonus(scores, matched_words, limit)

        rank = self._key_rank
        top = heapq.nsmallest(limit, scores.items(), key=lambda it: (-it[1], rank[it[0]]))
        keys = self._keys
        return [keys[d] for d, _ in top]

    def _adjacency_bonus(self, scores: dict[int, float], matched_words: list[dict[int, str]], limit: int) -> None:
        # Only candidates that could still reach the top `limit` with the largest possible
        # bonus are examined, which keeps this cheap for broad queries.
        pairs = len(matched_words) - 1
        if len(scores) > limit:
            cutoff = heapq.nlargest(limit, scores.values())[-1] - ADJACENT_BONUS * pairs
            candidates = [d for d, s in scores.items() if s >= cutoff]
        else:
            candidates = list(scores)
        fields = self._fields
        for d in candidates:
            bonus = 0.0
            for t in range(pairs):
                a = matched_words[t].get(d)
                b = matched_words[t + 1].get(d)
                if a is not None and b is not None and a != b:
                    if _adjacent(fields[d][0], a, b) or _adjacent(fields[d][1], a, b):
                        bonus += ADJACENT_BONUS
            if bonus:
                scores[d] += bonus


def _adjacent(words: list[str], a: str, b: str) -> bool:
    """True when a and b stand next to each other in words, in either order.

    Scanning with list.index runs in C and only touches the few top candidates, which is
    cheaper overall than materialising word-pair sets for every document at build time.
    """
    last = len(words) - 1
    start = 0
    while True:
        try:
            i = words.index(a, start)
        except ValueError:
            return False
        if (i < last and words[i + 1] == b) or (i > 0 and words[i - 1] == b):
            return True
        start = i + 1
