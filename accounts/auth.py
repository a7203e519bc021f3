"""Who is calling an MCP endpoint over HTTP: an API key (Bearer or ?uid=&key=) or an OAuth access token.

Guessing is throttled: failed credentials are counted per client IP in fixed windows (Django's cache), and once
a client has failed ``AUTH_FAILURE_RATE_LIMIT`` times its requests are answered 429 with ``Retry-After`` until
the window ends, whatever they carry (answering a right key differently would keep the guessing useful). The
login forms get the same treatment from ``LoginThrottleMiddleware`` (``LOGIN_RATE_LIMIT``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse

from accounts.services import KEY_PREFIX, apikey_authenticate
from config.mcp.tools import Caller


def protected_resource_metadata_url(request: HttpRequest) -> str:
    return f"{settings.SITE_URL}/.well-known/oauth-protected-resource{request.path.rstrip('/')}"


def unauthorized(request: HttpRequest, *, presented: bool) -> HttpResponse:
    """401 with the RFC 9728 challenge; 403 ``insufficient_scope`` when a valid OAuth token lacks the ``mcp`` scope
    (what ``oauth_token_user`` found is left on ``request.oauth_error``)."""
    challenge = f'Bearer resource_metadata="{protected_resource_metadata_url(request)}", scope="mcp"'
    oauth_error = getattr(request, "oauth_error", None)
    status = 401
    if oauth_error is not None and oauth_error.error == "insufficient_scope":
        status = 403
        challenge += ', error="insufficient_scope"'
    elif presented:
        challenge += ', error="invalid_token"'
    if oauth_error is not None and oauth_error.description:
        description = oauth_error.description.replace("\\", "").replace('"', "'")
        challenge += f', error_description="{description}"'
    message = (
        "The access token does not carry the mcp scope"
        if status == 403
        else "Send Authorization: Bearer <key or token>, or ?uid=&key="
    )
    response = HttpResponse(
        json.dumps({"error": "forbidden" if status == 403 else "unauthorized", "message": message}),
        status=status,
        content_type="application/json",
    )
    response["WWW-Authenticate"] = challenge
    # Credentials were sent and are wrong (not merely missing, nor a valid token short of scope): a guess.
    response.credentials_rejected = status == 401 and presented
    return response


def oauth_token_user(request: HttpRequest, token: str) -> AbstractBaseUser | None:
    """The user of a valid OAuth access token issued for this MCP resource (expiry, revocation, scope and
    audience checked by ``accounts.oauth.verify_access_token``); None otherwise, with the reason left on
    ``request.oauth_error`` for the challenge."""
    from accounts.oauth import verify_access_token

    check = verify_access_token(request, token)
    if check.user is None:
        request.oauth_error = check
    return check.user


# --- throttling -------------------------------------------------------------------------------------------


def _client_ip(request: HttpRequest) -> str:
    # REMOTE_ADDR, as accounts.oauth.client_ip: behind a proxy, the proxy must set it (see README, Production).
    return request.META.get("REMOTE_ADDR") or "unknown"


def _window(limit: tuple[int, int]) -> tuple[str, int]:
    """The current fixed window's start (as a cache-key part) and the seconds until it ends."""
    _, seconds = limit
    now = int(time.time())
    start = now - now % seconds
    return str(start), start + seconds - now


def throttle_wait(request: HttpRequest, *, kind: str, limit: tuple[int, int]) -> int:
    """Seconds the client must wait before trying ``kind`` again (0: go ahead)."""
    count, _ = limit
    if not count:
        return 0
    start, remaining = _window(limit)
    failures = cache.get(f"throttle:{kind}:{_client_ip(request)}:{start}", 0)
    return max(remaining, 1) if failures >= count else 0


def count_failure(request: HttpRequest, *, kind: str, limit: tuple[int, int]) -> None:
    count, seconds = limit
    if not count:
        return
    start, _ = _window(limit)
    key = f"throttle:{kind}:{_client_ip(request)}:{start}"
    if not cache.add(key, 1, timeout=seconds + 5):
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.add(key, 1, timeout=seconds + 5)


def too_many(retry_after: int, message: str, *, content_type: str = "application/json") -> HttpResponse:
    body = json.dumps({"error": "rate_limited", "message": message}) if content_type == "application/json" else message
    response = HttpResponse(body, status=429, content_type=content_type)
    response["Retry-After"] = str(retry_after)
    return response


def auth_failure_limit() -> tuple[int, int]:
    return getattr(settings, "AUTH_FAILURE_RATE_LIMIT", (20, 60))


def mcp_caller(request: HttpRequest) -> Caller | HttpResponse:
    """The caller of an MCP request, or the response refusing it (401/403, or 429 after repeated failures)."""
    if wait := throttle_wait(request, kind="auth", limit=auth_failure_limit()):
        return too_many(wait, f"Too many failed credentials from this address; try again in {wait} seconds.")
    found = _authenticate(request)
    if isinstance(found, HttpResponse) and getattr(found, "credentials_rejected", False):
        count_failure(request, kind="auth", limit=auth_failure_limit())
    return found


def _authenticate(request: HttpRequest) -> Caller | HttpResponse:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    user: AbstractBaseUser | None = None
    presented_key = presented_uid = None
    if scheme.lower() == "bearer" and token:
        if token.startswith(KEY_PREFIX):
            user = apikey_authenticate(raw=token)
        else:
            user = oauth_token_user(request, token)
        if user is None:
            return unauthorized(request, presented=True)
    else:
        uid, key = request.GET.get("uid"), request.GET.get("key")
        if not (uid and key):
            return unauthorized(request, presented=bool(uid or key or header))
        user = apikey_authenticate(raw=key, uid=uid)
        if user is None:
            return unauthorized(request, presented=True)
        presented_key, presented_uid = key, uid
    return Caller(
        user=user,
        transport="http",
        workdir=settings.PILLBOX_ROOT,
        request=request,
        presented_key=presented_key,
        presented_uid=presented_uid,
    )


class LoginThrottleMiddleware:
    """Failed password logins (the site's and the admin's login forms) per client IP per window: once
    ``LOGIN_RATE_LIMIT`` is reached, every POST to those forms answers 429 with ``Retry-After`` until the window
    ends. A failed login is the form coming back (200); a success redirects."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self._paths: frozenset[str] | None = None

    def login_paths(self) -> frozenset[str]:
        if self._paths is None:
            paths = set()
            for name in ("login", "admin:login"):
                try:
                    paths.add(reverse(name))
                except NoReverseMatch:
                    continue
            self._paths = frozenset(paths)
        return self._paths

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST" or request.path not in self.login_paths():
            return self.get_response(request)
        limit = getattr(settings, "LOGIN_RATE_LIMIT", (10, 60))
        if wait := throttle_wait(request, kind="login", limit=limit):
            return too_many(
                wait,
                f"Too many failed logins from this address; try again in {wait} seconds.\n",
                content_type="text/plain; charset=utf-8",
            )
        response = self.get_response(request)
        if response.status_code == 200:
            count_failure(request, kind="login", limit=limit)
        return response
