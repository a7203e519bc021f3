"""Which of the query's terms a row's text matches (``Coverage``): the row's coverage for the ranking, how it
matched for the answer, and the words around the terms for its snippet."""

from __future__ import annotations

import bisect
import re
import unicodedata
from itertools import accumulate

from pillbox.search import snippets
from pillbox.search.results import ALL_WORDS, CORRECTED_WORDS, SOME_WORDS
from pillbox.tokens import WORD

SNIPPET_TOKENS = 24
FUZZY_COVERAGE = 0.9  # a term matched only through a typo expansion, against 1 for a typed term
WORDS_APART = re.compile(r"([^\W_]+)")  # WORD, kept by re.split between the text around the words
COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


class Coverage:
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
