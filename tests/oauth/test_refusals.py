"""What the MCP endpoints and the authorization server refuse, each at the HTTP level."""

from __future__ import annotations

import httpx2
import pytest
from oauth2_provider.models import get_access_token_model

from tests.oauth.helpers import (
    authorization_redirect,
    authorize_url,
    exchange,
    mint_token,
    pkce_pair,
    register,
    register_client,
)
from tests.oauth.test_flow import mcp_post

PATHS = ["/mcp", "/pillbox/mcp"]


def challenge_of(response: httpx2.Response) -> str:
    return response.headers["WWW-Authenticate"]


@pytest.mark.parametrize("path", PATHS)
def test_a_valid_token_for_the_endpoint_is_accepted(oauth_site, alice, path):
    token = mint_token(alice.user, resource=[oauth_site.resource(path)])
    response = mcp_post(oauth_site.url + path, token)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["tools"]


@pytest.mark.parametrize("path", PATHS)
def test_no_token_is_a_401_naming_the_metadata_and_scope(oauth_site, path):
    response = httpx2.post(oauth_site.url + path, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 401
    challenge = challenge_of(response)
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{oauth_site.url}/.well-known/oauth-protected-resource{path}"' in challenge
    assert 'scope="mcp"' in challenge
    assert "error=" not in challenge  # nothing was presented (RFC 6750 §3.1)


def test_an_expired_token_is_a_401(oauth_site, alice):
    token = mint_token(alice.user, resource=[oauth_site.resource("/mcp")], expires_in=-5)
    response = mcp_post(oauth_site.url + "/mcp", token, method="tools/call")
    assert response.status_code == 401
    assert 'error="invalid_token"' in challenge_of(response) and "expired" in challenge_of(response)


def test_a_revoked_token_is_a_401(oauth_site, alice):
    token = mint_token(alice.user, resource=[oauth_site.resource("/mcp")])
    assert mcp_post(oauth_site.url + "/mcp", token).status_code == 200
    get_access_token_model().objects.filter(user=alice.user).get().revoke()
    response = mcp_post(oauth_site.url + "/mcp", token)
    assert response.status_code == 401
    assert 'error="invalid_token"' in challenge_of(response)


@pytest.mark.parametrize(
    "audience",
    [["{site}/pillbox/mcp"], [], ["https://elsewhere.example/mcp"], ["{site}/"], ["{site}/mcp/extra"]],
    ids=["other-endpoint", "no-resource", "other-site", "site-root", "sub-path"],
)
def test_a_token_for_another_audience_is_a_401(oauth_site, alice, audience):
    token = mint_token(alice.user, resource=[value.format(site=oauth_site.url) for value in audience])
    response = mcp_post(oauth_site.url + "/mcp", token)
    assert response.status_code == 401
    assert 'error="invalid_token"' in challenge_of(response)


def test_a_token_without_the_mcp_scope_is_a_403_insufficient_scope(oauth_site, alice):
    token = mint_token(alice.user, resource=[oauth_site.resource("/mcp")], scope="read")
    response = mcp_post(oauth_site.url + "/mcp", token)
    assert response.status_code == 403
    challenge = challenge_of(response)
    assert 'error="insufficient_scope"' in challenge and 'scope="mcp"' in challenge
    assert "resource_metadata=" in challenge


def test_a_token_of_an_inactive_user_is_a_401(oauth_site, alice):
    token = mint_token(alice.user, resource=[oauth_site.resource("/mcp")])
    alice.user.is_active = False
    alice.user.save()
    assert mcp_post(oauth_site.url + "/mcp", token).status_code == 401


def test_pkce_mismatch_at_the_token_endpoint(oauth_site, alice_login):
    client_id = register_client(oauth_site.url)
    verifier, challenge = pkce_pair()
    params = authorization_redirect(oauth_site.url, authorize_url(oauth_site.url, client_id, challenge))
    assert params["state"] == "s-123" and params["iss"] == oauth_site.url

    wrong = exchange(oauth_site.url, client_id, params["code"], pkce_pair()[0])
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    missing = exchange(oauth_site.url, client_id, params["code"], None)
    assert missing.status_code == 400
    # No token was issued for a wrong or missing verifier.
    assert not get_access_token_model().objects.filter(user=alice_login.user).exists()


def test_the_right_verifier_gets_a_token_bound_to_the_resource(oauth_site, alice_login):
    client_id = register_client(oauth_site.url)
    verifier, challenge = pkce_pair()
    params = authorization_redirect(oauth_site.url, authorize_url(oauth_site.url, client_id, challenge))
    response = exchange(oauth_site.url, client_id, params["code"], verifier, resource=oauth_site.resource("/mcp"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["scope"] == "mcp" and body["token_type"] == "Bearer" and body["refresh_token"]
    assert get_access_token_model().objects.get(user=alice_login.user).resource == [oauth_site.resource("/mcp")]


def test_a_token_request_cannot_widen_the_resource(oauth_site, alice_login):
    client_id = register_client(oauth_site.url)
    verifier, challenge = pkce_pair()
    params = authorization_redirect(oauth_site.url, authorize_url(oauth_site.url, client_id, challenge))
    response = exchange(
        oauth_site.url, client_id, params["code"], verifier, resource=oauth_site.resource("/pillbox/mcp")
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_target"


def test_plain_pkce_is_refused(oauth_site, alice_login):
    client_id = register_client(oauth_site.url)
    url = authorize_url(oauth_site.url, client_id, "x" * 43, code_challenge_method="plain")
    response = httpx2.get(url, cookies=_session(oauth_site.url))
    # Shown on our own page, never redirected before consent (no open redirector).
    assert response.status_code == 400 and "location" not in response.headers
    assert "invalid_request" in response.text


def test_a_missing_code_challenge_is_refused(oauth_site, alice_login):
    client_id = register_client(oauth_site.url)
    response = httpx2.get(authorize_url(oauth_site.url, client_id, None), cookies=_session(oauth_site.url))
    assert response.status_code == 400 and "location" not in response.headers
    assert "invalid_request" in response.text


@pytest.mark.parametrize(
    "resource", [None, "https://elsewhere.example/mcp", "{site}/"], ids=["none", "foreign", "root"]
)
def test_authorization_without_an_mcp_resource_is_refused(oauth_site, alice_login, resource):
    client_id = register_client(oauth_site.url)
    _verifier, challenge = pkce_pair()
    value = resource.format(site=oauth_site.url) if resource else None
    response = httpx2.get(
        authorize_url(oauth_site.url, client_id, challenge, resource=value), cookies=_session(oauth_site.url)
    )
    assert response.status_code == 400 and "location" not in response.headers
    assert "invalid_target" in response.text


@pytest.mark.parametrize("redirect_uri", ["http://127.0.0.1:33418/elsewhere", "https://evil.example/callback"])
def test_an_unregistered_redirect_uri_is_refused_without_redirecting(oauth_site, alice_login, redirect_uri):
    client_id = register_client(oauth_site.url)
    _verifier, challenge = pkce_pair()
    url = authorize_url(oauth_site.url, client_id, challenge, redirect_uri=redirect_uri)
    response = httpx2.get(url, cookies=_session(oauth_site.url))
    assert response.status_code == 400
    assert "location" not in response.headers
    assert "cannot be completed" in response.text


def test_denying_on_the_consent_page_redirects_with_access_denied(oauth_site, alice_login):
    client_id = register_client(oauth_site.url)
    _verifier, challenge = pkce_pair()
    params = authorization_redirect(oauth_site.url, authorize_url(oauth_site.url, client_id, challenge), allow=False)
    assert params["error"] == "access_denied" and "code" not in params


def test_authorization_needs_a_signed_in_user(oauth_site, alice_login):
    client_id = register_client(oauth_site.url)
    _verifier, challenge = pkce_pair()
    response = httpx2.get(authorize_url(oauth_site.url, client_id, challenge))
    assert response.status_code == 302
    assert response.headers["location"].startswith("/accounts/login/?next=/o/authorize/")
    login = httpx2.get(oauth_site.url + response.headers["location"])
    assert login.status_code == 200
    assert "Pillbox &amp; Todos" in login.text and "An MCP client wants to connect" in login.text


def test_registration_is_rate_limited_per_ip(oauth_site, settings):
    settings.OAUTH_DCR_RATE_LIMIT = (3, 3600)
    statuses = [register(oauth_site.url).status_code for _ in range(4)]
    assert statuses == [201, 201, 201, 429]
    limited = register(oauth_site.url)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0


@pytest.mark.parametrize(
    "metadata",
    [
        {"redirect_uris": ["http://evil.example/callback"]},
        {"grant_types": ["client_credentials"]},
        {"grant_types": ["implicit"], "response_types": ["token"]},
        {"grant_types": ["password"]},
    ],
    ids=["http-not-loopback", "client-credentials", "implicit", "password"],
)
def test_registration_refuses_what_mcp_does_not_use(oauth_site, metadata):
    response = register(oauth_site.url, **metadata)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


def test_registration_answers_a_public_client(oauth_site):
    response = register(oauth_site.url)
    assert response.status_code == 201
    body = response.json()
    assert body["token_endpoint_auth_method"] == "none" and "client_secret" not in body
    assert body["grant_types"] == ["authorization_code", "refresh_token"]


def _session(site: str) -> dict[str, str]:
    """Session cookies of alice signed in on the login page."""
    from tests.clients import run
    from tests.oauth.flow import Browser

    async def sign_in() -> dict[str, str]:
        async with httpx2.AsyncClient(base_url=site, timeout=30) as http:
            await Browser(site, "alice").sign_in(http)
            return dict(http.cookies)

    return run(sign_in())
