"""Data directories are the owner's alone: 0700 directories and 0600 database files.

The global database holds the session table and key hashes, a local bottle its project's memory; a local account
that could read them could take over /admin/ or read another user's notes. Files are created with these modes
(SQLite gives its -wal and -shm files the database file's mode) and repaired when a process starts and finds
them wider, as long as they are ours to change.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def _narrow(path: Path, mode: int) -> None:
    """Take away every bit beyond ``mode`` from a path we own (a symlink's target is left alone)."""
    try:
        info = path.lstat()
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
        return
    if stat.S_IMODE(info.st_mode) & ~mode:
        try:
            path.chmod(stat.S_IMODE(info.st_mode) & mode)
        except OSError:  # a read-only file system: nothing we can do, and nothing to break over
            pass


def private_dir(path: Path) -> Path:
    """Make ``path`` (and missing parents, left to the umask) with the owner-only mode, or narrow it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=DIR_MODE)
    except FileExistsError:
        pass
    _narrow(path, DIR_MODE)
    return path


def private_db_file(path: Path) -> Path:
    """Create an empty database file readable by its owner only (SQLite fills it on first connection), or
    narrow an existing one and its sidecar files."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except FileExistsError:
        pass
    except OSError:  # a missing or read-only directory: SQLite will say so, in its own words, when it opens it
        return path
    for candidate in (path, *(path.with_name(path.name + suffix) for suffix in SQLITE_SIDECARS)):
        _narrow(candidate, FILE_MODE)
    return path


def repair_data_dir(directory: Path) -> None:
    """Narrow a data directory and every database file directly in it (and its secret key) at start-up."""
    private_dir(directory)
    for child in directory.iterdir():
        if child.name.endswith(".db"):
            private_db_file(child)
        elif child.name == "secret_key":
            _narrow(child, FILE_MODE)
