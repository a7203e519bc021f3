"""Who is calling an MCP endpoint over HTTP: an API key (Bearer or ?uid=&key=) or an OAuth access token."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse

from accounts.services import KEY_PREFIX, apikey_authenticate
from config.mcp.tools import Caller


def protected_resource_metadata_url(request: HttpRequest) -> str:
    return f"{settings.SITE_URL}/.well-known/oauth-protected-resource{request.path.rstrip('/')}"


def unauthorized(request: HttpRequest, *, presented: bool) -> HttpResponse:
    challenge = f'Bearer resource_metadata="{protected_resource_metadata_url(request)}", scope="mcp"'
    if presented:
        challenge += ', error="invalid_token"'
    response = HttpResponse(
        '{"error": "unauthorized", "message": "Send Authorization: Bearer <key or token>, or ?uid=&key="}',
        status=401,
        content_type="application/json",
    )
    response["WWW-Authenticate"] = challenge
    return response


def oauth_token_user(request: HttpRequest, token: str) -> AbstractBaseUser | None:
    """The user of a valid OAuth access token issued for this MCP resource.

    The place where django-oauth-toolkit's bearer check goes (expiry, revocation, audience); until the
    OAuth flow is built, no OAuth token is accepted.
    """
    return None


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
