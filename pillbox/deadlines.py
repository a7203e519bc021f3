"""Every read of a project database runs under a deadline (``PILLBOX_READ_SECONDS``): a file is anyone's to write,
and one statement on it (a recursive view, a trigger, a computed column that slipped past the checks) could
otherwise hold a tool call, a page or a hook, and the thread running it, for ever.

SQLite's progress handler looks at the clock every few thousand steps of a statement and stops it once the
deadline passed; the deadline starts again at each statement a Django connection to a project file executes (its
rows fetched later count against it), and a caller may set an overall one (``overall``) that no statement
outlives. Project databases are always SQLite files; the global database, PostgreSQL or not, is the server's own
and is not read under it.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError

from pillbox.exceptions import IncompatibleDb
from pillbox.routers import is_local_alias

STEPS = 2000  # virtual machine steps between two looks at the clock
_overall: ContextVar[float] = ContextVar("pillbox_overall_deadline", default=math.inf)


def read_seconds() -> float:
    return float(settings.PILLBOX_READ_SECONDS)


def _deadline() -> float:
    return min(time.monotonic() + read_seconds(), _overall.get())


@contextmanager
def overall(seconds: float) -> Iterator[None]:
    """No read of a project database inside this block runs past ``seconds`` from now."""
    token = _overall.set(min(time.monotonic() + seconds, _overall.get()))
    try:
        yield
    finally:
        _overall.reset(token)


class Clock:
    """One connection's deadline, looked at by SQLite's progress handler."""

    def __init__(self) -> None:
        self.deadline = _deadline()

    def restart(self) -> None:
        self.deadline = _deadline()

    def expired(self) -> int:
        return 1 if time.monotonic() > self.deadline else 0


def guard(conn: sqlite3.Connection) -> Clock:
    clock = Clock()
    conn.set_progress_handler(clock.expired, STEPS)
    return clock


def read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot write to ``path``, whose every statement stops at the deadline (a lock held by
    another process is waited for as long, no longer)."""
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=read_seconds())
    guard(conn)
    return conn


class _Restart:
    """A Django execute wrapper: each statement on a project database gets its own deadline."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        self.clock.restart()
        return execute(sql, params, many, context)


def guard_project_connection(sender: object, connection: Any, **kwargs: object) -> None:
    """``connection_created`` receiver: a Django connection to a project's file reads under the deadline."""
    if connection.vendor != "sqlite" or not is_local_alias(connection.alias):
        return
    clock = guard(connection.connection)
    wrapper = next((w for w in connection.execute_wrappers if isinstance(w, _Restart)), None)
    if wrapper is None:
        # First in the list: ``connection.execute_wrapper()`` blocks pop the last one when they end.
        connection.execute_wrappers.insert(0, _Restart(clock))
    else:
        wrapper.clock = clock


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a statement the deadline stopped."""
    return isinstance(exc, sqlite3.OperationalError | DatabaseError) and "interrupted" in str(exc)


class ReadStopped(IncompatibleDb):
    """A read of a project database that ran past its deadline."""


def stopped(where: str = "a project database") -> ReadStopped:
    return ReadStopped(
        f"Reading {where} took longer than {read_seconds():g} s (PILLBOX_READ_SECONDS) and was stopped; the file "
        "may have been crafted to never answer. Look at it before using it again.",
    )
