"""The global database: Django's ``default`` alias, and its file on disk when it is SQLite.

Both the walk up to a project's database (pillbox.databases) and the import of the original Pillbox's files
(pillbox.original) must tell this file apart from any other, so it is named here, below both.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from django.conf import settings

GLOBAL = "default"


def global_db_file() -> Path | None:
    db = settings.DATABASES[GLOBAL]
    return resolved_once(str(db["NAME"])) if db["ENGINE"].endswith("sqlite3") else None


@lru_cache(maxsize=64)
def resolved_once(path: str) -> Path:
    """A path of this process's own (the home, the global file) resolved once: every tool call asks."""
    return Path(path).resolve()
