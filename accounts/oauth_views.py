"""The OAuth 2.1 authorization server for remote MCP clients: DOT's views, narrowed to what MCP needs.

Routes (``oauth_urlpatterns``, mounted at the site root under the ``oauth2_provider`` namespace DOT reverses):

- ``/.well-known/oauth-authorization-server`` (RFC 8414; issuer = SITE_URL), also answered at the path-suffixed
  form ``/.well-known/oauth-authorization-server/<mcp path>`` that some older clients derive from the MCP URL,
  with the same document and issuer (no OIDC: ``/.well-known/openid-configuration`` is a 404, so clients that
  probe it move on);
- ``/.well-known/oauth-protected-resource/mcp`` and ``/.well-known/oauth-protected-resource/pillbox/mcp``
  (RFC 9728), one per MCP endpoint;
- ``/o/authorize/`` (login + consent), ``/o/token/``, ``/o/revoke_token/``, ``/o/register/`` (RFC 7591,
  anonymous, rate limited) and ``/o/register/<client_id>/`` (RFC 7592, with the registration access token);
- ``/accounts/login/`` and ``/accounts/logout/`` (Django's auth views, branded templates).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth import views as auth_views
from django.db import router, transaction
from django.db.models import F
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path, reverse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider import views as dot
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model, get_refresh_token_model
from oauth2_provider.views.mixins import OAuthLibMixin
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from accounts.client_policy import metadata_problem
from accounts.oauth import (
    MCP_RESOURCES,
    MCP_SCOPE,
    issuer,
    mcp_resources,
    registration_rate_limited,
    resource_allowed,
    site_url,
)
from base.jsonbody import BodyNotJson, parse_json


class AuthorizationServerMetadataView(dot.OAuthServerMetadataView):
    """DOT's RFC 8414 document, with the issuer fixed to SITE_URL whichever well-known URL was asked."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
        response = super().get(request, *args, **kwargs)
        data = json.loads(response.content)
        data["issuer"] = issuer()
        data["service_documentation"] = f"{issuer()}/"
        response = JsonResponse(data)
        response["Access-Control-Allow-Origin"] = "*"
        return response


class ProtectedResourceMetadataView(dot.OAuthProtectedResourceMetadataView):
    """RFC 9728 metadata for one MCP endpoint (``url_name`` picks it)."""

    url_name = ""

    def get_resource(self, request: HttpRequest) -> str:
        return site_url() + reverse(self.url_name).rstrip("/")

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        return [issuer()]

    def get_scopes_supported(self) -> list[str]:
        return [MCP_SCOPE]

    def get_resource_name(self) -> str:
        return f"{MCP_RESOURCES[self.url_name]} MCP server"


_LOGIN_REQUIRED = (
    "The client asked for an answer without any page (prompt=none), but signing in and approving it here "
    "are needed first: start again from the client without prompt=none."
)


class McpAuthorizationView(dot.AuthorizationView):
    """DOT's authorization endpoint (login required, then consent), refusing up front any request whose
    ``resource`` is missing or not one of our MCP endpoints, and showing the resources on the consent page.

    Nothing before the consent form is posted redirects to the client: errors are shown on this site, and so is
    ``prompt=none``'s ``login_required`` (DOT sends it to the redirect URI, which any anonymous registration
    names), whether the browser has no session or has one that has not approved this request (consent is always
    asked here, so a silent answer is never possible)."""

    template_name = "oauth2_provider/authorize.html"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if (refusal := self._refusal(request)) is not None:
            return refusal
        return super().get(request, *args, **kwargs)

    def handle_no_permission(self) -> HttpResponse:
        """No session: DOT's answer (the login page), except that a bad request is refused here first, and
        ``prompt=none`` (no page may be shown, and none can be skipped) is answered here too."""
        if self.request.method == "GET" and (refusal := self._refusal(self.request)) is not None:
            return refusal
        response: HttpResponse = super().handle_no_permission()
        return response

    def _refusal(self, request: HttpRequest) -> HttpResponse | None:
        """The page refusing this request before any consent, or None to go on."""
        resources = request.GET.getlist("resource")
        problem: tuple[str, str] | None = None
        if not resources:
            problem = ("invalid_target", "A resource parameter naming the MCP endpoint is required.")
        elif not all(resource_allowed(resource) for resource in resources):
            problem = ("invalid_target", "The resource is not an MCP endpoint of this site: " + " ".join(resources))
        elif request.GET.get("code_challenge") and request.GET.get("code_challenge_method") != "S256":
            # oauthlib accepts "plain" here and DOT only refuses it when the consent form is posted.
            problem = ("invalid_request", "PKCE code_challenge_method must be S256.")
        prompt = set(request.GET.get("prompt", "").split())
        if problem is None and "none" not in prompt:
            return None
        try:
            _scopes, credentials = self.validate_authorization_request(request)
        except OAuthToolkitError as error:  # bad client or redirect URI, or a bad request: shown here
            return self.error_response(error, application=None)
        application = get_application_model().objects.get(client_id=credentials["client_id"])
        if problem is None:
            if application.skip_authorization and request.user.is_authenticated:
                return None  # approved in advance by the site: DOT answers without a page, as prompt=none asks
            problem = ("login_required", _LOGIN_REQUIRED)
        refusal = OAuthToolkitError(
            error=CustomOAuth2Error(error=problem[0], description=problem[1], state=credentials.get("state")),
            redirect_uri=credentials["redirect_uri"],
        )
        return self.error_response(refusal, application)

    def error_response(self, error: Any, application: Any, **kwargs: Any) -> HttpResponse:
        """Errors found before the person answered the consent page are shown here, never redirected: a redirect
        would make this endpoint an open redirector to any registered URI (RFC 9700 section 4.11.2). After consent
        (the form POST), the client and its redirect URI are known good and the answer goes back to it."""
        if self.request.method != "GET":
            return super().error_response(error, application, **kwargs)
        _redirect, data = OAuthLibMixin.error_response(self, error, **kwargs)
        data.pop("url", None)
        return self.render_to_response(data, status=data["error"].status_code or 400)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        known = mcp_resources()
        resource = context.get("resource") or ""
        context["resources"] = [(url, known.get(url.rstrip("/"), url)) for url in resource.split()]
        application = context.get("application")
        if application is not None:
            redirect = urlsplit(context.get("redirect_uri") or "")
            context["redirect_host"] = redirect.netloc or redirect.scheme
            client_id = application.client_id
            context["client_host"] = urlsplit(client_id).netloc if client_id.startswith("https://") else ""
        return context


@method_decorator(csrf_exempt, name="dispatch")
class McpTokenView(dot.TokenView):
    """DOT's token endpoint, with refreshes of one refresh token taken one at a time.

    DOT validates a refresh token outside the transaction that rotates it, so two refreshes with the same token
    at once could both pass: two winners with different tokens, or the loser's reuse detection deleting the access
    token the winner was still answering with (a 500 from DOT's own lookup after issuing it). Here the whole
    exchange runs in one transaction that first writes the token's row (a row lock on PostgreSQL, the write lock
    on SQLite): the first refresh rotates it and answers; every other one then finds it already used, which is a
    reuse, so it answers ``invalid_grant`` and the whole token family is revoked (the winner's new tokens too),
    as for any reuse with ``REFRESH_TOKEN_GRACE_PERIOD_SECONDS`` at 0."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        presented = request.POST.get("refresh_token") if request.POST.get("grant_type") == "refresh_token" else None
        if not presented:
            response: HttpResponse = super().post(request, *args, **kwargs)
            return response
        RefreshToken = get_refresh_token_model()
        checksum = hashlib.sha256(presented.encode("utf-8", "replace")).hexdigest()
        with transaction.atomic(using=router.db_for_write(RefreshToken)):
            RefreshToken.objects.filter(token_checksum=checksum).update(token_checksum=F("token_checksum"))
            response = super().post(request, *args, **kwargs)
        return response


def _rate_limited(request: HttpRequest) -> HttpResponse | None:
    if retry_after := registration_rate_limited(request):
        response = JsonResponse(
            {"error": "rate_limited", "error_description": "Too many client registrations from this address."},
            status=429,
        )
        response["Retry-After"] = str(retry_after)
        return response
    return None


def _read_metadata(request: HttpRequest) -> dict[str, Any] | HttpResponse:
    """The client metadata of a registration or update, or the 400 refusing it (not JSON, too deep, or against
    the client policy). DOT's views parse the body again: by then it is known to parse."""
    try:
        data = parse_json(request.body)
    except BodyNotJson as error:
        return _metadata_error(str(error))
    if problem := metadata_problem(data):
        return _metadata_error(problem)
    return data


def _describe(response: HttpResponse, data: dict[str, Any]) -> HttpResponse:
    """DOT's answer, completed as RFC 7591 section 3.2.1 asks: when a secret was issued, ``client_secret_expires_at``
    (0: it does not expire), and the ``token_endpoint_auth_method`` the client asked for when it is
    ``client_secret_post`` (the token endpoint accepts a confidential client's secret in the body or in Basic)."""
    if response.status_code not in (200, 201) or response.get("Content-Type") != "application/json":
        return response
    body = json.loads(response.content)
    if "client_secret" in body:
        body["client_secret_expires_at"] = 0
    asked = data.get("token_endpoint_auth_method")
    if asked == "client_secret_post" and body.get("token_endpoint_auth_method") == "client_secret_basic":
        body["token_endpoint_auth_method"] = "client_secret_post"
    return JsonResponse(body, status=response.status_code)


@method_decorator(csrf_exempt, name="dispatch")
class RegistrationView(dot.DynamicClientRegistrationView):
    """RFC 7591 registration, open to anonymous MCP clients, rate limited per IP, held to the client policy
    (``accounts.client_policy``: authorization code only, https or loopback http redirect URIs)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if limited := _rate_limited(request):
            return limited
        data = _read_metadata(request)
        if isinstance(data, HttpResponse):
            return data
        return _describe(super().post(request, *args, **kwargs), data)


@method_decorator(csrf_exempt, name="dispatch")
class RegistrationManagementView(dot.DynamicClientRegistrationManagementView):
    """RFC 7592 read, update and delete with the registration access token. An update is held to the same policy
    as a registration (DOT's own update checked nothing of it) and rate limited like registrations."""

    def put(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if limited := _rate_limited(request):
            return limited
        data = _read_metadata(request)
        if isinstance(data, HttpResponse):
            return data
        return _describe(super().put(request, *args, **kwargs), data)


def _metadata_error(description: str) -> JsonResponse:
    return JsonResponse({"error": "invalid_client_metadata", "error_description": description}, status=400)


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True


def _metadata_paths() -> list[URLPattern]:
    server_metadata = AuthorizationServerMetadataView.as_view()
    routes = [
        path(".well-known/oauth-authorization-server", server_metadata, name="oauth-server-metadata"),
    ]
    mcp_paths = {"mcp-todos": "mcp", "mcp-pillbox": "pillbox/mcp"}
    for url_name, mcp_path in mcp_paths.items():
        routes.append(
            path(
                f".well-known/oauth-protected-resource/{mcp_path}",
                ProtectedResourceMetadataView.as_view(url_name=url_name),
                name=f"oauth-resource-metadata-{url_name}",
            )
        )
        routes.append(
            path(
                f".well-known/oauth-authorization-server/{mcp_path}",
                server_metadata,
                name=f"oauth-server-metadata-{url_name}",
            )
        )
    return routes


oauth_urlpatterns = [
    *_metadata_paths(),
    path("o/authorize/", McpAuthorizationView.as_view(), name="authorize"),
    path("o/token/", McpTokenView.as_view(), name="token"),
    path("o/revoke_token/", dot.RevokeTokenView.as_view(), name="revoke-token"),
    path("o/register/", RegistrationView.as_view(), name="dcr-register"),
    path(
        "o/register/<str:client_id>/",
        RegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
]

account_urlpatterns = [
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]
