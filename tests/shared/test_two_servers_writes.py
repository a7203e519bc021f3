"""Two app servers, one truth, for the data: concurrent writes through both servers lose nothing, searches on one
see the writes made through the other, claims race fairly across them, and their pools and health checks carry
the load (an MCP request never holds two connections; connections the database cuts are replaced unseen). The
servers are the package's (conftest.py)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx2
import psycopg

from tests.shared.servers import call, short_id, tool_call

WRITERS_PER_SERVER = 4
WRITES_PER_WRITER = 250  # 2 servers x 4 writers x 250 = 2,000 writes


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
        assert response.json()["checks"] == {"database": "ok", "cache": "ok"}
        assert response.json()["status"] == "ok" and response.json().get("pgvector") in (None, "on", "off",
                                                                                          "available", "absent")


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
    """update_todo through one server while a claim lands through the other: neither writes over the other, and an
    update that comes second is refused (the todo is then held)."""
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

    description = ""
    for n in range(12):
        start = threading.Barrier(2)
        with ThreadPoolExecutor(2) as pool:
            updated, claimed = pool.submit(update, n, start), pool.submit(claim, n, start)
            (refused, text), (claim_failed, claim_text) = updated.result(), claimed.result()
        assert not claim_failed, claim_text
        # The update either came first (and stays) or found the claim and was refused, naming its holder.
        if refused:
            assert text.startswith(f"Todo both is claimed by agent-{n} until"), text
        else:
            description = f"round {n}"
        with psycopg.connect(database.url) as db:
            row = db.execute(
                "SELECT description, claimed_by, tags, deadline_at IS NOT NULL FROM todos_todo WHERE key = 'both'"
            ).fetchone()
        assert row == (description, f"agent-{n}", ["keep"], True), (n, row)
        lease = json.loads(claim_text)["leaseToken"]
        with httpx2.Client(timeout=60) as http:
            assert not tool_call(http, first, "/mcp", key, "release_todo", {"id": "both", "leaseToken": lease})[0]
