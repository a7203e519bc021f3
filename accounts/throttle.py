"""Throttling that slows guessing without letting a stranger lock anyone out.

The rules: a valid credential always passes; only failures are counted; each failure counts against the
client's address *and* against the identity it named (a uid or a username), in buckets kept in Django's
cache with atomic ``add``/``incr`` and an expiry: a bucket opens at its first failure and closes the window's
length later (so the same code is global when the cache is shared, per process otherwise). Once a bucket is
full, further *failures* answer 429 with ``Retry-After`` instead of 401/403. The client's address is
``REMOTE_ADDR``, or, only when ``TRUST_PROXY_HEADERS`` is on *and* ``REMOTE_ADDR`` is one of ``TRUSTED_PROXIES``,
the entry of ``X-Forwarded-For`` that the configured number of trusted proxies (``TRUSTED_PROXY_HOPS``) put there.

Logins (passwords can be guessed, unlike keys) count per (username, address) and per address, each refusing
unchecked attempts once full; across addresses an account only slows down (``login_wait``): past
``LOGIN_ACCOUNT_CEILING`` failures each address waits a growing delay before its next attempt at the account is
checked. Browsers that signed in as the account before skip all of it (``accounts.auth``).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
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
    if not from_trusted_proxy(meta):
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


def from_trusted_proxy(meta: Mapping[str, Any]) -> bool:
    """Whether the proxy headers of a request (its WSGI environ) are believed: ``TRUST_PROXY_HEADERS`` is on and the
    peer (``REMOTE_ADDR``) is one of ``TRUSTED_PROXIES`` (addresses or networks)."""
    if not getattr(settings, "TRUST_PROXY_HEADERS", False):
        return False
    try:
        peer = ipaddress.ip_address(str(meta.get("REMOTE_ADDR") or ""))
    except ValueError:
        return False
    return any(peer in network for network in _networks(tuple(getattr(settings, "TRUSTED_PROXIES", ()))))


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())


class ProxyHeadersMiddleware:
    """First in the chain: a request whose peer is not a trusted proxy loses its ``X-Forwarded-*`` headers, so
    neither Django (``SECURE_PROXY_SSL_HEADER``, ``USE_X_FORWARDED_HOST``) nor the throttles believe what a client
    that reached the server directly claims."""

    FORWARDED = ("HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_HOST", "HTTP_X_FORWARDED_PORT")

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if getattr(settings, "TRUST_PROXY_HEADERS", False) and not from_trusted_proxy(request.META):
            for header in self.FORWARDED:
                request.META.pop(header, None)
        response: HttpResponse = self.get_response(request)
        return response


def _digest(identity: str) -> str:
    # Hashed: identities are client-chosen text and cache keys have length and character limits.
    return hashlib.sha256(identity.encode("utf-8", "replace")).hexdigest()[:32]


def _bucket_keys(request: HttpRequest, kind: str, identity: str | None) -> list[str]:
    keys = [f"throttle:{kind}:ip:{client_ip(request)}"]
    if identity:
        keys.append(f"throttle:{kind}:id:{_digest(identity.strip().lower())}")
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
    return _full([(bucket, limit) for bucket in _bucket_keys(request, kind, identity)])


def _full(buckets: list[tuple[str, tuple[int, int]]]) -> int:
    """Seconds to wait until every full bucket (count reached its limit) has closed; 0 when none is full."""
    found = cache.get_many([f"{bucket}:{part}" for bucket, _limit in buckets for part in ("n", "since")])
    waits = [
        _left(found.get(f"{bucket}:since"), seconds)
        for bucket, (count, seconds) in buckets
        if count and int(found.get(f"{bucket}:n") or 0) >= count
    ]
    return max(waits, default=0)


def too_many(retry_after: int, message: str, *, content_type: str = "application/json") -> HttpResponse:
    body = json.dumps({"error": "rate_limited", "message": message}) if content_type == "application/json" else message
    response = HttpResponse(body, status=429, content_type=content_type)
    response["Retry-After"] = str(retry_after)
    return response


def auth_failure_limit() -> tuple[int, int]:
    return getattr(settings, "AUTH_FAILURE_RATE_LIMIT", (20, 60))


def login_limit() -> tuple[int, int]:
    return getattr(settings, "LOGIN_RATE_LIMIT", (10, 60))


def login_address_limit() -> tuple[int, int]:
    return getattr(settings, "LOGIN_ADDRESS_RATE_LIMIT", (50, 60))


def login_account_ceiling() -> tuple[int, int]:
    """Failures across addresses (count, in seconds) past which an account slows down; a count of 0 is
    ``LOGIN_RATE_LIMIT``'s."""
    count, seconds = getattr(settings, "LOGIN_ACCOUNT_CEILING", (0, 900))
    return int(count) or login_limit()[0], int(seconds)


def login_max_delay() -> int:
    return int(getattr(settings, "LOGIN_MAX_DELAY", 60))


# --- logins ------------------------------------------------------------------------------------------------


def _login_buckets(request: HttpRequest, username: str) -> list[tuple[str, tuple[int, int]]]:
    address = client_ip(request)
    buckets = [(f"throttle:login:ip:{address}", login_address_limit())]
    if username:
        buckets.append((f"throttle:login:pair:{_digest(username)}:{address}", login_limit()))
    return buckets


def login_wait(request: HttpRequest, username: str) -> int:
    """Seconds before a login attempt for ``username`` from this browser (one that never signed in as it) may be
    checked; 0: check it now. The (username, address) and address buckets refuse while full; an account over
    its ceiling across addresses makes each address wait a growing delay between checked attempts, the first
    one included, so a stranger elsewhere slows the account down without ever shutting it."""
    if wait := _full(_login_buckets(request, username)):
        return wait
    delay = _account_delay(username)
    if not delay:
        return 0
    now = time.time()
    gate_key = f"throttle:login:gate:{_digest(username)}:{client_ip(request)}"
    gate = cache.get(gate_key)
    if isinstance(gate, (int, float)) and gate <= now:
        cache.set(gate_key, now + delay, timeout=login_account_ceiling()[1])
        return 0
    if not isinstance(gate, (int, float)):
        cache.set(gate_key, now + delay, timeout=login_account_ceiling()[1])
        return delay
    return max(1, math.ceil(gate - now))


def login_failure(request: HttpRequest, username: str) -> None:
    """Count one failed login against this address, this (username, address) and, when the username is an
    account's, that account across addresses (``accounts.LoginPressure``, which staff see)."""
    for bucket, (_count, seconds) in _login_buckets(request, username):
        bump(bucket, 1, seconds)
    if username:
        _press(username, client_ip(request))


def _clock() -> datetime:
    return datetime.fromtimestamp(time.time(), tz=UTC)


def _press(username: str, address: str) -> None:
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from accounts.models import LoginPressure

    User = get_user_model()
    user_id = User._default_manager.filter(**{User.USERNAME_FIELD: username}).values_list("pk", flat=True).first()
    if user_id is None:
        return  # no such account: nothing to protect, and nothing written for made-up names
    now, window = _clock(), timedelta(seconds=login_account_ceiling()[1])
    with transaction.atomic():
        row = LoginPressure.objects.select_for_update().filter(user_id=user_id).first()
        if row is None:
            LoginPressure.objects.create(
                user_id=user_id, failures=1, window_started_at=now, last_failure_at=now, last_address=address
            )
            return
        if now - row.window_started_at > window:
            row.failures, row.window_started_at = 0, now
        row.failures += 1
        row.last_failure_at, row.last_address = now, address
        row.save(update_fields=["failures", "window_started_at", "last_failure_at", "last_address"])


def login_delay(failures: int) -> int:
    """The seconds each address waits between checked attempts at an account with ``failures`` recent failures
    across addresses: 0 below the ceiling, then 2 s, doubling every ceiling's worth more, up to
    ``LOGIN_MAX_DELAY``."""
    ceiling = login_account_ceiling()[0]
    if not ceiling or failures < ceiling:
        return 0
    return min(login_max_delay(), int(2 ** min(16, 1 + (failures - ceiling) // ceiling)))


def _account_delay(username: str) -> int:
    if not username:
        return 0
    from accounts.models import LoginPressure

    found = (
        LoginPressure.objects.filter(**{f"user__{_username_field()}": username})
        .values_list("failures", "window_started_at")
        .first()
    )
    return pressure_delay(*found) if found is not None else 0


def pressure_delay(failures: int, window_started_at: datetime) -> int:
    """``login_delay`` while the account's window is open (0 once it has passed)."""
    if _clock() - window_started_at > timedelta(seconds=login_account_ceiling()[1]):
        return 0
    return login_delay(failures)


def _username_field() -> str:
    from django.contrib.auth import get_user_model

    return str(get_user_model().USERNAME_FIELD)


# ---------------------------------------------------------------- requests in flight, per user
# Taken by the MCP endpoints (mcp_bridge.limits) and the REST API (api.base) alike: one count for both.

# Longer than any request may run, short enough that a count leaked by a killed worker heals by itself.
IN_FLIGHT_TTL = 300


@dataclass(frozen=True)
class Refusal:
    retry_after: int
    message: str


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
