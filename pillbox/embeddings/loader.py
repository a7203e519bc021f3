"""The process's embedder: made from the configuration, loaded in a thread of its own (``embedder``,
``preload``), and the query embeddings it made, kept for a repeated query (``embed_query``)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from base.memory import release_memory
from pillbox.embeddings import shared
from pillbox.embeddings.embedders import (
    BUNDLED_KEY,
    INT8_SHA256,
    BundledModel,
    Embedder,
    EndpointModel,
    ModelIntegrityError,
    bundled_model_dir,
    cache_dir,
)

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

QUERY_CACHE = 256  # recent query embeddings kept (an agent often repeats or refines a query)
SEARCH_WAIT = 1.0  # seconds a search waits for a model that is loading, then it answers by words
# Tests only: while this file is absent the loader waits before loading (a model that loads slowly).
LOAD_GATE_ENV = "PILLBOX_TEST_MODEL_GATE"
# The model's reference cosine (bench/pills_search.py): rows found by meaning alone beside the words' rows need
# this less the engine's BESIDE_WORDS_MARGIN, and with nothing found by words, less its ALONE_MARGIN
# (pillbox.search.engine). EMBEDDINGS_MIN_SIMILARITY replaces it, for an endpoint model with another scale.
BUNDLED_FLOOR = 0.30


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
    model_dir, floor = bundled_model_dir(), _floor(BUNDLED_FLOOR)
    if shared.enabled():
        try:
            return shared.SharedModel(key=BUNDLED_KEY, digest=INT8_SHA256, floor=floor, model_dir=model_dir,
                                      cache=cache_dir()).connect()
        except ModelIntegrityError:
            raise
        except (OSError, RuntimeError) as exc:  # no usable socket or process here: the model runs in this one
            logger.warning("The shared embedding process is not used (%s); the model runs in this process, as "
                           "it does in every server of yours until then (each holds its own copy)", exc)
    return BundledModel(model_dir, floor)


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


def _close(model: Embedder | None) -> None:
    if isinstance(model, shared.SharedModel):
        model.close()  # the shared process leaves once no server holds a connection to it


def reset() -> None:
    """Forget the loaded embedder (tests, or after the configuration changed)."""
    with _state.lock:
        _close(_state.embedder)
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
            _close(state.embedder)
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
