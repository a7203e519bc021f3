"""OAuth 2.1 for remote MCP clients, on django-oauth-toolkit (DOT) 3.4.1: the resource-server side and policy.

The authorization server is DOT (views in ``accounts.oauth_views``). This module holds what DOT leaves to us:

- the MCP resources: each MCP endpoint is its own protected resource, identified by its canonical URL built
  from ``SITE_URL`` (``{SITE_URL}/mcp``, ``{SITE_URL}/pillbox/mcp``);
- audience binding: every token is issued for one or more of those resources and for nothing else
  (``McpOAuth2Validator``: an authorization request or token request without ``resource``, or naming any other
  URL, is refused with ``invalid_target``), and the MCP endpoints accept a token only when their own canonical URL
  is among its resources (``verify_access_token``; DOT alone would let a token without resources through
  everywhere, and would compare against the request's own URL rather than the canonical one);
- the registration rate limit (per client IP, Django's cache);
- CORS for browser-based MCP clients (``OAuthCorsMiddleware``), which also answers preflight ``OPTIONS`` so it
  never reaches the MCP view (whose only method is POST).

Decision: one token, one endpoint. MCP clients send ``resource`` = the URL of the endpoint they connect to, so a
token serves /mcp or /pillbox/mcp, not both; a client that asks for both resources at once (RFC 8707 allows
repeating ``resource``) gets a token valid at both, after the user approved both on the consent page.

DOT 3.4.1 surprises (checked in its source; each one is handled here or in ``accounts.oauth_views``):

1. ``OAuth2Validator.validate_bearer_token`` lets a token with an empty ``resource`` through for any audience, and
   its audience check is a URL *prefix* match against ``request.build_absolute_uri()``: a token for
   ``https://host/`` is valid at every path, and behind a proxy the Host decides. Hence ``verify_access_token``.
2. Nothing in DOT allowlists ``resource``: the authorization endpoint accepts requests without one, and when the
   grant has none the token endpoint stores whatever absolute URL the token request names.
   ``OAUTH2_PROTECTED_RESOURCE_IDENTIFIER`` only feeds the RFC 9728 document. Hence ``McpOAuth2Validator``.
3. ``COMPLIANT_BCP_RFC9700_PKCE_METHOD`` refuses PKCE ``plain`` only when the consent form is POSTed (oauthlib
   accepts it at GET, so the user sees the consent page first); the authorization view refuses it at GET.
4. ``OAUTH2_GRANT_TYPES_SUPPORTED`` / ``OAUTH2_RESPONSE_TYPES_SUPPORTED`` / ``..._AUTH_METHODS_SUPPORTED`` are
   advertisement only; what the endpoints accept is gated by the ``COMPLIANT_BCP_RFC9700_*`` flags (set).
5. The RFC 8414 issuer, the endpoint URLs in it, the RFC 9207 ``iss`` and the RFC 9728 ``authorization_servers``
   come from the request's Host unless ``OIDC_ISS_ENDPOINT`` is set — it is honoured with OIDC off. Settings
   set it to SITE_URL; a test that moves SITE_URL must move ``OAUTH2_PROVIDER["OIDC_ISS_ENDPOINT"]`` too.
6. The metadata views ``reverse("oauth2_provider:<name>")``: our routes must sit in that namespace. Including
   ``oauth2_provider.urls`` wholesale would also publish device flow, application management, introspection
   (advertised in the metadata as soon as its URL name exists) and ``.well-known/oauth-protected-resource/<path>``
   for *any* path; we mount a chosen subset.
7. DCR (RFC 7591): one grant type per application (``refresh_token`` is implied); an omitted
   ``token_endpoint_auth_method`` means ``client_secret_basic`` (confidential); it accepts client_credentials,
   password and implicit and any http redirect URI, joins the ``redirect_uris`` array with spaces (one element
   with a space becomes two URIs), has no rate limit, and its RFC 7592 update checks nothing beyond
   ``full_clean()``. ``accounts.client_policy`` extends ``Application.clean`` and the registration views check
   the JSON first (``accounts.oauth_views``).
8. CIMD: the client_id must start with ``https://`` and ``SafeMetadataFetcher`` refuses http and non-public
   IPs (loopback too), so tests swap ``CIMD_METADATA_FETCHER``; a failed fetch is remembered in the cache for
   ``CIMD_FAILURE_BACKOFF_SECONDS`` (60 s), so clear the cache between tests. Resolution is allowed only at
   the authorization endpoint and counted like a registration (``AuthorizationEndpointCIMDPermission``); DOT
   would also fetch at the token endpoint, for any ``https://`` client_id, without login.
9. With ``COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS`` the metadata says ``authorization_response_iss_parameter_
   supported`` and the MCP SDK then *requires* ``iss`` from the callback handler.
10. With ``COMPLIANT_BCP_RFC9700_TOKEN_STORAGE`` the ``token`` column is blank (lookups by SHA-256 checksum):
    mint test tokens with ``oauth2_provider.models.set_token_value``. Revoking an access token deletes the row.
11. ``manage.py check --deploy`` warns (W008) about ``http`` in ``ALLOWED_REDIRECT_URI_SCHEMES``; it is needed for
    RFC 8252 loopback redirects, restricted to loopback hosts at registration, and the warning is silenced.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model
from oauth2_provider.oauth2_backends import get_oauthlib_core
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauthlib.oauth2.rfc6749 import errors

from accounts.models import RedeemedCode
from accounts.throttle import bump, client_ip, client_ip_of, seconds_left

MCP_SCOPE = "mcp"
# URL names of the MCP endpoints (config.urls) and the name each shows on the consent page.
MCP_RESOURCES = {"mcp-todos": "Todos", "mcp-pillbox": "Pillbox"}


# --- resources ---------------------------------------------------------------------------------------------


def site_url() -> str:
    return settings.SITE_URL.rstrip("/")


def issuer() -> str:
    """The authorization server's issuer: ``OIDC_ISS_ENDPOINT`` (set to SITE_URL in settings), else SITE_URL."""
    return (oauth2_settings.OIDC_ISS_ENDPOINT or site_url()).rstrip("/")


def _normal(url: str) -> str:
    return url.rstrip("/")


def mcp_resources() -> dict[str, str]:
    """Canonical resource URL -> display name, for every MCP endpoint."""
    resources = {}
    for url_name, label in MCP_RESOURCES.items():
        try:
            resources[site_url() + reverse(url_name).rstrip("/")] = label
        except NoReverseMatch:
            continue
    return resources


def resource_for_path(path: str) -> str | None:
    """The canonical resource URL of the MCP endpoint at ``path`` (None if ``path`` is not one)."""
    candidate = site_url() + path.rstrip("/")
    return candidate if candidate in mcp_resources() else None


def resource_allowed(resource: str) -> bool:
    return _normal(resource) in mcp_resources()


def _invalid_target(description: str, request: Any) -> errors.CustomOAuth2Error:
    return errors.CustomOAuth2Error(error="invalid_target", description=description, request=request)


def check_requested_resources(resources: list[str], request: Any = None) -> None:
    """Raise ``invalid_target`` unless ``resources`` is non-empty and names only our MCP endpoints."""
    if not resources:
        raise _invalid_target(
            "A resource parameter is required: the URL of the MCP endpoint, e.g. " + next(iter(mcp_resources()), ""),
            request,
        )
    for resource in resources:
        if not resource_allowed(resource):
            raise _invalid_target(
                f"The resource '{resource}' is not served here. Known resources: " + ", ".join(mcp_resources()),
                request,
            )


def code_hash(code: str) -> str:
    return hashlib.sha256(str(code).encode("utf-8", "surrogatepass")).hexdigest()


class McpOAuth2Validator(OAuth2Validator):
    """DOT's validator, with every grant and token bound to our MCP resources (RFC 8707), authorization codes
    stored as SHA-256 hashes like tokens (every method that looks a grant up by its code hashes the code first),
    and a replayed code revoking what it bought."""

    def _create_authorization_code(self, request: Any, code: dict[str, Any], expires: Any = None) -> Any:
        # The consent form carries `resource` in a hidden field: re-check what is about to be stored on the grant.
        check_requested_resources(list(getattr(request, "resource", None) or []), request)
        # A copy: oauthlib sends the caller the dict it passed in, which must keep the code itself.
        return super()._create_authorization_code(request, {**code, "code": code_hash(code["code"])}, expires)

    def _check_and_set_request_resource(self, request: Any) -> None:
        # DOT narrows/inherits `resource` from the grant or refresh token; when neither had one it takes the
        # token request's value as is. Whatever comes out must be non-empty and ours.
        raw_code = getattr(request, "code", None)
        if raw_code:
            request.code = code_hash(raw_code)  # DOT reads the grant by request.code here
        try:
            super()._check_and_set_request_resource(request)
        finally:
            if raw_code:
                request.code = raw_code
        check_requested_resources(list(request.resource or []), request)

    def confirm_redirect_uri(
        self, client_id: str, code: str, redirect_uri: str, client: Any, *args: Any, **kwargs: Any
    ) -> bool:
        return super().confirm_redirect_uri(client_id, code_hash(code), redirect_uri, client, *args, **kwargs)

    def get_code_challenge(self, code: str, request: Any) -> str | None:
        return super().get_code_challenge(code_hash(code), request)

    def get_code_challenge_method(self, code: str, request: Any) -> str | None:
        return super().get_code_challenge_method(code_hash(code), request)

    def get_authorization_code_scopes(self, client_id: str, code: str, redirect_uri: str, request: Any) -> list[str]:
        return super().get_authorization_code_scopes(client_id, code_hash(code), redirect_uri, request)

    def get_authorization_code_nonce(self, client_id: str, code: str, redirect_uri: str, request: Any) -> str | None:
        return super().get_authorization_code_nonce(client_id, code_hash(code), redirect_uri, request)

    def validate_code(self, client_id: str, code: str, client: Any, request: Any, *args: Any, **kwargs: Any) -> bool:
        if super().validate_code(client_id, code_hash(code), client, request, *args, **kwargs):
            return True
        _revoke_what_a_code_bought(code_hash(code))
        return False

    def save_bearer_token(self, token: dict[str, Any], request: Any, *args: Any, **kwargs: Any) -> Any:
        result = super().save_bearer_token(token, request, *args, **kwargs)
        if getattr(request, "grant_type", None) == "authorization_code" and token.get("access_token"):
            request.issued_from_code = (token.get("access_token"), token.get("refresh_token"))
        return result

    def invalidate_authorization_code(
        self, client_id: str, code: str, request: Any, *args: Any, **kwargs: Any
    ) -> None:
        super().invalidate_authorization_code(client_id, code_hash(code), request, *args, **kwargs)
        access, refresh = getattr(request, "issued_from_code", (None, None))
        family = None
        if refresh:
            family = (
                get_refresh_token_model()
                .objects.filter(token_checksum=code_hash(refresh))
                .values_list("token_family", flat=True)
                .first()
            )
        RedeemedCode.objects.create(
            code_hash=code_hash(code), token_family=family, access_token_checksum=code_hash(access) if access else ""
        )
        # Codes live a minute: a day of redeemed ones is plenty to catch a replay.
        RedeemedCode.objects.filter(redeemed_at__lt=timezone.now() - timedelta(days=1)).delete()


def _revoke_what_a_code_bought(hashed: str) -> None:
    """A code exchanged before is being exchanged again: whoever holds it is not (only) the client it was issued
    to, so the tokens it bought are revoked (their refresh-token family, and the access token)."""
    redeemed = RedeemedCode.objects.filter(code_hash=hashed).first()
    if redeemed is None:
        return
    if redeemed.token_family:
        get_refresh_token_model().revoke_family(redeemed.token_family)
    if redeemed.access_token_checksum:
        get_access_token_model().objects.filter(token_checksum=redeemed.access_token_checksum).delete()


# --- the bearer check at the MCP endpoints -------------------------------------------------------------------


@dataclass
class TokenCheck:
    user: User | None
    error: str = "invalid_token"
    description: str = ""
    access_token: Any = None


def verify_access_token(request: HttpRequest, token: str) -> TokenCheck:
    """Check an OAuth access token presented at an MCP endpoint: known, unexpired, unrevoked (revoking deletes
    the row), scope ``mcp``, issued for this endpoint's canonical URL, for an active user."""
    resource = resource_for_path(request.path)
    if resource is None:
        return TokenCheck(None, description="This URL is not an OAuth-protected MCP endpoint.")
    core = get_oauthlib_core()
    # The canonical URL, not request.build_absolute_uri(): behind a proxy the two may differ, and the token's
    # audience is the canonical URL the protected-resource metadata advertises.
    valid, oauth_request = core.server.verify_request(
        resource, "POST", "", {"Authorization": f"Bearer {token}"}, scopes=[MCP_SCOPE]
    )
    if not valid:
        error = dict(getattr(oauth_request, "oauth2_error", None) or {})
        return TokenCheck(
            None,
            error.get("error", "invalid_token"),
            str(error.get("error_description", "The access token is invalid.")),
        )
    access_token = oauth_request.access_token
    audiences = [_normal(value) for value in (access_token.resource or []) if isinstance(value, str)]
    if resource not in audiences:
        # DOT treats a token without resources as valid anywhere; here it is valid nowhere.
        return TokenCheck(None, description="The access token was not issued for this MCP endpoint.")
    user = access_token.user
    if user is None or not user.is_active:
        return TokenCheck(None, description="The access token has no active user.")
    return TokenCheck(user, access_token=access_token)


# --- dynamic client registration: rate limit -------------------------------------------------------------------


def registration_rate_limited(request: HttpRequest) -> int:
    """Count one registration for the caller's IP; return 0 if allowed, else seconds until the window ends."""
    return _count_registration(client_ip(request))


def _count_registration(address: str) -> int:
    """Count one registration (dynamic, or a client ID metadata document's first sight) for ``address``; the
    seconds to wait when that is one too many, else 0.

    ``OAUTH_DCR_RATE_LIMIT = (count, seconds)`` per IP, a bucket of ``accounts.throttle`` in the default cache
    (per process with the local-memory cache, so with several worker processes the effective limit is count x
    workers; ``REDIS_URL`` makes it exact)."""
    limit, window = getattr(settings, "OAUTH_DCR_RATE_LIMIT", (20, 3600))
    if not limit:
        return 0
    bucket = f"oauth:dcr:{address}"
    return 0 if bump(bucket, 1, window) <= limit else seconds_left(bucket, window)


class AuthorizationEndpointCIMDPermission:
    """Client ID metadata documents are fetched only at the authorization endpoint (where a person is signed in
    and will see the consent page), never at the token endpoint, and each first sight counts against the
    caller's registration budget (``OAUTH_DCR_RATE_LIMIT``): fetching URLs on anyone's say-so is registration."""

    def has_permission(self, request: Any, client_id: str) -> bool:
        try:
            at_authorize = urlsplit(request.uri).path == reverse("oauth2_provider:authorize")
        except (NoReverseMatch, ValueError):
            return False
        if not at_authorize:
            return False
        return not _count_registration(client_ip_of(request.headers or {}))


# --- CORS -------------------------------------------------------------------------------------------------------

CORS_ALLOW_HEADERS = "Authorization, Content-Type, Accept, MCP-Protocol-Version, Mcp-Session-Id, Last-Event-ID"
CORS_EXPOSE_HEADERS = "WWW-Authenticate, MCP-Protocol-Version, Mcp-Session-Id"
CORS_PREFIXES = ("/.well-known/oauth-", "/o/token/", "/o/revoke_token/", "/o/register/")


def cors_applies(path: str) -> bool:
    if path.startswith(CORS_PREFIXES):
        return True
    return any(path.rstrip("/") == reverse(name).rstrip("/") for name in MCP_RESOURCES)


class OAuthCorsMiddleware:
    """CORS for browser-based MCP clients on the MCP endpoints, the token, revocation and registration endpoints
    and the OAuth metadata. Credentials are bearer tokens in headers, never cookies, so ``*`` is safe here; the
    MCP view still applies its own Origin check (DNS-rebinding protection) to the POST itself.

    Preflight ``OPTIONS`` is answered here (204), before any view: the MCP view answers only POST."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not cors_applies(request.path):
            return self.get_response(request)
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = "GET, POST, DELETE, OPTIONS"
            response["Access-Control-Allow-Headers"] = CORS_ALLOW_HEADERS
            response["Access-Control-Max-Age"] = "86400"
        else:
            response = self.get_response(request)
        response["Access-Control-Allow-Origin"] = "*"
        response["Access-Control-Expose-Headers"] = CORS_EXPOSE_HEADERS
        return response
