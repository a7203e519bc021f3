"""The command that runs this copy, as `connect`, `up` and `launcher` write it: a checkout's Python and manage.py,
an installed console script, or uvx's own command line (never a path inside uv's cache)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from config import installed
from tests.clients import ROOT


def test_a_checkout_runs_its_manage_py_with_this_python():
    assert installed.command() == [sys.executable, str(ROOT / "manage.py")]


@pytest.fixture
def packaged(settings, tmp_path, monkeypatch):
    """This copy as an installed package: no manage.py beside the code."""
    settings.BASE_DIR = tmp_path / "site-packages"
    monkeypatch.delenv("UV", raising=False)
    return tmp_path


def test_an_installed_package_runs_its_console_script(packaged, monkeypatch):
    scripts = packaged / "bin"
    scripts.mkdir()
    (scripts / "pillbox-todos").write_text("#!/bin/sh\n")
    (scripts / "pillbox-todos").chmod(0o755)
    monkeypatch.setattr(installed.sysconfig, "get_path", lambda name: str(scripts))
    monkeypatch.setattr(installed.sys, "prefix", str(packaged / "venv"))
    monkeypatch.setenv("UV_CACHE_DIR", str(packaged / "uv-cache"))
    assert installed.command() == [str(scripts / "pillbox-todos")]
    monkeypatch.setenv("PATH", f"{scripts}:/usr/bin:/bin")
    assert installed.on_path()


@pytest.mark.parametrize(("direct_url", "source"), [
    ({"url": "file:///home/ada/src/pillbox", "dir_info": {}}, "/home/ada/src/pillbox"),
    ({"url": "https://example.com/pillbox.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}},
     "git+https://example.com/pillbox.git@abc123"),
    ({}, "pillbox-todos=="),
])
def test_under_uvx_the_uvx_command_is_written_with_the_source_it_was_run_from(packaged, monkeypatch, direct_url,
                                                                              source):
    cache = packaged / "uv-cache"
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    monkeypatch.setattr(installed.sys, "prefix", str(cache / "archive-v0" / "x1y2"))
    monkeypatch.setattr(installed, "_direct_url", lambda: direct_url)
    monkeypatch.setenv("PATH", "/nowhere")
    program, flag, found, name = installed.command()
    assert (Path(program).name, flag, name) == ("uvx", "--from", "pillbox-todos")
    assert found.startswith(source)
    assert str(cache) not in " ".join(installed.command())
