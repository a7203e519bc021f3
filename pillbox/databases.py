"""Where a bottle's data lives, and how its database is opened.

The global database is Django's ``default`` (pillbox.global_db). Each local bottle lives in
``<directory>/.pillbox/pillbox.db``, opened on demand as a database alias of its own (``bottle:<path>``) with the
same SQLite options as the global one, and given its schema by the same migrations the first time it is created.
The nearest ``.pillbox/pillbox.db`` at or above the working directory is the current local database, the way git
finds ``.git``.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import sys
from contextlib import closing
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.db import connections

from base.bootstrap import file_lock
from base.memory import release_memory
from base.private import private_db_file, private_dir
from pillbox import deadlines
from pillbox.exceptions import IncompatibleDb
from pillbox.global_db import global_db_file, resolved_once
from pillbox.judge import judge_file
from pillbox.original.local import import_local, local_snapshot
from pillbox.original.recognise import is_global_original
from pillbox.routers import LOCAL_ALIAS_PREFIX

DB_DIR = ".pillbox"
DB_NAME = "pillbox.db"

_schema_checked: set[str] = set()
_reported: set[Path] = set()
REPORTED_MAX = 1024
logger = logging.getLogger("pillbox")


def db_file(directory: Path) -> Path:
    return directory / DB_DIR / DB_NAME


def change_marker(alias: str) -> tuple[object, ...] | None:
    """A value that differs once anything in a SQLite database changed: committed by any connection since
    (``PRAGMA data_version``) or written on this one (``total_changes``). Both only mean something for the
    connection that read them, so the connection itself is part of the marker. None on PostgreSQL, which has no
    mark this cheap: a cache keyed by it is not kept there."""
    connection = connections[alias]
    if connection.vendor != "sqlite":
        return None
    connection.ensure_connection()
    raw = connection.connection
    return raw.execute("PRAGMA data_version").fetchone()[0], raw.total_changes, raw


def _writable_by_others(info: os.stat_result) -> bool:
    """World-writable, or group-writable for a group that is not the user's own (sticky /tmp included: the
    sticky bit stops others deleting our files, not planting their own)."""
    mode = stat.S_IMODE(info.st_mode)
    return bool(mode & stat.S_IWOTH) or bool(mode & stat.S_IWGRP and info.st_gid != os.getegid())


def _trusted_directories() -> tuple[set[Path], bool]:
    entries = getattr(settings, "PILLBOX_SAFE_DIRECTORIES", [])
    return {Path(entry).expanduser().resolve() for entry in entries if entry != "*"}, "*" in entries


def untrusted_reason(directory: Path) -> str | None:
    """Why a ``.pillbox`` in ``directory`` must not be trusted (as git's safe.directory), or None when it may:
    the directory, its ``.pillbox`` and the database must not be open to anyone but the current user."""
    directory = directory.resolve()
    trusted, everything = _trusted_directories()
    if everything or directory in trusted:
        return None
    me = os.geteuid()
    try:
        if _writable_by_others(directory.stat()):
            return "it sits in a directory others can write to"
        folder, database = (directory / DB_DIR).stat(), db_file(directory).stat()
    except OSError:
        return None  # nothing there to trust or distrust
    if folder.st_uid != me or database.st_uid != me:
        return "it is not owned by you"
    if _writable_by_others(folder) or _writable_by_others(database):
        return "others can write to it"
    return None


def _report_untrusted(candidate: Path, directory: Path, reason: str) -> None:
    if candidate not in _reported:
        if len(_reported) >= REPORTED_MAX:  # a long-lived server may meet many; once each is enough, not forever
            _reported.clear()
        _reported.add(candidate)
        logger.warning("Pillbox ignores %s: %s; to trust it, add %s to PILLBOX_SAFE_DIRECTORIES.",
                       candidate, reason, directory)


def find_local_db(workdir: Path | None) -> Path | None:
    """The nearest ``.pillbox/pillbox.db`` at or above ``workdir`` that is not the global database.

    The walk stops at a ``.pillbox`` someone else could have planted or could change (``untrusted_reason``):
    serving its pills to the agent, or storing the agent's pills in it, would hand both to that someone.
    """
    if workdir is None:
        return None
    start = workdir.resolve()
    home = resolved_once(str(Path.home()))
    stop = home if start.is_relative_to(home) else Path(start.anchor)
    global_file = global_db_file()
    for directory in (start, *start.parents):
        candidate = db_file(directory)
        if candidate.is_file() and (resolved := candidate.resolve()) != global_file:
            if reason := untrusted_reason(directory):
                _report_untrusted(candidate, directory, reason)
                return None
            # Hook (original Pillbox import): the original's global file is never a project's database.
            if not is_global_original(candidate):
                return resolved
        if directory == stop:
            break
    return None


@cache
def known_migrations() -> frozenset[str]:
    folder = Path(__file__).resolve().parent / "migrations"
    return frozenset(p.stem for p in folder.glob("[0-9]*.py"))


def alias_for(path: Path) -> str:
    alias = LOCAL_ALIAS_PREFIX + str(path)
    if alias not in connections.settings:
        # configure_settings fills in the defaults Django expects, and insists on a "default" key.
        connections.settings[alias] = connections.configure_settings({"default": _sqlite_settings(path)})["default"]
    return alias


def _sqlite_settings(path: Path) -> dict[str, Any]:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(path),
        "OPTIONS": dict(settings.SQLITE_OPTIONS),
        # A local agent's process keeps its project's database open between tool calls.
        "CONN_MAX_AGE": None,
    }


def applied_migrations(path: Path) -> set[str] | None:
    """Names of the pillbox migrations recorded in the file, or None when it has no schema at all."""
    judge_file(path)
    try:
        with closing(deadlines.read_only(path)) as conn:
            rows = conn.execute("SELECT name FROM django_migrations WHERE app = 'pillbox'").fetchall()
    except sqlite3.DatabaseError as exc:
        if deadlines.interrupted(exc):
            raise deadlines.stopped(str(path)) from None
        return None
    return {name for (name,) in rows}


def has_schema(path: Path) -> bool:
    return bool(applied_migrations(path))


def schema_ready(alias: str) -> bool:
    """Whether open_local found (or gave) this database its schema."""
    return alias in _schema_checked


def open_local(path: Path, *, create: bool = False) -> str:
    """The alias of the local database at ``path``, brought up to the current schema.

    A file written by a newer schema is refused rather than touched; an older one is migrated forward
    (migrations only add), so opening an existing file never loses data. A file holding what this Pillbox never
    writes (a view, a trigger, a computed column) is refused before any of its rows is read (pillbox.judge).
    """
    alias = alias_for(path)
    if alias in _schema_checked:
        return alias
    applied = applied_migrations(path) if path.exists() else None
    if applied and applied - known_migrations():
        raise IncompatibleDb(
            "This bottle database was written by a newer version of Pillbox; upgrade Pillbox to use it.",
            db_path=str(path),
        )
    # Hook (original Pillbox import): a project file the original wrote is read (and judged) before anything
    # is written into it, then gets our schema beside its tables and its memory copied into ours.
    snapshot = local_snapshot(path) if path.exists() else None
    if applied is None and not create and snapshot is None:
        return alias
    private_dir(path.parent)
    private_db_file(path)
    if applied is None or known_migrations() - applied:
        with file_lock(path.parent / "migrate.lock"):
            applied = applied_migrations(path) or set()
            if known_migrations() - applied:
                call_command("migrate", "pillbox", database=alias, verbosity=0, interactive=False, stdout=sys.stderr)
                release_memory(collect=True)
    if snapshot is not None:
        import_local(snapshot, alias)
    _schema_checked.add(alias)
    return alias


def forget_local_aliases() -> None:
    """Close and drop every local bottle database alias this thread knows (tests move between scratch dirs)."""
    for alias in [name for name in connections.settings if name.startswith(LOCAL_ALIAS_PREFIX)]:
        try:
            connections[alias].close()
        finally:
            del connections[alias]
            del connections.settings[alias]
    _schema_checked.clear()
