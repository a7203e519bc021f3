"""Who is calling an MCP endpoint over HTTP: an API key (Bearer or ?uid=&key=) or an OAuth access token."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse

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


def mcp_caller(request: HttpRequest) -> Caller | HttpResponse:
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
