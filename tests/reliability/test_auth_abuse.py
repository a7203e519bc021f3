"""Auth and abuse: every way in without the right credentials is answered 401/403 (or sent to the login page),
and guessing is throttled (keys at the MCP endpoints, passwords at the login forms, client registrations)."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts import throttle
from accounts.services import apikey_create, keys_revoke_all
from tests.oauth.helpers import mint_token
from tests.reliability.helpers import MCP_PATHS, PING

LISTING = {"pillbox": "bottle_list", "todos": "list_todos"}


def mcp(client: Client, server: str, *, query: str = "", ip: str = "10.0.0.1", **headers: str):
    return client.post(
        MCP_PATHS[server] + query,
        data=PING % LISTING[server],
        content_type="application/json",
        REMOTE_ADDR=ip,
        **headers,
    )


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


# ---------------------------------------------------------------- every failure mode


@pytest.mark.parametrize("server", ["pillbox", "todos"])
def test_every_credential_failure_is_a_401_or_403_with_the_challenge(alice, bob, server, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (0, 60)  # counted below, not throttled here
    site = settings.SITE_URL
    client = Client()
    here = site + MCP_PATHS[server]
    other = site + MCP_PATHS["todos" if server == "pillbox" else "pillbox"]
    revoked = get_user_model().objects.create(username="carol")
    _, revoked_key = apikey_create(user=revoked)
    keys_revoke_all(user=revoked)
    inactive = get_user_model().objects.create(username="dave", is_active=False)
    _, inactive_key = apikey_create(user=inactive)
    cases: list[tuple[str, dict[str, str], str, int, str | None]] = [
        ("nothing", {}, "", 401, None),
        ("a wrong key", bearer("pbx_" + "x" * 43), "", 401, "invalid_token"),
        ("a revoked key", bearer(revoked_key), "", 401, "invalid_token"),
        ("an inactive user's key", bearer(inactive_key), "", 401, "invalid_token"),
        ("an unknown token", bearer("not-a-token"), "", 401, "invalid_token"),
        ("basic auth", {"HTTP_AUTHORIZATION": "Basic YWxpY2U6cGFzcw=="}, "", 401, "invalid_token"),
        ("an empty bearer", {"HTTP_AUTHORIZATION": "Bearer "}, "", 401, "invalid_token"),
        ("uid without key", {}, f"?uid={alice.uid}", 401, "invalid_token"),
        ("key without uid", {}, f"?key={alice.key}", 401, "invalid_token"),
        ("someone else's uid", {}, f"?uid={bob.uid}&key={alice.key}", 401, "invalid_token"),
        ("a wrong key for the uid", {}, f"?uid={alice.uid}&key=pbx_nope", 401, "invalid_token"),
        ("a token for the other endpoint", bearer(mint_token(alice.user, resource=[other])), "", 401, "invalid_token"),
        ("a token without resource", bearer(mint_token(alice.user, resource=[])), "", 401, "invalid_token"),
        ("an expired token", bearer(mint_token(alice.user, resource=[here], expires_in=-10)), "", 401, "invalid_token"),
        (
            "a token without the mcp scope",
            bearer(mint_token(alice.user, resource=[here], scope="read")),
            "",
            403,
            "insufficient_scope",
        ),
    ]
    for label, headers, query, status, error in cases:
        response = mcp(client, server, query=query, **headers)
        assert response.status_code == status, (label, response.status_code, response.content)
        challenge = response["WWW-Authenticate"]
        assert challenge.startswith("Bearer ") and "resource_metadata=" in challenge, (label, challenge)
        assert f"/.well-known/oauth-protected-resource{MCP_PATHS[server]}" in challenge, (label, challenge)
        if error:
            assert f'error="{error}"' in challenge, (label, challenge)
        else:
            assert "error=" not in challenge, (label, challenge)
        assert alice.key not in response.content.decode() and "Traceback" not in response.content.decode()
    for good in (bearer(alice.key), bearer(mint_token(alice.user, resource=[here]))):
        assert mcp(client, server, **good).status_code == 200
    assert mcp(client, server, query=f"?uid={alice.uid}&key={alice.key}").status_code == 200


def test_pages_send_strangers_to_the_login_page_or_refuse_them(alice, bob):
    anonymous = Client()
    for path in ("/account/", "/pillbox/", "/pillbox/capsules/", "/pillbox/search?q=x", "/list"):
        response = anonymous.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), path
    assert anonymous.get("/admin/").status_code == 302
    person = Client()
    person.force_login(bob.user)
    assert person.get("/admin/").status_code == 302  # not staff: the admin's own login page
    for query in (f"?uid={alice.uid}&key=pbx_wrong", f"?uid={bob.uid}&key={alice.key}", "?t=forged.token:1x"):
        response = person.get("/list" + query)  # bad credentials are refused even with a session
        assert response.status_code == 403, query


# ---------------------------------------------------------------- throttling


def test_repeated_bad_keys_from_one_address_are_throttled(alice, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (5, 60)
    client = Client()
    for attempt in range(5):
        assert mcp(client, "pillbox", **bearer(f"pbx_guess{attempt}")).status_code == 401
    refused = mcp(client, "todos", **bearer("pbx_guess-again"))
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["error"] == "rate_limited"
    # Guesses stay refused, but a right key from the same address always passes: one stranger behind a shared
    # proxy address must not lock everyone out (keys are unguessable; only failures are counted).
    assert mcp(client, "pillbox", **bearer("pbx_guess-more")).status_code == 429
    assert mcp(client, "pillbox", **bearer(alice.key)).status_code == 200
    assert mcp(client, "pillbox", query=f"?uid={alice.uid}&key={alice.key}").status_code == 200


def test_requests_without_credentials_are_not_counted_as_guesses(alice, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (3, 60)
    client = Client()
    for _ in range(10):  # MCP clients probe without credentials to discover OAuth
        assert mcp(client, "pillbox").status_code == 401
    assert mcp(client, "pillbox", **bearer(alice.key)).status_code == 200


class _Clock:
    """A settable ``time`` for accounts.throttle alone (the cache's own expiry keeps the real clock)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


class _Address:
    META = {"REMOTE_ADDR": "203.0.113.7"}


def test_a_burst_across_a_minute_boundary_is_still_one_burst(monkeypatch):
    """A bucket opens at its first failure: failures just before a clock minute and one just after count
    together (a clock-aligned window restarted at the minute, letting a burst through at twice the limit)."""
    boundary = (int(time.time()) // 60 + 1) * 60.0
    clock = _Clock(boundary - 0.5)
    monkeypatch.setattr(throttle, "time", clock)
    for _ in range(3):
        assert throttle.failure(_Address(), kind="burst", limit=(3, 60), identity="erin") == 0
    clock.now = boundary + 0.5
    assert throttle.exhausted(_Address(), kind="burst", limit=(3, 60), identity="erin") == 59
    assert throttle.failure(_Address(), kind="burst", limit=(3, 60), identity="erin") == 59
    clock.now = boundary + 59.4
    assert throttle.exhausted(_Address(), kind="burst", limit=(3, 60)) == 1


def _login(client: Client, path: str, username: str, password: str, ip: str = "10.0.0.1"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=ip)


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_failed_logins_are_throttled(transactional_db, settings, path):
    settings.LOGIN_RATE_LIMIT = (3, 60)
    user = get_user_model().objects.create_user("erin", password="correct horse battery", is_staff=True)
    client = Client()
    for _ in range(3):
        assert _login(client, path, "erin", "wrong").status_code == 200  # the form again, with its error
    refused = _login(client, path, "erin", "correct horse battery")
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert "_auth_user_id" not in client.session
    # The account's bucket is full too: a new browser elsewhere waits as well (passwords can be guessed) ...
    assert _login(Client(), path, "erin", "correct horse battery", ip="10.0.0.9").status_code == 429
    # ... while other accounts from other addresses are untouched.
    get_user_model().objects.create_user("frank", password="another horse battery", is_staff=True)
    assert _login(Client(), path, "frank", "another horse battery", ip="10.0.0.9").status_code == 302
    assert user.pk


def test_client_registration_is_rate_limited(transactional_db, settings):
    settings.OAUTH_DCR_RATE_LIMIT = (2, 3600)
    client = Client()
    metadata = '{"client_name":"x","redirect_uris":["http://127.0.0.1:3000/cb"],"token_endpoint_auth_method":"none"}'
    statuses = [
        client.post("/o/register/", data=metadata, content_type="application/json", REMOTE_ADDR="10.0.0.3").status_code
        for _ in range(3)
    ]
    assert statuses[:2] == [201, 201] and statuses[2] == 429
