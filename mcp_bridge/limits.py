"""Per-user limits on the HTTP MCP endpoints, so one user cannot hold the server for everyone.

Two counters per user in Django's cache (shared by every worker once the cache is Redis), both of
``accounts.throttle``: JSON-RPC requests per window, the window opened by the user's first request in it (a batch
counts each of its requests), and requests in flight (``take_slot``/``give_back``, shared with the REST API). Both
are atomic ``add`` + ``incr`` and expire on their own, so a worker that dies mid-request cannot leave a user locked
out for longer than the in-flight key's lifetime.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

from accounts.throttle import Refusal, bump, give_back, seconds_left, take_slot

__all__ = ["Refusal", "give_back", "in_flight", "rate_refusal", "take_slot"]


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
