"""Eight agents' stdio servers and the web server (gunicorn, 2 worker processes x 4 threads) writing the same
local bottle database and the same global database at once: every acknowledged write is there afterwards, and
no agent is ever answered "database is locked" (or any error at all)."""

from __future__ import annotations

import re
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2

from tests.reliability.helpers import Reply, StdioServer, make_key, reply_of, web_server

STDIO_WORKERS = 8
STDIO_WRITES = 200  # each: pills into the local database, capsules into the global one
HTTP_WORKERS = 4
HTTP_WRITES = 100  # each: pills (local, through PILLBOX_ROOT), capsules and todos (global)
IN_FLIGHT = 4  # requests pipelined per stdio server
AUTHOR = {"author_name": "Ada", "author_email": "ada@example.com"}


def _id(reply: Reply) -> str:
    assert not reply.is_error, reply.text
    match = re.search(r"^id: ([0-9a-f]{12})$", reply.text, re.M)
    assert match, reply.text
    return match.group(1)


def _stdio_worker(n: int, home: Path, project: Path, prescription: str) -> list[tuple[str, str]]:
    """Pipelined writes; returns (kind, short id) for every acknowledged write."""
    server = StdioServer("pillbox", home=home, cwd=project, user=f"agent{n}")
    acknowledged: list[tuple[str, str]] = []
    pending: dict[int, str] = {}
    try:
        # Another user's memory is read once adopted (pillbox.origin).
        assert "origin: adopted" in server.call("bottle_vinculate", {}).text
        for i in range(STDIO_WRITES):
            if i % 4 == 3:
                request = server.request_tool(
                    "capsule_store", {"title": f"c{n}-{i}", "content": "x", "compound": "race"}
                )
                pending[request] = "capsule"
            else:
                request = server.request_tool(
                    "pill_store",
                    {
                        "prescription_id": prescription,
                        "title": f"p{n}-{i}",
                        "content": f"body {n}-{i}",
                        "compound": "race",
                        **AUTHOR,
                    },
                )
                pending[request] = "pill"
            while len(pending) >= IN_FLIGHT or (i == STDIO_WRITES - 1 and pending):
                message = server.receive()
                acknowledged.append((pending.pop(message["id"]), _id(reply_of(message))))
    finally:
        server.close()
    return acknowledged


def _http_worker(n: int, url: str, key: str, prescription: str) -> list[tuple[str, str]]:
    acknowledged: list[tuple[str, str]] = []
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    with httpx2.Client(headers=headers, timeout=60) as http:
        for i in range(HTTP_WRITES):
            kind = ("pill", "capsule", "todo")[i % 3]
            if kind == "todo":
                endpoint, tool = "/mcp", "put_todo"
                arguments: dict[str, Any] = {"id": f"web{n}-{i}", "name": f"todo {n}-{i}", "description": ""}
            elif kind == "capsule":
                endpoint, tool = "/pillbox/mcp", "capsule_store"
                arguments = {"title": f"w{n}-{i}", "content": "x", "compound": "race"}
            else:
                endpoint, tool = "/pillbox/mcp", "pill_store"
                arguments = {
                    "prescription_id": prescription,
                    "title": f"w{n}-{i}",
                    "content": "web",
                    "compound": "race",
                    **AUTHOR,
                }
            response = http.post(
                url + endpoint,
                json={
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": tool, "arguments": arguments},
                },
            )
            assert response.status_code == 200, response.text
            reply = reply_of(response.json())
            assert not reply.is_error, reply.text
            acknowledged.append((kind, arguments["id"] if kind == "todo" else _id(reply)))
    return acknowledged


def test_stdio_servers_and_the_web_server_write_the_same_databases_at_once(tmp_path):
    home, project = tmp_path / "home", tmp_path / "home" / "project"
    project.mkdir(parents=True)
    _, web_key = make_key(home, "web", staff=True)
    setup = StdioServer("pillbox", home=home, cwd=project, user="alice")
    try:
        bottle = _id(setup.call("bottle_create", {"name": "race", "display_name": "Race"}))
        prescription = _id(setup.call("prescription_open", {"bottle_id": bottle, "title": "Many hands", **AUTHOR}))
    finally:
        setup.close()

    log = tmp_path / "gunicorn.log"
    # One user writes from every thread on purpose here; the per-user in-flight limit is proven apart
    # (test_limits.py).
    with web_server(home, log=log, PILLBOX_ROOT=str(project), MCP_USER_CONCURRENCY="0") as url:
        # The operator links the project's bottle over HTTP (staff, PILLBOX_ROOT set), then writes into it.
        linked = httpx2.post(
            url + "/pillbox/mcp",
            headers={"Authorization": f"Bearer {web_key}"},
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "bottle_vinculate", "arguments": {}},
            },
        )
        assert "status: linked" in reply_of(linked.json()).text, linked.text

        start = threading.Barrier(STDIO_WORKERS + HTTP_WORKERS)

        def stdio(n: int) -> list[tuple[str, str]]:
            start.wait()
            return _stdio_worker(n, home, project, prescription)

        def web(n: int) -> list[tuple[str, str]]:
            start.wait()
            return _http_worker(n, url, web_key, prescription)

        with ThreadPoolExecutor(STDIO_WORKERS + HTTP_WORKERS) as pool:
            futures = [pool.submit(stdio, n) for n in range(STDIO_WORKERS)]
            futures += [pool.submit(web, n) for n in range(HTTP_WORKERS)]
            acknowledged = [write for future in futures for write in future.result()]

    assert len(acknowledged) == STDIO_WORKERS * STDIO_WRITES + HTTP_WORKERS * HTTP_WRITES >= 2000
    by_kind: dict[str, list[str]] = {"pill": [], "capsule": [], "todo": []}
    for kind, ident in acknowledged:
        by_kind[kind].append(ident)
    for kind in ("pill", "capsule"):
        assert len(set(by_kind[kind])) == len(by_kind[kind]), f"two {kind}s share a short id"

    with sqlite3.connect(project / ".pillbox" / "pillbox.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        pills = {row[0].replace("-", "")[:12] for row in db.execute("SELECT id FROM pillbox_pill")}
    with sqlite3.connect(home / ".pillbox" / "pillbox.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        capsules = {row[0].replace("-", "")[:12] for row in db.execute("SELECT id FROM pillbox_capsule")}
        todos = {row[0] for row in db.execute("SELECT key FROM todos_todo")}
    assert set(by_kind["pill"]) <= pills
    assert set(by_kind["capsule"]) <= capsules
    assert set(by_kind["todo"]) <= todos
    server_log = log.read_text()
    assert "locked" not in server_log and "Traceback" not in server_log, server_log[-3000:]
