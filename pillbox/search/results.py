"""What a search answers: its rows (``Hit``), how each matched the query (``MATCHES``), and the answer
(``Found``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass


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
    similarity: float = 0.0  # the row's cosine with the query (0 without meaning)


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
    confidence: str = ""  # high, medium or low: how sure the first row answers the query ("" without rows)

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


def as_uuid(value: str | uuid.UUID) -> uuid.UUID:
    """SQLite hands back UUIDs as hex text, PostgreSQL as UUIDs."""
    return value if isinstance(value, uuid.UUID) else uuid.UUID(value)
