"""First use of a data directory: the global database is created and migrated by whoever arrives first.

Several agents' stdio servers may start at the same moment on a fresh machine; a file lock in the data
directory serialises the first connection, the check and the migration.
"""

from __future__ import annotations

import fcntl
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import connections

from base.memory import release_memory

_ready = False


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def pending_migrations(alias: str = "default") -> bool:
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connections[alias])
    return bool(executor.migration_plan(executor.loader.graph.leaf_nodes()))


def ensure_global_db() -> None:
    """Migrate the global database if it is behind; cheap when it is not.

    The check itself runs under the lock too: the first connection to a fresh SQLite file switches it to
    WAL, and SQLite answers "database is locked" at once (without waiting out the busy timeout) to a
    second process opening the file in the middle of that switch.
    """
    global _ready
    if _ready:
        return
    with file_lock(Path(settings.PILLBOX_HOME) / ".migrate.lock"):
        if pending_migrations():
            call_command("migrate", verbosity=0, interactive=False, stdout=sys.stderr)
            release_memory(collect=True)  # a migration's states are many MB the server would keep for its life
    _ready = True
