"""Per-user limits on the HTTP MCP endpoints, so one user cannot hold the server for everyone.

Two counters per user in Django's cache (shared by every worker once the cache is Redis): JSON-RPC requests per
fixed window (a batch counts each of its requests) and requests in flight. Both use ``add`` + ``incr``, which
are atomic in Redis and under the local-memory cache's lock, and both expire on their own, so a worker that dies
mid-request cannot leave a user locked out for longer than the in-flight key's lifetime.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

# Longer than any request may run, short enough that a count leaked by a killed worker heals by itself.
IN_FLIGHT_TTL = 300


@dataclass(frozen=True)
class Refusal:
    retry_after: int
    message: str


def _bump(key: str, amount: int, ttl: int) -> int:
    """Add ``amount`` to a counter that expires ``ttl`` seconds after it was first made; the new value."""
    if cache.add(key, amount, timeout=ttl):
        return amount
    try:
        return cache.incr(key, amount)
    except ValueError:  # expired between add and incr: this request starts the new counter
        cache.add(key, amount, timeout=ttl)
        return amount


def rate_refusal(user_id: object, cost: int) -> Refusal | None:
    """Count ``cost`` requests against the user's window; a refusal once the window's allowance is spent."""
    allowed, seconds = settings.MCP_USER_RATE_LIMIT
    if not allowed:
        return None
    now = int(time.time())
    start = now - now % seconds
    used = _bump(f"mcp-rate:{user_id}:{start}", cost, seconds + 5)
    if used <= allowed:
        return None
    wait = max(start + seconds - now, 1)
    return Refusal(wait, f"Too many MCP requests: at most {allowed} per {seconds} seconds per user (a batch "
                         f"counts each of its requests); try again in {wait} seconds.")


@contextmanager
def in_flight(user_id: object) -> Iterator[Refusal | None]:
    """Hold one of the user's concurrent request slots for the duration; a refusal when none is free."""
    allowed = settings.MCP_USER_CONCURRENCY
    if not allowed:
        yield None
        return
    key = f"mcp-busy:{user_id}"
    if _bump(key, 1, IN_FLIGHT_TTL) > allowed:
        _release(key)
        yield Refusal(1, f"Too many MCP requests at once: at most {allowed} in flight per user; wait for one "
                         "to finish.")
        return
    try:
        yield None
    finally:
        _release(key)


def _release(key: str) -> None:
    try:
        cache.decr(key)
    except ValueError:  # the slot's counter expired (a very long request): nothing left to give back
        pass
