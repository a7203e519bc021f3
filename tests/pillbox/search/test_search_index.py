"""What keeps pill search fast on a large index: typo candidates from an index over the vocabulary, counts
through the words a prefix covers, and the rows matching every term ranked first when many rows match some.
"""

from __future__ import annotations

import pytest
from rapidfuzz import process
from rapidfuzz.distance import JaroWinkler

from mcp_bridge.tools import Caller
from pillbox.global_db import GLOBAL
from pillbox.search import engine, lexical, typos
from pillbox.search.results import Found
from pillbox.search.targets import Target
from pillbox.search.vocabulary import JW_THRESHOLD, MAX_EXPANSIONS, Vocabulary

WORDS = ["authentication", "authenticate", "authorization", "colour", "colours", "migration", "migrations",
         "migrate", "middleware", "test", "tests", "testing", "token", "tokens", "webhook", "webhooks", "über"]


def full_scan(term: str, words: list[str]) -> list[str]:
    """The correction a scan of the whole vocabulary gives (what the typo index must not lose)."""
    near = sorted((word for word in words if abs(len(word) - len(term)) <= typos.MAX_LEN_DIFF),
                  key=lambda word: (len(word), word))
    found = process.extract(term, near, scorer=JaroWinkler.similarity, score_cutoff=JW_THRESHOLD,
                            limit=MAX_EXPANSIONS + 1)
    return [word for word, _, _ in found if word != term][:MAX_EXPANSIONS]


@pytest.mark.parametrize("typo", ["migartion", "migraton", "migrattion", "nigration", "authentcation",
                                  "color", "colouur", "tokn", "webhok", "uber", "übr"])
def test_typo_index_offers_what_a_full_scan_offers_for_one_edit(typo):
    vocabulary = Vocabulary.of(list(WORDS))
    assert vocabulary.near(typo) == full_scan(typo, WORDS) != []


def test_typo_index_files_nothing_far_from_the_term():
    index = typos.TypoIndex(sorted(WORDS))
    assert set(index.candidates("migartion")) == {"migration", "migrations"}
    assert index.candidates("zzzzzz") == []


def test_vocabulary_spells_out_a_prefix_only_when_it_covers_few_words():
    vocabulary = Vocabulary.of(list(WORDS), exact=True)
    assert vocabulary.with_prefix("test", 3) == ["test", "testing", "tests"]
    assert vocabulary.with_prefix("test", 2) is None
    assert vocabulary.with_prefix("toke", 5) == ["token", "tokens"]
    assert vocabulary.with_prefix("zebra", 5) == []
    assert vocabulary.with_prefix("über", 5) == ["über"]


def test_search_many_matches_ranks_the_rows_matching_every_word_first(alice, monkeypatch):
    from pillbox.access import reach_for
    from pillbox.services import capsule_store

    reach = reach_for(Caller(user=alice.user, transport="http", workdir=None))
    both = [capsule_store(reach=reach, title=f"Retry {n}", content="payment backoff", compound="x").id
            for n in range(25)]
    for n in range(40):  # each says "payment" often: bm25 puts them ahead of rows that also say "backoff"
        capsule_store(reach=reach, title=f"Payment {n}", content="payment payment payment", compound="x")
    target = [Target(alias=GLOBAL, kind="capsule", owner_id=alice.user.pk)]

    def found() -> Found:
        return engine.search(target, query="payment backoff", compound=None, limit=20, fuzzy=False)

    ranked_all = found()
    monkeypatch.setattr(lexical, "RANK_ALL_UP_TO", 10)  # what an index of many thousand matching rows does
    every_term_first = found()
    assert ranked_all.total == every_term_first.total == 65
    assert [hit.id for hit in every_term_first.hits] == [hit.id for hit in ranked_all.hits]
    assert set(hit.id for hit in every_term_first.hits) < set(both)
