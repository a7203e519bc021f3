"""Throttling that slows guessing without letting a stranger lock anyone out.

The rules: a valid credential always passes; only failures are counted; each failure counts against the
client's address *and* against the identity it named (a uid or a username), in buckets kept in Django's
cache with atomic ``add``/``incr`` and an expiry: a bucket opens at its first failure and closes the window's
length later (so the same code is global when the cache is shared, per process otherwise). Once a bucket is
full, further *failures* answer 429 with ``Retry-After`` instead of 401/403. The client's address is
``REMOTE_ADDR``, or, only when ``TRUST_PROXY_HEADERS`` is on, the entry of ``X-Forwarded-For`` that the
configured number of trusted proxies (``TRUSTED_PROXY_HOPS``) put there.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse


def client_ip(request: HttpRequest) -> str:
    """The caller's address. Behind ``TRUSTED_PROXY_HOPS`` proxies, each appends the address it saw to
    ``X-Forwarded-For``: the client is that many entries from the right (anything further left is whatever the
    client sent, and is never believed)."""
    return client_ip_of(request.META)


def client_ip_of(meta: Mapping[str, Any]) -> str:
    """``client_ip`` from a WSGI environ (oauthlib's requests carry Django's ``META`` as their headers)."""
    remote = str(meta.get("REMOTE_ADDR") or "unknown")
    if not getattr(settings, "TRUST_PROXY_HEADERS", False):
        return remote
    hops = max(1, int(getattr(settings, "TRUSTED_PROXY_HOPS", 1)))
    forwarded = [part.strip() for part in str(meta.get("HTTP_X_FORWARDED_FOR", "")).split(",") if part.strip()]
    if len(forwarded) < hops:
        return remote
    candidate = forwarded[-hops]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote


def _bucket_keys(request: HttpRequest, kind: str, identity: str | None) -> list[str]:
    keys = [f"throttle:{kind}:ip:{client_ip(request)}"]
    if identity:
        # Hashed: identities are client-chosen text and cache keys have length and character limits.
        digest = hashlib.sha256(identity.strip().lower().encode("utf-8", "replace")).hexdigest()[:32]
        keys.append(f"throttle:{kind}:id:{digest}")
    return keys


def _count(key: str, amount: int, seconds: int) -> tuple[int, bool]:
    """Add ``amount`` to the counter ``key``, which expires ``seconds`` after it opened (``incr`` keeps an entry's
    expiry in the local-memory and Redis caches); the new total, and whether this count opened the counter.
    Atomic in Redis and under the local-memory cache's lock."""
    if cache.add(key, amount, timeout=seconds):
        return amount, True
    try:
        total = int(cache.incr(key, amount))
    except ValueError:  # expired between add and incr: this count opens the next counter
        cache.add(key, amount, timeout=seconds)
        return amount, True
    if total == amount:
        # Redis's incr checks that the key exists, then INCRs it: a key that expired between the two is made
        # anew by INCR with no expiry, which would never close. A total of just ``amount`` is that case (or a
        # count given back to zero): the counter opens now, with its expiry.
        cache.touch(key, seconds)
        return amount, True
    return total, False


def bump(bucket: str, amount: int, seconds: int) -> int:
    """Add ``amount`` to ``bucket``'s count; the new count. A bucket opens at its first count and closes
    ``seconds`` later, with its opening time kept beside it for ``seconds_left``: a count never restarts in the
    middle of a burst, as a clock-aligned window would at its boundary."""
    total, opened = _count(f"{bucket}:n", amount, seconds)
    if opened:
        cache.set(f"{bucket}:since", time.time(), timeout=seconds)
    return total


def hold(key: str, seconds: int) -> int:
    """Take one slot of the counter ``key`` (requests in flight); the slots now held. The counter expires
    ``seconds`` after it opened, so a slot a dead worker never gave back heals by itself."""
    return _count(key, 1, seconds)[0]


def release(key: str) -> None:
    """Give back a slot taken with ``hold``; nothing when the counter has expired meanwhile."""
    try:
        cache.decr(key)
    except ValueError:
        pass


def seconds_left(bucket: str, seconds: int) -> int:
    """Seconds until ``bucket`` closes, at least 1 (a ``Retry-After``)."""
    return _left(cache.get(f"{bucket}:since"), seconds)


def _left(since: object, seconds: int) -> int:
    opened = float(since) if isinstance(since, (int, float)) else time.time()
    return max(1, min(seconds, int(opened + seconds - time.time() + 0.999)))


def failure(request: HttpRequest, *, kind: str, limit: tuple[int, int], identity: str | None = None) -> int:
    """Count one failure against the address and the identity; the seconds to wait when a bucket is now over
    its limit (answer 429), else 0."""
    count, seconds = limit
    if not count:
        return 0
    over = [bucket for bucket in _bucket_keys(request, kind, identity) if bump(bucket, 1, seconds) > count]
    return max(seconds_left(bucket, seconds) for bucket in over) if over else 0


def exhausted(request: HttpRequest, *, kind: str, limit: tuple[int, int], identity: str | None = None) -> int:
    """Seconds to wait when the address or the identity has already failed ``limit`` times (0: not)."""
    count, seconds = limit
    if not count:
        return 0
    buckets = _bucket_keys(request, kind, identity)
    found = cache.get_many([f"{bucket}:{part}" for bucket in buckets for part in ("n", "since")])
    full = [bucket for bucket in buckets if int(found.get(f"{bucket}:n") or 0) >= count]
    return max(_left(found.get(f"{bucket}:since"), seconds) for bucket in full) if full else 0


def too_many(retry_after: int, message: str, *, content_type: str = "application/json") -> HttpResponse:
    body = json.dumps({"error": "rate_limited", "message": message}) if content_type == "application/json" else message
    response = HttpResponse(body, status=429, content_type=content_type)
    response["Retry-After"] = str(retry_after)
    return response


def auth_failure_limit() -> tuple[int, int]:
    return getattr(settings, "AUTH_FAILURE_RATE_LIMIT", (20, 60))


def login_limit() -> tuple[int, int]:
    return getattr(settings, "LOGIN_RATE_LIMIT", (10, 60))
