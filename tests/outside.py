"""Tests stand alone: nothing they do in this process may read from a folder beside the repository.

A test suite that reaches into a sibling folder (shared fixtures, someone's data set) passes where that folder
happens to exist and skips or fails in every fresh clone. Python's audit hooks (PEP 578) see every file opened,
directory listed, SQLite database connected and process started in this process, by the tests or by the code
they run, however the path was spelled; conftest.py fails the test during which one named a path under the
repository's parent that is not the repository itself, the interpreter's own installation (with the place its
editable install of this project points to), or the temporary directory. What the rest of the system holds
(/usr, /etc, the interpreter's libraries) is not the repository's to bundle, and is read freely.
"""

from __future__ import annotations

import json
import os
import site
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from urllib.parse import unquote, urlsplit

REPO = Path(__file__).resolve().parent.parent
_BESIDE = str(REPO.parent).rstrip(os.sep) + os.sep


def _installed_source() -> str:
    """Where the interpreter's editable install of this project points (the import system probes it for a module
    the repository lacks): the repository itself in a clone with its own environment, another checkout of the
    project when environments are shared."""
    try:
        found = json.loads(distribution("pillbox-todos").read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError):
        return str(REPO)
    url = found.get("url", "") if found.get("dir_info", {}).get("editable") else ""
    return unquote(urlsplit(url).path) if url.startswith("file:") else str(REPO)


_ROOTS = (str(REPO), sys.prefix, sys.exec_prefix, sys.base_prefix, *site.getsitepackages(), tempfile.gettempdir(),
          os.path.dirname(sys.executable), _installed_source())
_ALLOWED = tuple(sorted({os.path.abspath(root) for root in _ROOTS} | {os.path.realpath(root) for root in _ROOTS}))
_PATH_EVENTS = {"open", "os.listdir", "os.scandir", "glob.glob", "sqlite3.connect", "os.chdir", "shutil.copyfile",
                "shutil.copytree"}

read_outside: list[str] = []


def outside(value: object) -> str | None:
    """``value`` as an absolute path when it names a place beside the repository, else None."""
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value or value == ":memory:":
        return None
    if value.startswith("file:"):
        value = unquote(urlsplit(value).path)
    path = os.path.abspath(value)
    if not path.startswith(_BESIDE):
        return None
    if any(path == root or path.startswith(root + os.sep) for root in _ALLOWED):
        return None
    return path


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event in _PATH_EVENTS:
        named: list[object] = list(args[:2]) if event.startswith("shutil.") else list(args[:1])
    elif event == "subprocess.Popen":
        executable, argv, cwd = args[0], args[1], args[2]
        named = [executable, cwd, *(argv if isinstance(argv, list | tuple) else [argv])]
    else:
        return
    for value in named:
        if (path := outside(value)) is not None:
            read_outside.append(f"{event}: {path}")


def install() -> None:
    sys.addaudithook(_audit)
