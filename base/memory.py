"""Handing freed memory back to the system, for long-lived processes (a stdio server lives as long as its agent)."""

from __future__ import annotations

import ctypes
import gc


def release_memory(*, collect: bool = False) -> None:
    """Return freed heap to the system: glibc keeps it otherwise, and a process's resident size never shrinks.

    ``collect``: first collect Python's cycles, for work that builds many short-lived linked objects (a migration's
    project states, one per migration, are such graphs)."""
    if collect:
        gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass
