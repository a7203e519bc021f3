"""Two app servers, one truth: two gunicorn servers (2 worker processes x 4 threads each, separate data
directories, different ports) on one PostgreSQL and one Redis behave as one site. Every limit counts once across
both, a revocation or a refresh-token reuse seen by one holds on the other at once, concurrent writes through both
lose nothing, and searches on one see the writes made through the other.

The companion case runs the same two servers without ``REDIS_URL``: each keeps its throttle counts in its own
memory, so an address gets one budget per server. It asserts exactly that, which is what Redis removes. The same
servers, with pools only as large as their threads, show that an MCP request never holds two connections.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx2
import psycopg
import pytest

from tests.oauth.flow import PASSWORD, Browser, call_with_oauth, form_inputs
from tests.shared.servers import (
    REDIS_URL,
    SharedDatabase,
    app_servers,
    call,
    postgres_url_or_skip,
    redis_or_skip,
    rpc_status,
    shared_database,
    short_id,
    tool_call,
)

AUTH_LIMIT = 5
LOGIN_LIMIT = 4
LIMITS = {"AUTH_FAILURE_RATE_LIMIT": str(AUTH_LIMIT), "LOGIN_RATE_LIMIT": str(LOGIN_LIMIT)}
USERS = ["carol", "erin", "olga", "kim"]
WRITERS_PER_SERVER = 4
WRITES_PER_WRITER = 250  # 2 servers x 4 writers x 250 = 2,000 writes


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Iterator[SharedDatabase]:
    url = postgres_url_or_skip()
    with shared_database(url, tmp_path_factory.mktemp("migrate"), USERS) as made:
        yield made


@pytest.fixture(scope="module")
def redis_db() -> Iterator[Any]:
    client = redis_or_skip()
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture(scope="module")
def servers(database, redis_db, tmp_path_factory) -> Iterator[list[str]]:
    with app_servers(
        tmp_path_factory.mktemp("servers"), database, REDIS_URL=REDIS_URL, CACHE_KEY_PREFIX="two-servers", **LIMITS
    ) as urls:
        yield urls


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


def _writer(url: str, key: str, n: int, prescription: str, start: threading.Barrier) -> list[tuple[str, str]]:
    acknowledged = []
    start.wait()
    with httpx2.Client(timeout=60) as http:
        for i in range(WRITES_PER_WRITER):
            kind = ("todo", "capsule", "pill")[i % 3]
            if kind == "todo":
                todo_id = f"w{n}-{i}"
                call(http, url, "/mcp", key, "put_todo", {"id": todo_id, "name": f"todo {n} {i}", "description": ""})
                acknowledged.append((kind, todo_id))
            elif kind == "capsule":
                text = call(http, url, "/pillbox/mcp", key, "capsule_store",
                            {"title": f"c{n}-{i}", "content": "shared", "compound": "race"})
                acknowledged.append((kind, short_id(text)))
            else:
                text = call(http, url, "/pillbox/mcp", key, "pill_store",
                            {"prescription_id": prescription, "title": f"p{n}-{i}", "content": "shared",
                             "compound": "race", "author_name": "Ada", "author_email": "ada@example.com"})
                acknowledged.append((kind, short_id(text)))
    return acknowledged


def test_concurrent_writers_through_both_servers_lose_nothing(servers, database, redis_db):
    redis_db.flushdb()
    key = database.accounts["carol"]["key"]
    first, second = servers
    with httpx2.Client(timeout=60) as http:
        bottle = short_id(call(http, first, "/pillbox/mcp", key, "bottle_create",
                               {"name": "race", "display_name": "Race", "scope": "global"}))
        prescription = short_id(call(http, second, "/pillbox/mcp", key, "prescription_open",
                                     {"bottle_id": bottle, "title": "Many hands", "author_name": "Ada",
                                      "author_email": "ada@example.com"}))
    writers = [(url, n) for n, url in enumerate(servers * WRITERS_PER_SERVER)]
    start = threading.Barrier(len(writers))
    with ThreadPoolExecutor(len(writers)) as pool:
        futures = [pool.submit(_writer, url, key, n, prescription, start) for url, n in writers]
        acknowledged = [write for future in futures for write in future.result()]
    assert len(acknowledged) == len(writers) * WRITES_PER_WRITER == 2000

    with psycopg.connect(database.url) as db:
        todos = {row[0] for row in db.execute("SELECT key FROM todos_todo")}
        capsules = {str(row[0]).replace("-", "")[:12] for row in db.execute("SELECT id FROM pillbox_capsule")}
        pills = {str(row[0]).replace("-", "")[:12] for row in db.execute("SELECT id FROM pillbox_pill")}
    for kind, stored in (("todo", todos), ("capsule", capsules), ("pill", pills)):
        mine = [ident for written, ident in acknowledged if written == kind]
        assert len(set(mine)) == len(mine), f"two {kind}s share an id"
        assert set(mine) <= stored, f"{len(set(mine) - stored)} acknowledged {kind}s are missing"


def _todo_ids(text: str) -> list[str]:
    return [todo["id"] for todo in json.loads(text)]


def test_searches_on_one_server_see_writes_made_through_the_other(servers, database, redis_db):
    redis_db.flushdb()
    key = database.accounts["carol"]["key"]
    first, second = servers
    with httpx2.Client(timeout=60) as http:
        for n in range(3):
            writer, reader = (first, second) if n % 2 == 0 else (second, first)
            word = ("quokka", "pangolin", "axolotl")[n]
            # The reader builds (and caches) its index before the write: it must notice the write at once.
            assert f"seen-{n}" not in _todo_ids(call(http, reader, "/mcp", key, "search_todos", {"query": word}))
            call(http, writer, "/mcp", key, "put_todo", {"id": f"seen-{n}", "name": f"feed the {word}",
                                                          "description": ""})
            assert _todo_ids(call(http, reader, "/mcp", key, "search_todos", {"query": word}))[:1] == [f"seen-{n}"]
        # A rename through one server: the other finds the new name and no longer the old one.
        call(http, second, "/mcp", key, "put_todo", {"id": "seen-0", "name": "brush the wombat", "description": ""})
        assert _todo_ids(call(http, first, "/mcp", key, "search_todos", {"query": "wombat"}))[:1] == ["seen-0"]
        assert "seen-0" not in _todo_ids(call(http, first, "/mcp", key, "search_todos", {"query": "quokka"}))

        bottle = short_id(call(http, first, "/pillbox/mcp", key, "bottle_create",
                               {"name": "lookup", "display_name": "Lookup", "scope": "global"}))
        prescription = short_id(call(http, first, "/pillbox/mcp", key, "prescription_open",
                                     {"bottle_id": bottle, "title": "Finding", "author_name": "Ada",
                                      "author_email": "ada@example.com"}))
        for n, (writer, reader) in enumerate(((first, second), (second, first))):
            word = ("heliotrope", "marzipan")[n]
            assert "No pills found" in call(http, reader, "/pillbox/mcp", key, "pill_search", {"query": word})
            pill = short_id(call(http, writer, "/pillbox/mcp", key, "pill_store",
                                 {"prescription_id": prescription, "title": f"The {word} rule",
                                  "content": f"Always {word}.", "compound": "decision", "author_name": "Ada",
                                  "author_email": "ada@example.com"}))
            assert pill in call(http, reader, "/pillbox/mcp", key, "pill_search", {"query": word})


def test_readyz_reports_the_database_and_the_cache(servers):
    for url in servers:
        response = httpx2.get(url + "/readyz", timeout=10)
        assert response.status_code == 200
        assert response.json() == {"status": "ok", "checks": {"database": "ok", "cache": "ok"}}


def test_connections_cut_by_the_database_are_replaced_without_a_failed_request(servers, database):
    """The pools check a connection before lending it (CONN_HEALTH_CHECKS): after the database ends every
    server connection (as a restart or failover does), the next requests on both servers succeed."""
    key = database.accounts["carol"]["key"]
    with httpx2.Client(timeout=60) as http:
        for url in servers * 4:  # every worker of both servers has pooled connections now
            call(http, url, "/mcp", key, "list_todos", {})
        with psycopg.connect(database.url, autocommit=True) as db:
            cut = db.execute(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()) AS ended"
            ).fetchone()[0]
        assert cut >= 2
        for url in servers * 4:
            call(http, url, "/mcp", key, "list_todos", {})
            call(http, url, "/pillbox/mcp", key, "bottle_list", {})


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


@pytest.fixture(scope="module")
def servers_without_redis(database, tmp_path_factory) -> Iterator[list[str]]:
    """The same two servers without REDIS_URL, one worker process each (so each server's memory is one budget).
    They sit behind a "proxy" (TRUST_PROXY_HEADERS): a test picks its client address with X-Forwarded-For, so a
    repeated attempt starts with a fresh count although their memories cannot be flushed from outside. Their
    pools are only as large as their threads."""
    with app_servers(
        tmp_path_factory.mktemp("servers-without-redis"), database, workers=1, TRUST_PROXY_HEADERS="true",
        DATABASE_POOL_MAX_SIZE="4", DATABASE_POOL_TIMEOUT="5", **LIMITS,
    ) as urls:
        yield urls


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


def test_a_pool_as_large_as_the_threads_serves_every_thread_at_once(servers_without_redis, database):
    """With a pool only as large as gunicorn's --threads, twice as many concurrent MCP clients are all served:
    a request gives its pooled connection back (outside a transaction) before its tool runs, so none waits out
    the pool's timeout on a connection its own request holds."""
    key = database.accounts["carol"]["key"]
    url = servers_without_redis[0]
    start = threading.Barrier(8)

    def client(n: int) -> int:
        start.wait()
        with httpx2.Client(timeout=60) as http:
            for i in range(10):
                call(http, url, "/mcp", key, "put_todo", {"id": f"pool{n}-{i}", "name": "x", "description": ""})
        return 10

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(client, range(8))) == 80


CLAIMERS = 8
CLAIM_ROUNDS = 4


def _claimer(url: str, key: str, todo_id: str, by: str, start: threading.Barrier) -> tuple[str, bool, str]:
    with httpx2.Client(timeout=60) as http:
        start.wait()
        failed, text = tool_call(http, url, "/mcp", key, "claim_todo", {"id": todo_id, "by": by})
    return by, failed, text


def test_eight_claimers_through_both_servers_exactly_one_wins(servers, database, redis_db):
    """Eight agents of one user claim one todo at the same moment, four through each server: one claim holds,
    the seven others are refused naming the winner and the end of its lease, round after round."""
    redis_db.flushdb()
    key = database.accounts["olga"]["key"]
    with httpx2.Client(timeout=60) as http:
        for n in range(CLAIM_ROUNDS):
            call(http, servers[n % 2], "/mcp", key, "put_todo",
                 {"id": f"race-{n}", "name": "One of us", "description": ""})
    for n in range(CLAIM_ROUNDS):
        todo_id = f"race-{n}"
        start = threading.Barrier(CLAIMERS)
        with ThreadPoolExecutor(CLAIMERS) as pool:
            futures = [pool.submit(_claimer, servers[i % 2], key, todo_id, f"agent-{i}", start)
                       for i in range(CLAIMERS)]
            outcomes = [future.result() for future in futures]
        won = [(by, json.loads(text)) for by, failed, text in outcomes if not failed]
        assert len(won) == 1, outcomes
        winner, todo = won[0]
        assert todo["claimedBy"] == winner
        refusals = [text for _, failed, text in outcomes if failed]
        assert len(refusals) == CLAIMERS - 1
        for text in refusals:
            assert text.startswith(f"Todo {todo_id} is claimed by {winner} until {todo['claimedUntil']};"), text
        with psycopg.connect(database.url) as db:
            (holder,) = db.execute("SELECT claimed_by FROM todos_todo WHERE key = %s", (todo_id,)).fetchone()
        assert holder == winner


def test_a_claim_and_a_concurrent_update_through_the_two_servers_both_hold(servers, database, redis_db):
    """update_todo through one server while a claim lands through the other: neither writes over the other."""
    redis_db.flushdb()
    key = database.accounts["olga"]["key"]  # kim's key is revoked by an earlier test
    first, second = servers
    with httpx2.Client(timeout=60) as http:
        call(http, first, "/mcp", key, "put_todo",
             {"id": "both", "name": "Both stay", "description": "", "tags": ["keep"], "deadlineAt": "2030-01-01"})

    def update(n: int, start: threading.Barrier) -> tuple[bool, str]:
        with httpx2.Client(timeout=60) as http:
            start.wait()
            return tool_call(http, first, "/mcp", key, "update_todo", {"id": "both", "description": f"round {n}"})

    def claim(n: int, start: threading.Barrier) -> tuple[bool, str]:
        with httpx2.Client(timeout=60) as http:
            start.wait()
            return tool_call(http, second, "/mcp", key, "claim_todo", {"id": "both", "by": f"agent-{n}"})

    for n in range(12):
        start = threading.Barrier(2)
        with ThreadPoolExecutor(2) as pool:
            updated, claimed = pool.submit(update, n, start), pool.submit(claim, n, start)
            assert not updated.result()[0] and not claimed.result()[0], (updated.result(), claimed.result())
        with psycopg.connect(database.url) as db:
            row = db.execute(
                "SELECT description, claimed_by, tags, deadline_at IS NOT NULL FROM todos_todo WHERE key = 'both'"
            ).fetchone()
        assert row == (f"round {n}", f"agent-{n}", ["keep"], True), (n, row)
        with httpx2.Client(timeout=60) as http:
            assert not tool_call(http, first, "/mcp", key, "release_todo", {"id": "both", "by": f"agent-{n}"})[0]
