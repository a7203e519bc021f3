"""A time window as a range of row keys, in a project's own file: where every pill of the full-text index is the
caller's, the words' pass counts and ranks from the index alone (no join per matching row), and a window must not
add one. A pill's key (``seq``) is its creation millisecond, so a window's rows are one range of keys unless a
creation time was written apart from its key (an import keeps the original's times): each row's key and creation
time are read once per change of the file and the range is checked to hold the window's rows and no other. When
it does not, the words' pass joins each row and reads its creation time instead (``lexical._from``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connections

from base.lru import BoundedLru
from pillbox.databases import change_marker

if TYPE_CHECKING:
    import numpy as np

    from pillbox.search.targets import Target

SPAN_CACHE_ENTRIES = 32
SPAN_CACHE_BYTES = 64 * 1024 * 1024  # 16 bytes a row: four million rows


@dataclass(frozen=True)
class Times:
    """A file's live pills: their keys in order, and each one's creation time in microseconds."""

    marker: tuple[object, ...]
    seqs: np.ndarray
    created: np.ndarray


_times: BoundedLru[str, Times] = BoundedLru(max_items=SPAN_CACHE_ENTRIES, max_bytes=SPAN_CACHE_BYTES)


def _read(alias: str, marker: tuple[object, ...]) -> Times:
    import numpy as np

    from pillbox.search.when import micros

    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT seq, created_at FROM pillbox_pill WHERE deleted_at IS NULL ORDER BY seq")
        rows = cursor.fetchall()
    seqs = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    created = np.fromiter((micros(row[1]) for row in rows), dtype=np.int64, count=len(rows))
    return Times(marker, seqs, created)


def key_range(target: Target) -> tuple[int, int] | None:
    """The keys from and to which the file's live pills are exactly those created in the target's window (an
    empty range when none is), or None when they are not one range (or the database is not a file)."""
    import numpy as np

    from pillbox.search.when import micros

    window = target.window
    marker = change_marker(target.alias)
    if window is None or marker is None:
        return None
    times = _times.get(target.alias)
    if times is None or times.marker != marker:
        times = _read(target.alias, marker)
        _times.put(target.alias, times, int(times.seqs.nbytes + times.created.nbytes))
    inside = np.ones(len(times.seqs), dtype=bool)
    if window.start is not None:
        inside &= times.created >= micros(window.start)
    if window.end is not None:
        inside &= times.created < micros(window.end)
    at = np.flatnonzero(inside)
    if not len(at):
        return 1, 0
    if at[-1] - at[0] + 1 != len(at):
        return None
    return int(times.seqs[at[0]]), int(times.seqs[at[-1]])
