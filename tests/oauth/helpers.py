"""Direct helpers for the refusal tests: register, authorize by hand (PKCE), mint tokens in the database."""

from __future__ import annotations

import base64
import hashlib
import secrets
from datetime import timedelta
from urllib.parse import urlencode

import httpx2
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_application_model, set_token_value

from tests.clients import run
from tests.oauth.flow import Browser, query_of
from tests.oauth.urls import REDIRECT_URI


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def register(site: str, **metadata) -> httpx2.Response:
    body = {
        "client_name": "refusal test client",
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    return httpx2.post(site + "/o/register/", json=body, timeout=30)


def register_client(site: str) -> str:
    response = register(site)
    assert response.status_code == 201, response.text
    return response.json()["client_id"]


def authorize_url(site: str, client_id: str, challenge: str, **overrides) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "state": "s-123",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": "mcp",
        "resource": site + "/mcp",
        **overrides,
    }
    return f"{site}/o/authorize/?" + urlencode({k: v for k, v in params.items() if v is not None}, doseq=True)


def authorization_redirect(site: str, url: str, username: str = "alice", allow: bool = True) -> dict[str, str]:
    """Sign in, answer the consent page, return the query of the redirect back to the client."""
    response = run(Browser(site, username, allow=allow).authorize(url))
    assert response.status_code == 302, response.text
    assert response.headers["location"].startswith(REDIRECT_URI)
    return query_of(response.headers["location"])


def exchange(site: str, client_id: str, code: str, verifier: str | None, **extra) -> httpx2.Response:
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI, "client_id": client_id}
    if verifier is not None:
        data["code_verifier"] = verifier
    data.update(extra)
    return httpx2.post(site + "/o/token/", data=data, timeout=30)


def mint_token(user, *, resource: list[str], scope: str = "mcp", expires_in: int = 3600) -> str:
    """An access token straight in the database (hashed at rest, as DOT stores it here)."""
    Application = get_application_model()
    application = Application.objects.create(
        name="minted",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=REDIRECT_URI,
    )
    raw = secrets.token_urlsafe(30)
    token = get_access_token_model()(
        user=user,
        application=application,
        scope=scope,
        resource=resource,
        expires=timezone.now() + timedelta(seconds=expires_in),
    )
    set_token_value(token, raw)
    token.save()
    return raw
