"""A search never answers a row a newer one supersedes (unless asked): by words, in a listing, and by meaning, whose
vectors kept in memory follow the mark through the change log."""

from __future__ import annotations

from dataclasses import replace

from pillbox import superseding
from pillbox.search import meaning as by_meaning
from pillbox.search.engine import search
from tests.pillbox.search.pills import OTHERS, PARAPHRASE_QUERY, PARAPHRASE_TARGET
from tests.pillbox.search.test_search_incremental import (  # noqa: F401 (_in_process: a fixture)
    DIMENSIONS,
    Memory,
    _in_process,
    fresh_copy,
    kept_copy,
    read_since,
    settle,
)


def test_a_superseded_row_never_comes_back_by_meaning_and_returns_on_undo(alice, meaning):
    """The vectors kept in memory follow the mark through the change log: the superseded row is dropped from the
    copy (nothing read again but that row), and taken back when the newer one no longer names it."""
    memory = Memory(alice, "ops")
    for title, content in OTHERS:
        memory.store(title, content)
    target = memory.store(*PARAPHRASE_TARGET)
    newer = memory.store("Release notes", "Written by hand for every tag.")
    settle()
    by_meaning._vectors.clear()
    assert memory.found(PARAPHRASE_QUERY)[0] == target.seq  # found by meaning alone: not one word is shared

    superseding.pill_supersede(reach=memory.reach, pill_id=newer.id.hex, supersedes=[target.id.hex])
    found: list[int] = []
    assert read_since(lambda: found.extend(memory.found(PARAPHRASE_QUERY))) == 0  # dropped, nothing read
    assert target.seq not in found
    model_key = meaning.key
    assert kept_copy(memory.target, model_key, DIMENSIONS) == fresh_copy(memory.target, model_key, DIMENSIONS)
    assert target.seq not in kept_copy(memory.target, model_key, DIMENSIONS)[0]
    asked = replace(memory.target, include_superseded=True)
    assert [hit.seq for hit in search([asked], query=PARAPHRASE_QUERY, compound=None, limit=20,
                                      fuzzy=False).hits][0] == target.seq

    superseding.pill_supersede(reach=memory.reach, pill_id=newer.id.hex, supersedes=[])
    assert read_since(lambda: found.extend(memory.found(PARAPHRASE_QUERY))) == 1  # that row, back
    assert memory.found(PARAPHRASE_QUERY)[0] == target.seq
