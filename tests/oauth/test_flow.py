"""The MCP authorization flow end to end: the SDK's OAuthClientProvider against the live server."""

from __future__ import annotations

import httpx2
import pytest

from tests.clients import http_client, run, text_of
from tests.oauth.flow import Browser, call_with_oauth
from tests.oauth.urls import CIMD_PATH

TOOLS = {"/mcp": "get_list_usage", "/pillbox/mcp": "bottle_list"}


def mcp_post(url: str, token: str, method: str = "tools/list") -> httpx2.Response:
    return httpx2.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": method},
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        timeout=30,
    )


@pytest.mark.parametrize("path", ["/mcp", "/pillbox/mcp"])
def test_sdk_client_discovers_registers_authorizes_and_calls_a_tool(oauth_site, alice_login, path):
    browser = Browser(oauth_site.url, "alice")
    outcome = run(call_with_oauth(oauth_site.url + path, TOOLS[path], browser))

    assert not outcome.result.is_error, text_of(outcome.result)
    steps = [(method, route, status) for method, route, status in outcome.requests]
    # 401 -> protected-resource metadata -> authorization-server metadata -> registration -> token -> retried call
    assert steps[0] == ("POST", path, 401)
    assert ("GET", f"/.well-known/oauth-protected-resource{path}", 200) in steps
    assert ("GET", "/.well-known/oauth-authorization-server", 200) in steps
    assert ("POST", "/o/register/", 201) in steps
    assert ("POST", "/o/token/", 200) in steps
    assert steps.index(("POST", "/o/register/", 201)) < steps.index(("POST", "/o/token/", 200))
    assert all(status < 400 for _, _, status in steps[1:])
    assert "Allow" in browser.pages[-1] and "alice" in browser.pages[-1]  # the consent page named the user

    token = outcome.storage.tokens
    assert token.scope == "mcp" and token.refresh_token
    # The token works for this endpoint only: the other endpoint refuses it at the HTTP level.
    other = "/pillbox/mcp" if path == "/mcp" else "/mcp"
    assert mcp_post(oauth_site.url + path, token.access_token).status_code == 200
    refused = mcp_post(oauth_site.url + other, token.access_token)
    assert refused.status_code == 401
    assert (
        f'resource_metadata="{oauth_site.url}/.well-known/oauth-protected-resource{other}"'
        in refused.headers["WWW-Authenticate"]
    )


def test_refresh_rotates_and_revocation_is_a_401(oauth_site, alice_login):
    outcome = run(call_with_oauth(oauth_site.url + "/mcp", "get_list_usage", Browser(oauth_site.url, "alice")))
    tokens, client_id = outcome.storage.tokens, outcome.storage.client_info.client_id
    token_url = oauth_site.url + "/o/token/"

    refreshed = httpx2.post(
        token_url,
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "client_id": client_id,
            "resource": oauth_site.url + "/mcp",
        },
    )
    assert refreshed.status_code == 200, refreshed.text
    new = refreshed.json()
    assert new["refresh_token"] != tokens.refresh_token and new["access_token"] != tokens.access_token
    # Rotation: the old access token and the old refresh token are dead.
    assert mcp_post(oauth_site.url + "/mcp", tokens.access_token).status_code == 401
    replay = httpx2.post(
        token_url,
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "client_id": client_id,
        },
    )
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"

    # Replaying a rotated refresh token revoked the whole family (REFRESH_TOKEN_REUSE_PROTECTION).
    assert mcp_post(oauth_site.url + "/mcp", new["access_token"]).status_code == 401

    # A fresh authorization, then revocation (RFC 7009) by the public client.
    outcome = run(call_with_oauth(oauth_site.url + "/mcp", "get_list_usage", Browser(oauth_site.url, "alice")))
    access, client_id = outcome.storage.tokens.access_token, outcome.storage.client_info.client_id
    assert mcp_post(oauth_site.url + "/mcp", access).status_code == 200
    revoked = httpx2.post(oauth_site.url + "/o/revoke_token/", data={"token": access, "client_id": client_id})
    assert revoked.status_code == 200
    response = mcp_post(oauth_site.url + "/mcp", access, method="tools/call")
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


def test_sdk_client_with_a_client_id_metadata_document(oauth_site, alice_login, settings):
    # The document is served by the live server itself; DOT's fetcher insists on https and public IPs, so the
    # test fetcher maps the https client_id to the loopback http server (tests.oauth.fetcher).
    settings.ROOT_URLCONF = "tests.oauth.urls"
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "CIMD_METADATA_FETCHER": "tests.oauth.fetcher.LoopbackFetcher",
    }
    document_url = "https://" + oauth_site.url.removeprefix("http://") + "/" + CIMD_PATH

    for path in ("/mcp", "/pillbox/mcp"):
        outcome = run(
            call_with_oauth(
                oauth_site.url + path, TOOLS[path], Browser(oauth_site.url, "alice"), client_metadata_url=document_url
            )
        )
        assert not outcome.result.is_error, text_of(outcome.result)
        routes = [route for _, route, _ in outcome.requests]
        assert "/o/register/" not in routes  # no dynamic registration: the URL is the client_id
        assert outcome.storage.client_info.client_id == document_url
        assert ("POST", "/o/token/", 200) in outcome.requests

    from oauth2_provider.models import get_application_model

    application = get_application_model().objects.get(client_id=document_url)
    assert application.registration_source == "cimd" and application.name == "CIMD test client"


def test_api_keys_keep_working_beside_oauth(oauth_site, alice):
    async def scenario():
        async with http_client(oauth_site.url + "/mcp", key=alice.key) as client:
            return await client.call_tool("get_list_usage", {})

    assert not run(scenario()).is_error
