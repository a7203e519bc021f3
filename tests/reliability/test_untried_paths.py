"""Paths an attacker had not tried yet (third round, item 6): two refreshes racing with the same refresh token,
and a token made for one MCP endpoint presented at the other, each through the real flow."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import httpx2
from django.contrib.auth.hashers import make_password

from tests.oauth.flow import PASSWORD
from tests.oauth.helpers import authorization_redirect, authorize_url, exchange, pkce_pair, register_client
from tests.reliability.helpers import make_key, web_server

RACERS = 4
ROUNDS = 3


def _tokens(site: str, resource: str) -> tuple[str, dict]:
    client_id = register_client(site)
    verifier, challenge = pkce_pair()
    code = authorization_redirect(site, authorize_url(site, client_id, challenge, resource=site + resource))["code"]
    response = exchange(site, client_id, code, verifier)
    assert response.status_code == 200, response.text
    return client_id, response.json()


def _refresh(site: str, client_id: str, refresh_token: str) -> httpx2.Response:
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    return httpx2.post(site + "/o/token/", data=data, timeout=60)


def _mcp_status(site: str, path: str, access_token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Authorization": f"Bearer {access_token}", "Accept": "application/json, text/event-stream"}
    return httpx2.post(site + path, json=body, headers=headers, timeout=60).status_code


def _race(site: str, client_id: str, refresh_token: str) -> list[httpx2.Response]:
    """RACERS refreshes with the same token, released at the same instant from their own threads."""
    start = threading.Barrier(RACERS)
    answers: list[httpx2.Response | None] = [None] * RACERS

    def racer(n: int) -> None:
        start.wait()
        answers[n] = _refresh(site, client_id, refresh_token)

    threads = [threading.Thread(target=racer, args=(n,)) for n in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(answer is not None for answer in answers)
    return [answer for answer in answers if answer is not None]


def test_refreshes_racing_with_one_token(tmp_path: Path):
    """RACERS refreshes with one refresh token at once, through gunicorn (2 workers x 4 threads): exactly one
    answers with new tokens, the others ``invalid_grant`` (never a 500), and, since the others are a reuse of a
    rotated token, the whole family is revoked, the winner's new tokens included (docs/connect-by-hand.md,
    "Connect a remote agent"). A refresh alone rotates and keeps the family alive."""
    home = tmp_path / "home"
    home.mkdir()
    make_key(home, "alice")
    with sqlite3.connect(home / ".pillbox" / "pillbox.db") as db:
        db.execute("UPDATE auth_user SET password = ? WHERE username = 'alice'", [make_password(PASSWORD)])
    with web_server(home, log=tmp_path / "server.log") as site:
        client_id, tokens = _tokens(site, "/mcp")
        alone = _refresh(site, client_id, tokens["refresh_token"])
        assert alone.status_code == 200, alone.text
        assert _mcp_status(site, "/mcp", alone.json()["access_token"]) == 200
        for _round in range(ROUNDS):
            answers = _race(site, client_id, alone.json()["refresh_token"])
            statuses = sorted(answer.status_code for answer in answers)
            assert statuses == [200] + [400] * (RACERS - 1), [(a.status_code, a.text[:200]) for a in answers]
            assert all(a.json()["error"] == "invalid_grant" for a in answers if a.status_code == 400)
            (winner,) = [answer.json() for answer in answers if answer.status_code == 200]
            assert _mcp_status(site, "/mcp", winner["access_token"]) == 401  # the family is gone
            assert _refresh(site, client_id, winner["refresh_token"]).status_code == 400
            client_id, tokens = _tokens(site, "/mcp")  # the client signs in again: a new family
            alone = _refresh(site, client_id, tokens["refresh_token"])
            assert alone.status_code == 200, alone.text


def _refresh_for(site: str, client_id: str, refresh_token: str, resource: str) -> httpx2.Response:
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id, "resource": resource}
    return httpx2.post(site + "/o/token/", data=data, timeout=60)


def test_a_token_opens_only_the_endpoint_it_was_granted_for(oauth_site, alice_login):
    """A token from the real flow for one MCP server is refused by the other (both ways), its refreshed
    successor keeps that audience, and a refresh asking for the other server is refused without harming the
    grant; a grant for both (both named on the consent page) opens both."""
    site = oauth_site.url
    for granted, other in (("/mcp", "/pillbox/mcp"), ("/pillbox/mcp", "/mcp")):
        client_id, tokens = _tokens(site, granted)
        assert _mcp_status(site, granted, tokens["access_token"]) == 200
        assert _mcp_status(site, other, tokens["access_token"]) == 401, f"a {granted} token opened {other}"
        widened = _refresh_for(site, client_id, tokens["refresh_token"], site + other)
        assert widened.status_code == 400 and widened.json()["error"] == "invalid_target", widened.text
        refreshed = _refresh(site, client_id, tokens["refresh_token"])
        assert refreshed.status_code == 200, refreshed.text  # the refused widening did not spend the token
        assert _mcp_status(site, granted, refreshed.json()["access_token"]) == 200
        assert _mcp_status(site, other, refreshed.json()["access_token"]) == 401
    client_id = register_client(site)
    verifier, challenge = pkce_pair()
    url = authorize_url(site, client_id, challenge, resource=[site + "/mcp", site + "/pillbox/mcp"])
    both = exchange(site, client_id, authorization_redirect(site, url)["code"], verifier)
    assert both.status_code == 200, both.text
    assert _mcp_status(site, "/mcp", both.json()["access_token"]) == 200
    assert _mcp_status(site, "/pillbox/mcp", both.json()["access_token"]) == 200
