"""The data directory the site serves, as `up` records it per checkout, and the one an agent's servers get.

`up` writes the home and address it serves into the person's own state (no data directory, no project);
`connect` and `launcher` read it when PILLBOX_HOME is unset, and warn loudly when it differs from the shell's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings

from config.connect import write_file


def site_record_file(home: Path) -> Path:
    """Where `up` records, per checkout, the data directory and address it serves (the person's own state, in no
    data directory and no project)."""
    state = os.environ.get("XDG_STATE_HOME") or str(home / ".local" / "state")
    return Path(state) / "pillbox-todos" / "sites.json"


def read_site_record(home: Path) -> dict[str, Any]:
    path = site_record_file(home)
    try:
        record = json.loads(path.read_text()).get(str(Path(settings.BASE_DIR).resolve()))
    except (OSError, ValueError, AttributeError):
        return {}
    return record if isinstance(record, dict) else {}


def write_site_record(user_home: Path, **record: str) -> None:
    path = site_record_file(user_home)
    try:
        records = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        records = {}
    if not isinstance(records, dict):
        records = {}
    records[str(Path(settings.BASE_DIR).resolve())] = record
    write_file(path, json.dumps(records, indent=2) + "\n")


def default_home(home: Path) -> Path:
    return (home / ".pillbox").resolve()


def servers_home(home: Path) -> tuple[str | None, str]:
    """The PILLBOX_HOME the agent's servers should get (None: the default ``~/.pillbox``) and a note: the one in
    this shell wins, but a site (`up`) serving another home is said loudly; without one, the site's."""
    mine = os.environ.get("PILLBOX_HOME")
    site = read_site_record(home).get("home")
    if mine:
        if site and Path(mine).expanduser().resolve() != Path(site).resolve():
            return mine, (f"WARNING: PILLBOX_HOME here is {mine}, but the site (`up`) serves {site}: "
                          "the agent's memory will not be what the pages show. Run this again with "
                          f"PILLBOX_HOME={site}, or run `up` with the same PILLBOX_HOME.")
        return mine, ""
    if site and Path(site).resolve() != default_home(home):
        return site, f"The servers use {site}, the data directory the site (`up`) serves."
    return None, ""
