"""A least-recently-used map bounded by entry count and by (estimated) bytes, safe across threads.

In-process caches on a shared server are filled by whatever users ask for; bounded only by count, a few large
entries (one user's many long texts) could still take the process's memory. An entry larger than the whole
byte budget is not kept at all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedLru(Generic[K, V]):
    def __init__(self, *, max_items: int, max_bytes: int, size_of: Callable[[V], int] | None = None) -> None:
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._size_of = size_of
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def put(self, key: K, value: V, size: int | None = None) -> None:
        """``size``: the value's bytes when the caller knows them better than ``size_of`` would."""
        if size is None:
            if self._size_of is None:
                raise TypeError("BoundedLru.put needs a size when the cache has no size_of")
            size = self._size_of(value)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > self.max_bytes:
                return
            self._entries[key] = (value, size)
            self._bytes += size
            while len(self._entries) > self.max_items or self._bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        return self._bytes
