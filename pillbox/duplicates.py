"""Pills of one bottle that say the same thing: found by their text (the same words, or nearly), or by meaning
only above a measured cosine, and never when they differ in what makes a note worth keeping apart.

Three passes, each cheap at thousands of pills:

- exact: the same words once case, spacing, accents and punctuation are set aside (a dictionary of keys);
- near: rapidfuzz's ratio over the sorted words (token_sort_ratio), so a reworded, re-ordered or typo-fixed note
  is found; only for candidate pairs that share most of their words (prefix filtering on the rarest words, then
  one ``process.cpdist`` in C++), never for every pair;
- meaning: the bundled model's vectors, a matrix product a band of rows at a time, each note's closest few at or
  above ``MEANING_THRESHOLD``, which must still share ``MEANING_SHARED_WORDS`` of their words.

A pair found by any pass must still agree on its guards (``_same_claims``): the same numbers (30 s is not
60 s, port 5432 is not 5433, Python 3.11 is not 3.12), the same negations and opposite words (enable is not
disable, always is not never) and, when the words differ, no word swapped for an unrelated one (Alice is not
Bob, staging is not production); a changed word must look like a typo fix or another form of the same word.
The thresholds and guards are measured on ``bench/duplicate_cases.py`` by ``bench/duplicates.py``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from rapidfuzz import fuzz, process

if TYPE_CHECKING:
    import numpy as np

NEAR_THRESHOLD = 88.0  # token_sort_ratio (0-100) from which two texts are near-identical (bench/duplicates.py)
MEANING_THRESHOLD = 0.88  # cosine from which two texts may mean the same, the guards permitting (bench/duplicates.py)
BLOCK_CUTOFF = 80.0  # words two texts must share (Dice, 0-100) before their letters are compared
COMMON_SHARE = 0.05  # a word in more than this share of the texts is no key
COMMON_FLOOR = 50  # ... unless it is in at most this many: a bucket this small costs little
MEANING_SHARED_WORDS = 0.4  # by meaning, the share of meaningful words (Dice) two texts must still have in common
MEANING_NEIGHBOURS = 10  # by meaning, each note is compared with its closest few
MEANING_ROWS = 512
TYPO_SIMILARITY = 75.0  # a changed word at least this close (fuzz.ratio) to its counterpart is the same word
SWAP_LIMIT = 4  # by meaning, texts that differ by at most this many swapped words are look-alikes
FREE_ADDITIONS = 1  # words one text may add beyond the other's (an "also", a "the") and still say the same

EXACT, NEAR, MEANING = "exact", "near", "meaning"
MODES = (EXACT, NEAR, MEANING)

_WORD = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
_NOT = re.compile(r"n[’']t\b", re.IGNORECASE)
# Words whose presence flips or sets what a note says: two notes must carry the same ones to be duplicates.
POLAR = frozenset("""
    not no never none nothing nobody nor without cannot
    always enable enabled enables disable disabled disables off true false yes
    allow allowed allows deny denied denies block blocked forbid forbidden permit
    add added remove removed include included exclude excluded keep drop dropped
    before after above below more less most least min max minimum maximum
    increase increased decrease decreased raise lower higher upper
    start stop started stopped open close opened closed public private sync async
    accept accepted reject rejected must mustn should shouldn required optional
    old new newer older early late earlier later
    synchronous asynchronous local remote internal external
""".split())
STOPWORDS = frozenset("""
    a an the and or of to in on at for by with from as is are was were be been being it its this that these those
    we you they i our your their us do does did so then also just very too can could would will shall may might
    there here which who what when where how into onto out up down about via per than has have had s
""".split()) - POLAR


@dataclass(frozen=True)
class Note:
    """One pill as the passes see it: its id, its text, when it was made, how often it was read, its vector."""

    id: str
    title: str
    content: str
    created_at: datetime
    views: int = 0
    vector: np.ndarray | None = None


@dataclass(frozen=True)
class Link:
    mode: str
    score: float  # token_sort_ratio 0-100 for exact and near, cosine for meaning


@dataclass
class Group:
    keeper: Note
    others: list[Note]
    links: dict[str, Link] = field(default_factory=dict)  # other's id -> how it matched the keeper
    keeper_reason: str = ""

    @property
    def members(self) -> list[Note]:
        return [self.keeper, *self.others]


@dataclass(frozen=True)
class _Shape:
    words: tuple[str, ...]
    key: str  # the words joined: the exact pass's key
    sorted_key: str  # the words sorted and joined: the near pass's text, so that re-ordered sentences still match
    content: Counter[str]  # words that carry meaning, counted
    numbers: frozenset[str]
    polar: frozenset[str]


def words(text: str) -> list[str]:
    folded = _NOT.sub(" not", text).casefold()
    if not folded.isascii():
        folded = "".join(char for char in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(char))
    return [_number(word) if word[0].isdigit() else word for word in _WORD.findall(folded)]


def _number(word: str) -> str:
    """1,000 and 1000 are one number; 1.5 keeps its point (a version or a fraction)."""
    return word.replace(",", "")


def _shape(note: Note) -> _Shape:
    tokens = words(f"{note.title}\n{note.content}")
    return _Shape(
        words=tuple(tokens),
        key=" ".join(tokens),
        sorted_key=" ".join(sorted(tokens)),
        content=Counter(token for token in tokens if token not in STOPWORDS and not token[0].isdigit()),
        numbers=frozenset(token for token in tokens if token[0].isdigit()),
        polar=frozenset(token for token in tokens if token in POLAR),
    )


def _same_word(a: str, b: str) -> bool:
    """A typo fix or another form of one word (deploy, deploys, deploying)."""
    if len(a) >= 4 and len(b) >= 4 and (a.startswith(b[:4]) and b.startswith(a[:4])):
        return fuzz.ratio(a, b) >= 60
    return fuzz.ratio(a, b) >= TYPO_SIMILARITY


def _unpaired(left: list[str], right: list[str]) -> tuple[list[str], list[str]]:
    """The words of each side with no counterpart on the other once typo fixes and word forms are paired."""
    rest = list(right)
    alone = []
    for word in left:
        match = next((other for other in rest if _same_word(word, other)), None)
        if match is None:
            alone.append(word)
        else:
            rest.remove(match)
    return alone, rest


def _same_claims(a: _Shape, b: _Shape, mode: str) -> bool:
    if a.numbers != b.numbers or a.polar != b.polar:
        return False
    if mode == MEANING and _shared(a, b) < MEANING_SHARED_WORDS:
        return False  # close vectors, different words: two notes on one subject, not one note said twice
    left, right = _unpaired(list((a.content - b.content).elements()), list((b.content - a.content).elements()))
    if mode == MEANING:
        # A paraphrase changes many words by design; one or two words swapped in the same sentence is a look-alike
        # (minutes for hours, high for low), however close the two mean.
        return not (left and right and len(left) + len(right) <= SWAP_LIMIT)
    if left and right:
        return False  # a word swapped for an unrelated one: another name, another place, another tool
    return len(left) + len(right) <= FREE_ADDITIONS


def _shared(a: _Shape, b: _Shape) -> float:
    """The share of their meaningful words two texts have in common (Dice, 0-1)."""
    total = sum(a.content.values()) + sum(b.content.values())
    return 2 * sum((a.content & b.content).values()) / total if total else 1.0


def _keeper_order(note: Note) -> tuple[int, datetime, str]:
    return (note.views, note.created_at, note.id)


def links(notes: Sequence[Note], *, modes: Sequence[str] = (EXACT, NEAR), near: float = NEAR_THRESHOLD,
          meaning: float = MEANING_THRESHOLD) -> dict[tuple[int, int], Link]:
    """Every pair (i < j) of ``notes`` that says the same thing, with the first pass that found it."""
    shapes = [_shape(note) for note in notes]
    found: dict[tuple[int, int], Link] = {}

    def consider(i: int, j: int, link: Link) -> None:
        pair = (min(i, j), max(i, j))
        if pair not in found and _same_claims(shapes[i], shapes[j], link.mode):
            found[pair] = link

    if EXACT in modes:
        by_key: dict[str, list[int]] = {}
        for index, shape in enumerate(shapes):
            by_key.setdefault(shape.key, []).append(index)
        for same in by_key.values():
            for position, i in enumerate(same):
                for j in same[position + 1:]:
                    consider(i, j, Link(EXACT, 100.0))
    if NEAR in modes and len(notes) > 1:
        for i, j, score in _near_pairs(shapes, near):
            consider(i, j, Link(NEAR, score))
    if MEANING in modes and len(notes) > 1:
        for i, j, score in _meaning_pairs(notes, meaning):
            consider(i, j, Link(MEANING, score))
    return found


def _near_pairs(shapes: list[_Shape], cutoff: float) -> list[tuple[int, int, float]]:
    """Pairs whose sorted words are at least ``cutoff`` alike (fuzz.ratio over the sorted words, which is
    token_sort_ratio without sorting each pair again), among the candidates ``_blocks`` gives."""
    import numpy as np

    pairs = _blocks(shapes)
    if not pairs:
        return []
    left, right = [i for i, _ in pairs], [j for _, j in pairs]
    scores = process.cpdist([shapes[i].sorted_key for i in left], [shapes[j].sorted_key for j in right],
                            scorer=fuzz.ratio, score_cutoff=cutoff, dtype=np.uint8, workers=-1)
    return [(i, j, float(score)) for i, j, score in zip(left, right, scores, strict=True) if score]


def _blocks(shapes: list[_Shape]) -> list[tuple[int, int]]:
    """Candidate pairs (i < j) whose words are at least ``BLOCK_CUTOFF`` alike (Dice), found by prefix filtering:
    two texts that alike must share one of the rarest words of each (as many as could be missing from a text while
    it still shares enough), so only those are indexed. A word in more than ``COMMON_SHARE`` of the texts (and
    more than ``COMMON_FLOOR``) is never indexed: it would pair nearly everything."""
    frequency: Counter[str] = Counter()
    distinct = [set(shape.words) for shape in shapes]
    for words_of_one in distinct:
        frequency.update(words_of_one)
    common = max(COMMON_FLOOR, int(len(shapes) * COMMON_SHARE))
    share = BLOCK_CUTOFF / 100
    least = share / (2 - share)  # the share of a text's own words any text that alike must have in common with it
    buckets: dict[str, list[int]] = {}
    for index, words_of_one in enumerate(distinct):
        rarest = sorted(words_of_one, key=lambda word: (frequency[word], word))
        for word in rarest[:len(rarest) - math.ceil(least * len(rarest)) + 1]:
            if frequency[word] <= common:
                buckets.setdefault(word, []).append(index)
    pairs = sorted({(i, j) for members in buckets.values() for at, i in enumerate(members) for j in members[at + 1:]})
    if not pairs:
        return []
    import numpy as np

    codes: dict[str, str] = {}
    coded = ["".join(sorted(_code(codes, word) for word in shape.words)) for shape in shapes]
    shared = process.cpdist([coded[i] for i, _ in pairs], [coded[j] for _, j in pairs], scorer=fuzz.ratio,
                            score_cutoff=BLOCK_CUTOFF, dtype=np.uint8, workers=-1)
    return [pair for pair, score in zip(pairs, shared, strict=True) if score]


def _code(codes: dict[str, str], word: str) -> str:
    """One character per distinct word (past the surrogates, which a str may not hold alone), so that letter
    ratio over coded texts is the share of words they have in common."""
    code = codes.get(word)
    if code is None:
        number = len(codes) + 0x100
        code = codes[word] = chr(number if number < 0xD800 else number + 0x800)
    return code


def _meaning_pairs(notes: Sequence[Note], cutoff: float) -> list[tuple[int, int, float]]:
    import numpy as np

    indexes = [index for index, note in enumerate(notes) if note.vector is not None]
    if len(indexes) < 2:
        return []
    matrix = np.stack([np.asarray(notes[index].vector, dtype=np.float32) for index in indexes])
    found = []
    count = len(indexes)
    for start in range(0, count, MEANING_ROWS):  # a band of rows at a time: memory stays flat
        cosines = matrix[start:start + MEANING_ROWS] @ matrix.T
        band = np.arange(start, min(start + MEANING_ROWS, count))
        cosines[np.arange(len(band))[:, None] >= (np.arange(count)[None, :] - start)] = -1.0  # each pair once
        if count > MEANING_NEIGHBOURS:
            # A note's closest few only: a bottle of near-alike notes must not make the guards check every pair.
            nearest = np.argpartition(-cosines, MEANING_NEIGHBOURS - 1, axis=1)[:, :MEANING_NEIGHBOURS]
            keep = np.zeros_like(cosines, dtype=bool)
            np.put_along_axis(keep, nearest, True, axis=1)
            cosines[~keep] = -1.0
        rows, columns = np.nonzero(cosines >= cutoff)
        found += [(indexes[start + i], indexes[j], float(cosines[i, j])) for i, j in zip(rows, columns, strict=True)]
    return found


def groups(notes: Sequence[Note], *, modes: Sequence[str] = (EXACT, NEAR), near: float = NEAR_THRESHOLD,
           meaning: float = MEANING_THRESHOLD) -> list[Group]:
    """Groups of notes that say the same thing, each around the note to keep (the most read, then the newest):
    every other member matched the keeper itself, so a chain (A like B, B like C, A unlike C) is never one group.
    Ordered by their keeper's place in ``notes``."""
    found = links(notes, modes=modes, near=near, meaning=meaning)
    neighbours: dict[int, dict[int, Link]] = {}
    for (i, j), link in found.items():
        neighbours.setdefault(i, {})[j] = link
        neighbours.setdefault(j, {})[i] = link
    taken: set[int] = set()
    result: list[tuple[int, Group]] = []
    for index in sorted(neighbours, key=lambda at: _keeper_order(notes[at]), reverse=True):
        if index in taken:
            continue
        members = sorted((other for other in neighbours[index] if other not in taken),
                         key=lambda at: _keeper_order(notes[at]), reverse=True)
        if not members:
            continue
        taken.update([index, *members])
        keeper = notes[index]
        group = Group(keeper=keeper, others=[notes[at] for at in members],
                      links={notes[at].id: neighbours[index][at] for at in members})
        group.keeper_reason = _why_keep(keeper, group.others)
        result.append((index, group))
    return [group for _, group in sorted(result, key=lambda entry: entry[0])]


def _why_keep(keeper: Note, others: Sequence[Note]) -> str:
    if any(other.views != keeper.views for other in others):
        return f"the most read ({_times(keeper.views)})"
    return "the newest" if len(others) > 1 or others[0].created_at != keeper.created_at else "the last stored"


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def describe(link: Link) -> str:
    if link.mode == EXACT:
        return "the same text (case, spacing and punctuation aside)"
    if link.mode == NEAR:
        return f"near-identical text ({link.score:.0f} % alike)"
    return f"the same meaning (cosine {link.score:.2f})"
