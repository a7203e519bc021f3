"""The same recall on both backends: the global database (SQLite here, PostgreSQL in CI's second pass) cuts text
into the same words, ranks with what bm25 weighs (rarity in the caller's scope, row length) and gives the same
order twice."""

from __future__ import annotations

import pytest

from tests.clients import run
from tests.pillbox.scenario import hit_ids, http_session, site_fixture  # noqa: F401 (a fixture)
from tests.pillbox.search.recall import stocked

LONG = ("Database migration notes", " ".join(
    ["The database schema changed; database backups ran; data loaders read the database dump again."] * 12))
SHORT = ("Removed test data", "Deleted the fixtures.")
PATHS = ("Docs build", "Sphinx reads docs/conf.py and tests/app/idp/requirements.txt; see "
         "https://example.org/setup-guide and oauth2validator._extract_basic_auth in v2.3.")


@pytest.fixture(autouse=True)
def words_only(monkeypatch):
    monkeypatch.setenv("EMBEDDINGS", "off")


@pytest.mark.parametrize("query", ["conf", "requirements", "idp", "guide", "extract basic", "oauth2validator"])
def test_search_a_word_inside_a_path_a_url_or_a_dotted_name_is_found(site, alice, query):
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            [paths, _] = await stocked(call, "docs", [PATHS, ("Other", "Nothing to see.")])
            assert hit_ids((await call("pill_search", query=query)).ok) == [paths]

    run(scenario())


def test_search_a_short_exact_row_ranks_above_a_long_row_of_prefix_hits(site, alice):
    """`test data`: the long row matches data:* a dozen times (database, data loaders) and test nowhere; the short
    row holds both words once. bm25's saturation and length normalisation put the short row first."""
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            long, short = await stocked(call, "ranking", [LONG, SHORT])
            assert hit_ids((await call("pill_search", query="test data")).ok)[0] == short
            # A word rare in the scope outweighs a common one.
            more = await stocked(call, "rarity", [("Token refresh", "The token is refreshed by the client."),
                                                  ("Auth token", "Auth tokens expire."),
                                                  *[(f"Client {n}", "The client retries.") for n in range(6)]])
            assert hit_ids((await call("pill_search", query="auth client", bottle_id="rarity")).ok)[0] == more[1]

    run(scenario())


def test_search_gives_the_same_order_twice_and_breaks_ties_by_the_newest(site, alice):
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            same = await stocked(call, "ties", [("Cache note", "Cache entries expire.")] * 4)
            first = (await call("pill_search", query="cache")).ok
            assert (await call("pill_search", query="cache")).ok == first
            assert hit_ids(first) == list(reversed(same))

    run(scenario())
