"""Fixtures of the configuration tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def places(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """HOME is a scratch directory: ~/.claude.json, ~/.cursor, ~/.local/bin and the rest are its files."""
    home, project = tmp_path / "home", tmp_path / "home" / "code" / "proj"
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PILLBOX_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{home / '.local' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(project)
    return home, project
