"""Who is calling an MCP endpoint over HTTP: an API key (Bearer or ?uid=&key=) or an OAuth access token.

Guessing is throttled without locking anyone out (``accounts.throttle``): the credential is checked first and a
valid one always passes; only failures are counted, per client address and per presented uid, and once either
bucket is full further failures answer 429 with ``Retry-After``. The login forms are guarded by
``LoginThrottleMiddleware``: per (username, address) and per address, and across addresses a slowdown, never a
lockout (``accounts.throttle.login_wait``).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.forms import UsernameField
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse

from accounts.caller import Caller, Credential
from accounts.devices import device_known, device_remember
from accounts.services import KEY_PREFIX, apikey_find
from accounts.throttle import auth_failure_limit, failure, login_failure, login_wait, too_many

# The kind of credential a request carried, as the refusal names it.
KIND_API_KEY, KIND_OAUTH, KIND_UID_KEY = "API key", "OAuth access token", "uid and key"


def protected_resource_metadata_url(request: HttpRequest) -> str:
    return f"{settings.SITE_URL}/.well-known/oauth-protected-resource{request.path.rstrip('/')}"


def unauthorized(request: HttpRequest, *, presented: bool, kind: str = "") -> HttpResponse:
    """401 with the RFC 9728 challenge; 403 ``insufficient_scope`` when a valid OAuth token lacks the ``mcp`` scope
    (what ``verify_access_token`` found is left on ``request.oauth_error``)."""
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
    if status == 403:
        message = "The access token does not carry the mcp scope"
    elif presented:
        # Telling the client what was recognised and refused saves it from resending the same thing differently.
        message = (
            f"The credential was refused: the {kind or 'credential'} sent is unknown, expired or revoked, "
            "or its user is inactive"
        )
    else:
        message = "Send Authorization: Bearer <key or token>, or ?uid=&key="
    response = HttpResponse(
        json.dumps({"error": "forbidden" if status == 403 else "unauthorized", "message": message}),
        status=status,
        content_type="application/json",
    )
    response["WWW-Authenticate"] = challenge
    # Credentials were sent and are wrong (not merely missing, nor a valid token short of scope): a guess.
    response.credentials_rejected = status == 401 and presented  # type: ignore[attr-defined]  # a mark, read by getattr
    return response


def mcp_caller(request: HttpRequest) -> Caller | HttpResponse:
    """The caller of an MCP request, or the response refusing it (401/403, or 429 once this address or this
    uid has failed too often). A valid credential always passes, however many failures came before it."""
    found = _authenticate(request)
    if isinstance(found, HttpResponse) and getattr(found, "credentials_rejected", False):
        identity = request.GET.get("uid") or None
        if wait := failure(request, kind="auth", limit=auth_failure_limit(), identity=identity):
            return too_many(wait, f"Too many failed credentials; try again in {wait} seconds.")
    return found


def _oauth_caller(request: HttpRequest, token: str) -> Caller | HttpResponse:
    from accounts.oauth import verify_access_token

    check = verify_access_token(request, token)
    if check.user is None or check.access_token is None:
        request.oauth_error = check  # type: ignore[attr-defined]  # a mark, read by getattr in unauthorized
        return unauthorized(request, presented=True, kind=KIND_OAUTH)
    # The token family (what a /list link dies with) is looked up only when a link is made, not on every request.
    credential = Credential(
        kind="oauth", application_id=check.access_token.application_id, access_token_id=check.access_token.pk
    )
    return Caller(
        user=check.user, transport="http", workdir=settings.PILLBOX_ROOT, request=request, credential=credential
    )


def _authenticate(request: HttpRequest) -> Caller | HttpResponse:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    presented_key = presented_uid = None
    if scheme.lower() == "bearer" and token:
        if not token.startswith(KEY_PREFIX):
            return _oauth_caller(request, token)
        key = apikey_find(raw=token)
        if key is None:
            return unauthorized(request, presented=True, kind=KIND_API_KEY)
    else:
        uid, raw = request.GET.get("uid"), request.GET.get("key")
        if not (uid and raw):
            return unauthorized(request, presented=bool(uid or raw or header), kind=KIND_UID_KEY if uid or raw else "")
        key = apikey_find(raw=raw, uid=uid)
        if key is None:
            return unauthorized(request, presented=True, kind=KIND_UID_KEY)
        presented_key, presented_uid = raw, uid
    return Caller(
        user=key.user,
        transport="http",
        workdir=settings.PILLBOX_ROOT,
        request=request,
        presented_key=presented_key,
        presented_uid=presented_uid,
        credential=Credential(kind="api_key", api_key_id=key.pk),
    )


# --- logins ------------------------------------------------------------------------------------------------


def login_username(raw: object) -> str:
    """The username a login form's text names, as Django's login form reads it (surrounding spaces stripped,
    NFKC): "ALICE " is the account "ALICE", not "alice" (usernames are matched exactly)."""
    try:
        return str(UsernameField(max_length=150).clean(str(raw)))
    except ValidationError:
        return str(raw).strip()[:150]


class LoginThrottleMiddleware:
    """Failed password logins (the site's and the admin's login forms), counted per (username, address), per
    address, and per account across addresses (``accounts.throttle``). Passwords can be guessed, unlike keys, so a
    full (username, address) or address bucket answers 429 without checking the password, and an account guessed
    at from many addresses makes every address wait a growing delay between checked attempts. A browser that
    signed in as the user before (a signed cookie set at each successful login) skips all of it, so a stranger
    can neither lock the owner out of their own browsers nor do more than slow a new one down; that cookie counts
    only while the password is unchanged and its record live (``accounts.devices``). A failed login is the form
    coming back (200); a success redirects."""

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
        username = login_username(request.POST.get("username", ""))
        known = bool(username) and device_known(request=request, username=username)
        if not known and (wait := login_wait(request, username)):
            return too_many(
                wait,
                f"Too many failed logins for this account or from this address; try again in {wait} seconds.\n",
                content_type="text/plain; charset=utf-8",
            )
        response = self.get_response(request)
        if response.status_code == 200:
            login_failure(request, username)
        elif 300 <= response.status_code < 400 and getattr(request, "user", None) and request.user.is_authenticated:
            device_remember(request=request, response=response, user=request.user)
        return response
