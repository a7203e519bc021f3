"""Telling a typo from a word: the typo index over a vocabulary (``TypoIndex``), the corrections a person could
have meant (``plausible``), and the words of the language (``language_words``, ``worded``)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from rapidfuzz.distance import OSA

from pillbox.embeddings import embedders

if TYPE_CHECKING:
    import numpy as np

MAX_LEN_DIFF = 2
TYPO_PREFIX = 7  # characters of a word its typo index files it under (SymSpell's prefix length)
# A correction a person could plausibly have meant (see plausible()): on the public recall set every typo of
# kind b is one edit from its word (39 of 39 kept); nonsense words are two or more from any indexed word.
LONG_TYPO = 8  # a typed word this long may be two edits from the word meant; a shorter one, one edit
MIN_OMITTED = 5  # or, from this length, two letters left out (plausible())


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
        # Words added and removed since the build (a vocabulary kept in step with writes): filed apart.
        self.added: dict[int, set[str]] = {}
        self.gone: set[str] = set()

    def add(self, word: str) -> None:
        self.gone.discard(word)
        head = word[:TYPO_PREFIX]
        for key in {_pack(head), *(_pack(head[:at] + head[at + 1:]) for at in range(len(head)))}:
            self.added.setdefault(key, set()).add(word)

    def remove(self, word: str) -> None:
        self.gone.add(word)

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
        found = {self.words[at] for at in ids}
        found.update(word for probe in probes for word in self.added.get(int(probe), ()))
        return [word for word in found if word not in self.gone and abs(len(word) - len(term)) <= MAX_LEN_DIFF]


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
        path = embedders.bundled_model_dir() / "vocab.txt"
        return frozenset(word for word in path.read_text(encoding="utf-8").split() if word.isalpha())
    except (embedders.ModelIntegrityError, OSError):
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
