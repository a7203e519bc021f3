"""Discovery documents and CORS."""

from __future__ import annotations

import httpx2
import pytest


def test_authorization_server_metadata(oauth_site):
    response = httpx2.get(oauth_site.url + "/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    data = response.json()
    site = oauth_site.url
    assert data["issuer"] == site
    assert data["authorization_endpoint"] == f"{site}/o/authorize/"
    assert data["token_endpoint"] == f"{site}/o/token/"
    assert data["revocation_endpoint"] == f"{site}/o/revoke_token/"
    assert data["registration_endpoint"] == f"{site}/o/register/"
    assert data["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert data["response_types_supported"] == ["code"]
    assert data["code_challenge_methods_supported"] == ["S256"]
    assert "none" in data["token_endpoint_auth_methods_supported"]
    assert data["scopes_supported"] == ["mcp"]
    assert data["client_id_metadata_document_supported"] is True
    assert data["authorization_response_iss_parameter_supported"] is True
    assert "introspection_endpoint" not in data
    assert response.headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize("suffix", ["/mcp", "/pillbox/mcp"])
def test_path_suffixed_server_metadata_has_the_same_issuer(oauth_site, suffix):
    data = httpx2.get(oauth_site.url + "/.well-known/oauth-authorization-server" + suffix).json()
    assert data["issuer"] == oauth_site.url


@pytest.mark.parametrize("path", ["/mcp", "/pillbox/mcp"])
def test_protected_resource_metadata(oauth_site, path):
    response = httpx2.get(f"{oauth_site.url}/.well-known/oauth-protected-resource{path}")
    assert response.status_code == 200
    data = response.json()
    assert data["resource"] == oauth_site.url + path
    assert data["authorization_servers"] == [oauth_site.url]
    assert data["scopes_supported"] == ["mcp"]
    assert data["bearer_methods_supported"] == ["header"]


def test_unknown_protected_resources_have_no_metadata(oauth_site):
    assert httpx2.get(f"{oauth_site.url}/.well-known/oauth-protected-resource/admin").status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/mcp",
        "/pillbox/mcp",
        "/o/token/",
        "/o/register/",
        "/o/revoke_token/",
        "/.well-known/oauth-authorization-server",
    ],
)
def test_cors_preflight_is_answered_before_any_view(oauth_site, path):
    response = httpx2.options(
        oauth_site.url + path,
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
        },
    )
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert "Authorization" in response.headers["Access-Control-Allow-Headers"]
    assert "MCP-Protocol-Version" in response.headers["Access-Control-Allow-Headers"]
    assert "POST" in response.headers["Access-Control-Allow-Methods"]


def test_cors_headers_on_a_401_from_the_mcp_endpoint(oauth_site):
    response = httpx2.post(
        oauth_site.url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Origin": "http://localhost:6274"},
    )
    assert response.status_code == 401
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert "WWW-Authenticate" in response.headers["Access-Control-Expose-Headers"]


def test_the_authorization_endpoint_gets_no_cors(oauth_site):
    response = httpx2.options(
        oauth_site.url + "/o/authorize/",
        headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET"},
    )
    assert "Access-Control-Allow-Origin" not in response.headers
