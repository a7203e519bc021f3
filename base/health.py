"""Readiness for orchestrators and load balancers: ``/readyz`` answers 200 only when this server can serve, that
is when the global database and the shared cache (where every throttle counts) both answer. ``/healthz`` stays
the liveness check and touches neither. Beside the checks, what the apps report of how this server runs
(``REPORTS``, e.g. whether PostgreSQL searches the vectors itself); a report never makes the server unready."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable

from django.core.cache import cache
from django.db import connections
from django.http import HttpRequest, JsonResponse

logger = logging.getLogger(__name__)


def database_ready() -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def cache_ready() -> None:
    # A write read back, under a key of its own: a Redis that answers reads but refuses writes (out of memory, a
    # read-only replica) would let no throttle count.
    key, value = f"readyz:{secrets.token_hex(8)}", secrets.token_hex(8)
    cache.set(key, value, timeout=10)
    try:
        if cache.get(key) != value:
            raise RuntimeError("the cache did not return what was written")
    finally:
        cache.delete(key)


CHECKS: dict[str, Callable[[], None]] = {"database": database_ready, "cache": cache_ready}
# Filled by the apps (their AppConfig.ready): a name and what it says now, or None to say nothing.
REPORTS: dict[str, Callable[[], str | None]] = {}


def readyz(request: HttpRequest) -> JsonResponse:
    """200 ``{"status": "ok", …}`` or 503 naming the part that failed; the reason (which may name hosts) goes to
    the server's log only."""
    checks: dict[str, str] = {}
    for name, probe in CHECKS.items():
        try:
            probe()
        except Exception:
            logger.exception("readiness check failed: %s", name)
            checks[name] = "unavailable"
        else:
            checks[name] = "ok"
    ready = all(state == "ok" for state in checks.values())
    body: dict[str, object] = {"status": "ok" if ready else "unavailable", "checks": checks}
    for name, report in REPORTS.items():
        try:
            said = report()
        except Exception:
            logger.exception("readiness report failed: %s", name)
            said = "unknown"
        if said is not None:
            body[name] = said
    return JsonResponse(body, status=200 if ready else 503)
