"""claim_next through two app servers on one PostgreSQL and one Redis: eight agents of one user take the next free
todo at the same moment, four through each server, and no todo is ever held by two of them nor passed over while
free. The servers are the package's (conftest.py)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx2
import psycopg

from tests.shared.servers import call, tool_call

AGENTS = 8
CALLS_PER_AGENT = 5
NO_FREE_TODO = "No free todo."


def _agent(url: str, key: str, by: str, calls: int, start: threading.Barrier) -> list[str]:
    """``calls`` claim_next in a row, keeping every claim: the ids taken (or the empty-state sentence)."""
    taken = []
    with httpx2.Client(timeout=60) as http:
        start.wait()
        for _ in range(calls):
            failed, text = tool_call(http, url, "/mcp", key, "claim_next", {"by": by, "under": "cn2-root"})
            assert not failed, text
            taken.append(text if text == NO_FREE_TODO else json.loads(text)["id"])
    return taken


def _race(servers: list[str], key: str, calls: int) -> dict[str, list[str]]:
    start = threading.Barrier(AGENTS)
    with ThreadPoolExecutor(AGENTS) as pool:
        futures = {f"agent-{i}": pool.submit(_agent, servers[i % 2], key, f"agent-{i}", calls, start)
                   for i in range(AGENTS)}
        return {by: future.result() for by, future in futures.items()}


def test_eight_agents_claim_next_through_both_servers_none_twice_none_passed_over(servers, database, redis_db):
    redis_db.flushdb()
    key = database.accounts["nina"]["key"]  # her own: an earlier test revokes kim's key
    count = AGENTS * CALLS_PER_AGENT
    with httpx2.Client(timeout=60) as http:
        call(http, servers[0], "/mcp", key, "put_todo", {"id": "cn2-root", "name": "Work for eight", "description": ""})
        for n in range(count + 3):
            call(http, servers[n % 2], "/mcp", key, "put_todo",
                 {"id": f"cn2-{n:03d}", "name": f"Step {n}", "description": "", "links": ["cn2-root"]})
    taken = _race(servers, key, CALLS_PER_AGENT)
    every = [todo for ids in taken.values() for todo in ids]
    assert NO_FREE_TODO not in every, taken
    assert len(set(every)) == count, "a todo went to two agents"
    # The first `count` todos in next_todos' order (oldest first here) went, none passed over for a later one.
    assert sorted(every) == [f"cn2-{n:03d}" for n in range(count)]
    with psycopg.connect(database.url) as db:
        holders = dict(db.execute("SELECT key, claimed_by FROM todos_todo WHERE key LIKE 'cn2-0%%'").fetchall())
    for by, ids in taken.items():
        assert all(holders[todo] == by for todo in ids), (by, ids)
    # Three left for eight agents at once: three win one each, five are told there is none.
    last = [todo for ids in _race(servers, key, 1).values() for todo in ids]
    assert sorted(todo for todo in last if todo != NO_FREE_TODO) == [f"cn2-{n:03d}" for n in range(count, count + 3)]
    assert last.count(NO_FREE_TODO) == AGENTS - 3
