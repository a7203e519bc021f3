"""Two app servers, one truth, for the limits: two gunicorn servers (2 worker processes x 4 threads each,
separate data directories, different ports) on one PostgreSQL and one Redis behave as one site. Every limit counts
once across both, and a revocation or a refresh-token reuse seen by one holds on the other at once.

The companion case runs the same two servers without ``REDIS_URL``: each keeps its throttle counts in its own
memory, so an address gets one budget per server. It asserts exactly that, which is what Redis removes. The
servers are the package's (conftest.py); the writes through them are in test_two_servers_writes.py.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
import pytest

from tests.oauth.flow import PASSWORD, Browser, call_with_oauth, form_inputs
from tests.shared.conftest import AUTH_LIMIT, LOGIN_LIMIT
from tests.shared.servers import REDIS_URL, app_servers, rpc_status


def _failed_credentials(urls: list[str], attempts: int, **headers: str) -> list[int]:
    """Wrong API keys from one address, round-robin over the servers: each answer's status."""
    return [
        rpc_status(urls[n % len(urls)], "/mcp", bearer=f"pbx_wrong{n:04d}{'x' * 40}", **headers)
        for n in range(attempts)
    ]


def test_failed_credentials_limit_holds_exactly_across_both_servers(servers, redis_db):
    first, second = servers

    def attempt() -> list[int]:
        return _failed_credentials(servers, AUTH_LIMIT + 2) + [
            rpc_status(first, "/pillbox/mcp", bearer="pbx_wrong"),
            rpc_status(second, "/pillbox/mcp", bearer="pbx_wrong"),
        ]

    # The budget is AUTH_LIMIT for the address, not AUTH_LIMIT per server (nor per worker process): the next
    # failure is refused whichever server it reaches, at either endpoint.
    redis_db.flushdb()
    assert attempt() == [401] * AUTH_LIMIT + [429] * 4


def _failed_logins(urls: list[str], attempts: int, *, username: str = "carol") -> list[int]:
    with httpx2.Client(timeout=30) as http:
        page = http.get(urls[0] + "/accounts/login/")
        form = form_inputs(page.text)
        cookie = {"Cookie": f"csrftoken={page.cookies['csrftoken']}"}
        statuses = []
        for n in range(attempts):
            data = {**form, "username": username, "password": f"wrong {n}"}
            statuses.append(http.post(urls[n % len(urls)] + "/accounts/login/", data=data, headers=cookie).status_code)
    return statuses


def test_login_limit_holds_exactly_across_both_servers(servers, redis_db):
    redis_db.flushdb()
    statuses = _failed_logins(servers, LOGIN_LIMIT + 2)
    assert statuses == [200] * LOGIN_LIMIT + [429, 429]


@contextmanager
def _signed_in(url: str, username: str) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=url, timeout=30) as http:
        page = http.get("/accounts/login/")
        signed_in = http.post("/accounts/login/", data={**form_inputs(page.text), "username": username,
                                                         "password": PASSWORD, "next": "/account/"})
        assert signed_in.status_code == 302, signed_in.text
        yield http


def test_a_key_revoked_through_one_server_is_refused_by_the_other_at_once(servers, database, redis_db):
    redis_db.flushdb()
    first, second = servers
    erin = database.accounts["erin"]
    # Both servers (every worker, likely) have just accepted the key: nothing they remember may outlive it.
    for _ in range(4):
        assert rpc_status(second, "/mcp", bearer=erin["key"]) == 200
        assert rpc_status(first, "/pillbox/mcp", bearer=erin["key"]) == 200
    with _signed_in(first, "erin") as http:
        account = http.get("/account/")
        revoked = http.post(f"/account/keys/{erin['key_id']}/revoke", data=form_inputs(account.text))
        assert revoked.status_code == 303, revoked.text
    # At once, at both endpoints of the other server (fewer failures than the throttle allows).
    assert rpc_status(second, "/mcp", bearer=erin["key"]) == 401
    assert rpc_status(second, "/mcp", bearer=erin["key"]) == 401
    assert rpc_status(second, "/pillbox/mcp", bearer=erin["key"]) == 401
    assert rpc_status(first, "/mcp", bearer=erin["key"]) == 401


def test_a_key_lookup_cached_in_redis_is_refused_by_the_other_server_once_revoked(servers, database, redis_db):
    """Both servers answer a key from the one lookup cached in Redis (accounts.services); revoking it through one
    server replaces that entry with a tombstone, so the other refuses the key on its next request."""
    redis_db.flushdb()
    first, second = servers
    kim = database.accounts["kim"]
    for _ in range(4):
        assert rpc_status(first, "/mcp", bearer=kim["key"]) == 200
        assert rpc_status(second, "/pillbox/mcp", bearer=kim["key"]) == 200
    entry = f"two-servers:1:apikey:{hashlib.sha256(kim['key'].encode()).hexdigest()}"
    assert pickle.loads(redis_db.get(entry)).pk == kim["key_id"]
    with _signed_in(first, "kim") as http:
        account = http.get("/account/")
        revoked = http.post(f"/account/keys/{kim['key_id']}/revoke", data=form_inputs(account.text))
        assert revoked.status_code == 303, revoked.text
    assert pickle.loads(redis_db.get(entry)) == "forgotten"
    assert rpc_status(second, "/pillbox/mcp", bearer=kim["key"]) == 401
    assert rpc_status(second, "/mcp", bearer=kim["key"]) == 401


def _refresh(url: str, resource: str, refresh_token: str, client_id: str) -> httpx2.Response:
    return httpx2.post(
        url + "/o/token/",
        data={"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id,
              "resource": resource},
        timeout=30,
    )


def test_oauth_tokens_and_reuse_detection_hold_across_both_servers(servers, redis_db):
    import asyncio

    redis_db.flushdb()
    first, second = servers
    resource = first + "/mcp"  # the public address (SITE_URL) both servers were given
    run = asyncio.run(call_with_oauth(resource, "list_todos", Browser(site=first, username="olga")))
    assert not run.result.is_error
    tokens, client = run.storage.tokens, run.storage.client_info
    assert tokens is not None and tokens.refresh_token and client is not None

    # Issued by the first server, accepted by the second.
    assert rpc_status(second, "/mcp", bearer=tokens.access_token) == 200
    # Rotated at the second server; the new access token works on the first.
    rotated = _refresh(second, resource, tokens.refresh_token, client.client_id)
    assert rotated.status_code == 200, rotated.text
    fresh = rotated.json()
    assert rpc_status(first, "/mcp", bearer=fresh["access_token"]) == 200
    # The old refresh token comes back at the first server: reuse, so the whole family dies, on both servers.
    reused = _refresh(first, resource, tokens.refresh_token, client.client_id)
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant", reused.text
    assert rpc_status(second, "/mcp", bearer=fresh["access_token"]) == 401
    assert rpc_status(first, "/mcp", bearer=fresh["access_token"]) == 401
    again = _refresh(second, resource, fresh["refresh_token"], client.client_id)
    assert again.status_code == 400, again.text


USER_RATE_LIMIT = 6
REGISTRATION_LIMIT = 3


@pytest.fixture(scope="module")
def servers_with_user_limits(database, redis_db, tmp_path_factory) -> Iterator[list[str]]:
    """Two servers on Redis with a small per-user MCP rate limit and client-registration limit (the main pair
    turns the per-user limits off for its writers)."""
    with app_servers(
        tmp_path_factory.mktemp("servers-user-limits"), database, REDIS_URL=REDIS_URL,
        CACHE_KEY_PREFIX="user-limits", MCP_USER_RATE_LIMIT=str(USER_RATE_LIMIT),
        OAUTH_DCR_RATE_LIMIT=str(REGISTRATION_LIMIT),
    ) as urls:
        yield urls


def test_the_per_user_mcp_rate_limit_holds_exactly_across_both_servers(servers_with_user_limits, database, redis_db):
    """A user's MCP requests are one budget whichever server (and worker) each reaches, at either endpoint."""
    redis_db.flushdb()
    key = database.accounts["olga"]["key"]
    paths = ["/mcp", "/pillbox/mcp"]
    statuses = [
        rpc_status(servers_with_user_limits[n % 2], paths[n % 2], bearer=key) for n in range(USER_RATE_LIMIT + 2)
    ]
    assert statuses == [200] * USER_RATE_LIMIT + [429, 429]
    # Another user's budget is their own.
    assert rpc_status(servers_with_user_limits[1], "/mcp", bearer=database.accounts["carol"]["key"]) == 200


def test_the_client_registration_limit_holds_exactly_across_both_servers(servers_with_user_limits, redis_db):
    redis_db.flushdb()
    metadata = {"client_name": "x", "redirect_uris": ["http://127.0.0.1:3000/cb"], "token_endpoint_auth_method": "none"}
    with httpx2.Client(timeout=30) as http:
        statuses = [
            http.post(servers_with_user_limits[n % 2] + "/o/register/", json=metadata).status_code
            for n in range(REGISTRATION_LIMIT + 2)
        ]
    assert statuses == [201] * REGISTRATION_LIMIT + [429, 429]

def test_without_redis_every_server_has_its_own_budget(servers_without_redis):
    """The companion case: an address gets AUTH_LIMIT failures at each server, twice the limit in all; what the
    shared cache prevents."""
    first, second = servers_without_redis
    addresses = iter(f"198.51.100.{n}" for n in range(1, 10))

    def attempt() -> tuple[list[int], list[int]]:
        client = {"X-Forwarded-For": next(addresses)}
        return _failed_credentials([first], AUTH_LIMIT + 1, **client), _failed_credentials(
            [second], AUTH_LIMIT + 1, **client
        )

    at_first, at_second = attempt()
    assert at_first == [401] * AUTH_LIMIT + [429]
    assert at_second == [401] * AUTH_LIMIT + [429]


def test_without_redis_every_server_has_its_own_login_budget(servers_without_redis):
    """The same for failed logins: without the shared cache each server counts a (username, address) alone; an
    account's failures across addresses are kept in the database, so the other server slows the account at once
    (its first attempt from a browser that never signed in waits)."""
    first, second = servers_without_redis
    assert _failed_logins([first], LOGIN_LIMIT + 1, username="erin") == [200] * LOGIN_LIMIT + [429]
    assert _failed_logins([second], LOGIN_LIMIT + 1, username="no-such-user") == [200] * LOGIN_LIMIT + [429]
    assert _failed_logins([second], 1, username="erin") == [429]
