"""Per-user limits on the HTTP MCP endpoints, so one user cannot hold the server for everyone.

Two counters per user in Django's cache (shared by every worker once the cache is Redis), both of
``accounts.throttle``: JSON-RPC requests per window, the window opened by the user's first request in it (a batch
counts each of its requests), and requests in flight (``hold``/``release``). Both are atomic ``add`` + ``incr``
and expire on their own, so a worker that dies mid-request cannot leave a user locked out for longer than the
in-flight key's lifetime.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings

from accounts.throttle import bump, hold, release, seconds_left

# Longer than any request may run, short enough that a count leaked by a killed worker heals by itself.
IN_FLIGHT_TTL = 300


@dataclass(frozen=True)
class Refusal:
    retry_after: int
    message: str


def rate_refusal(user_id: object, cost: int) -> Refusal | None:
    """Count ``cost`` requests against the user's window; a refusal once the window's allowance is spent."""
    allowed, seconds = settings.MCP_USER_RATE_LIMIT
    if not allowed:
        return None
    bucket = f"mcp-rate:{user_id}"
    if bump(bucket, cost, seconds) <= allowed:
        return None
    wait = seconds_left(bucket, seconds)
    return Refusal(wait, f"Too many MCP requests: at most {allowed} per {seconds} seconds per user (a batch "
                         f"counts each of its requests); try again in {wait} seconds.")


def take_slot(user_id: object, what: str = "MCP requests") -> Refusal | None:
    """Take one of the user's in-flight slots (``MCP_USER_CONCURRENCY``, counted over both MCP endpoints and the
    REST API together); a refusal, and no slot taken, when none is free. Give it back with ``give_back``."""
    allowed = settings.MCP_USER_CONCURRENCY
    if not allowed:
        return None
    key = f"mcp-busy:{user_id}"
    if hold(key, IN_FLIGHT_TTL) > allowed:
        release(key)
        return Refusal(1, f"Too many {what} at once: at most {allowed} in flight per user; wait for one to finish.")
    return None


def give_back(user_id: object) -> None:
    if settings.MCP_USER_CONCURRENCY:
        release(f"mcp-busy:{user_id}")


@contextmanager
def in_flight(user_id: object) -> Iterator[Refusal | None]:
    """Hold one of the user's concurrent request slots for the duration; a refusal when none is free."""
    refusal = take_slot(user_id)
    if refusal is not None:
        yield refusal
        return
    try:
        yield None
    finally:
        give_back(user_id)
