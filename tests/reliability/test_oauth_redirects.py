"""Hole 4 of the third round: the authorization endpoint redirecting to a registered client before any consent.

An anonymously registered client names ``https://attacker.example/landing``; with ``prompt=none`` and no session
DOT answered ``302 Location: https://attacker.example/landing?error=login_required&state=…`` (also with
``code_challenge_method=plain``): an open redirector. Every error before a signed-in consent is now shown on this
site. The table below is every variant tried, signed in or not; none may leave the site.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode, urlsplit

import pytest
from django.conf import settings
from django.test import Client

from tests.oauth.flow import PASSWORD
from tests.oauth.helpers import pkce_pair

LANDING = "https://attacker.example/landing"

# (name, parameters changed from a good request (None drops one), signed in, the error the page must name or None
# when the answer is the site's own login page)
VARIANTS: list[tuple[str, dict[str, str | None], bool, str | None]] = [
    ("prompt none, no session", {"prompt": "none"}, False, "login_required"),
    ("prompt none, signed in, no consent", {"prompt": "none"}, True, "login_required"),
    ("prompt none, plain PKCE", {"prompt": "none", "code_challenge_method": "plain"}, False, "invalid_request"),
    ("prompt none, plain PKCE, signed in", {"prompt": "none", "code_challenge_method": "plain"}, True,
     "invalid_request"),
    ("prompt none, unknown PKCE method", {"prompt": "none", "code_challenge_method": "S512"}, False,
     "invalid_request"),
    ("prompt none, no PKCE", {"prompt": "none", "code_challenge": None, "code_challenge_method": None}, False,
     "invalid_request"),
    ("prompt none, no resource", {"prompt": "none", "resource": None}, False, "invalid_target"),
    ("prompt none, foreign resource", {"prompt": "none", "resource": "https://attacker.example/mcp"}, False,
     "invalid_target"),
    ("prompt none, bad scope", {"prompt": "none", "scope": "admin"}, False, "invalid_scope"),
    ("prompt none, implicit grant", {"prompt": "none", "response_type": "token"}, False, "unauthorized_client"),
    ("prompt none and login", {"prompt": "none login"}, False, "login_required"),
    ("prompt none and consent, signed in", {"prompt": "none consent"}, True, "login_required"),
    ("plain PKCE, no session", {"code_challenge_method": "plain"}, False, "invalid_request"),
    ("plain PKCE, signed in", {"code_challenge_method": "plain"}, True, "invalid_request"),
    ("no PKCE, signed in", {"code_challenge": None, "code_challenge_method": None}, True, "invalid_request"),
    ("bad scope, signed in", {"scope": "admin"}, True, "invalid_scope"),
    ("implicit grant, signed in", {"response_type": "token"}, True, "unauthorized_client"),
    ("no resource, no session", {"resource": None}, False, "invalid_target"),
    ("foreign resource, signed in", {"resource": "https://attacker.example/mcp"}, True, "invalid_target"),
    ("malformed resource, signed in", {"resource": "not a uri"}, True, "invalid_target"),
    ("prompt login, no session", {"prompt": "login"}, False, None),
    ("prompt create, no session", {"prompt": "create"}, False, "invalid_request"),
    ("no prompt, no session", {}, False, None),
    ("unregistered redirect, prompt none", {"prompt": "none", "redirect_uri": LANDING + "/other"}, False,
     "invalid_request"),
    ("unknown client, prompt none", {"prompt": "none", "client_id": "nobody"}, False, "invalid_request"),
]


def _register(client: Client) -> str:
    body = {
        "client_name": "landing",
        "redirect_uris": [LANDING],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
    }
    response = client.post("/o/register/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    return str(response.json()["client_id"])


@pytest.mark.parametrize(("name", "changes", "signed_in", "error"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_no_error_before_consent_leaves_the_site(alice, name, changes, signed_in, error):
    client = Client()
    client_id = _register(client)
    _verifier, challenge = pkce_pair()
    params: dict[str, str | None] = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": LANDING,
        "state": "s-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": "mcp",
        "resource": settings.SITE_URL.rstrip("/") + "/mcp",
        **changes,
    }
    if signed_in:
        alice.user.set_password(PASSWORD)
        alice.user.save()
        assert client.login(username="alice", password=PASSWORD)
    response = client.get("/o/authorize/?" + urlencode({k: v for k, v in params.items() if v is not None}))
    location = response.get("Location", "")
    assert urlsplit(location).netloc in ("", urlsplit(settings.SITE_URL).netloc), f"{name}: off-site to {location}"
    if error is None:
        assert response.status_code == 302 and urlsplit(location).path == settings.LOGIN_URL, (name, location)
    else:
        assert 400 <= response.status_code < 500, (name, response.status_code, location)
        assert error in response.content.decode(), (name, response.content[:400])
