"""The Todos MCP server end to end over stdio (`manage.py mcp todos --user NAME`), through the SDK's client.

Each test is one or two subprocesses doing many calls, so the suite stays fast.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.clients import ROOT, run, stdio_client
from tests.todos import claims, helpers
from tests.todos.helpers import call, put
from tests.todos.planning import fields, filters, idempotence, next_steps, views

SECRET = "stdio-test-secret-key-that-is-long-enough-for-django"
SITE = "https://todos.example.com"


def command_env(home: Path) -> dict[str, str]:
    environment = {**os.environ, "PILLBOX_HOME": str(home), "HOME": str(home)}
    environment.pop("DATABASE_URL", None)
    return environment


def limit_setter(home: Path, username: str):
    async def set_limit(limit: int) -> None:
        # The server process owns the database; the test changes the plan limit the way an operator would.
        with sqlite3.connect(home / "pillbox.db") as db:
            db.execute(
                "UPDATE accounts_account SET max_tasks = ? "
                "WHERE user_id = (SELECT id FROM auth_user WHERE username = ?)",
                (limit, username),
            )

    return set_limit


def list_owner(home: Path):
    async def owner(url: str) -> str:
        """Whose list the link opens. No web server runs beside a stdio test, so this reads what the /list view
        checks (todos.access.list_link_user): the link's row, found by its hash, not revoked nor expired, and
        its user. The HTTP test opens the page itself."""
        token = parse_qs(urlsplit(url).query)["t"][0]
        with sqlite3.connect(home / "pillbox.db") as db:
            rows = db.execute(
                "SELECT u.username FROM accounts_listlink l JOIN auth_user u ON u.id = l.user_id "
                "WHERE l.token_hash = ? AND l.revoked_at IS NULL AND l.expires_at > ?",
                (hashlib.sha256(token.encode()).hexdigest(), datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")),
            ).fetchall()
        assert len(rows) == 1, url
        username: str = rows[0][0]
        return username

    return owner


def test_todos_stdio_contract(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir()

    async def scenario() -> None:
        async with stdio_client("todos", home=home, cwd=cwd, user="alice") as client:
            await helpers.scenario_listing(client)
            uid = (await put(client, "uid-probe", "probe"))["uid"]
            await helpers.scenario_create_defaults(client, uid)
            await helpers.scenario_replace(client)
            await helpers.scenario_list_order(client)
            await helpers.scenario_not_found_and_extensions(client)
            await helpers.scenario_usage(client, limit_setter(home, "alice"))
            await helpers.scenario_bad_input(client)
            await helpers.scenario_limit(client, limit_setter(home, "alice"))
            await helpers.scenario_search(client)
            await helpers.scenario_prompt(client)

    run(scenario())


def test_todos_stdio_planning(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir()

    async def scenario() -> None:
        async with stdio_client("todos", home=home, cwd=cwd, user="alice") as client:
            await fields.scenario_seed_answers_unchanged(client, None)
            await fields.scenario_tags(client)
            await fields.scenario_blocked(client)
            await filters.scenario_filters(client)
            await next_steps.scenario_next(client)
            await views.scenario_views(client)
            await views.scenario_ranked_views(client)
            await next_steps.scenario_next_default_limit(client)
            await next_steps.scenario_next_filters(client)
            await filters.scenario_search_priority(client)
            await views.scenario_tree_on_search_and_next(client)
            await idempotence.scenario_idempotent_hints(client, list_owner(home), "alice")

    run(scenario())


def test_todos_stdio_two_users_and_list_links(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir()
    env = {"DJANGO_SECRET_KEY": SECRET, "SITE_URL": SITE}

    async def links(client) -> str:
        answer = await call(client, "get_list_url")
        assert not answer.is_error and answer.structured == {"url": answer.text}
        return answer.text

    async def scenario() -> tuple[str, str, str, str]:
        # The first process migrates the fresh database; the second starts once it is ready.
        async with stdio_client("todos", home=home, cwd=cwd, user="alice", **env) as alice:
            alice_uid = (await put(alice, "uid-probe", "probe"))["uid"]
            async with stdio_client("todos", home=home, cwd=cwd, user="bob", **env) as bob:
                bob_uid = (await put(bob, "uid-probe", "probe"))["uid"]
                await helpers.scenario_two_users(alice, alice_uid, bob, bob_uid)
                alice_link, bob_link = await asyncio.gather(links(alice), links(bob))
                assert await links(alice) == alice_link  # the same agent gets its live link back (idempotent)
                revoke = await asyncio.create_subprocess_exec(
                    sys.executable,
                    str(ROOT / "manage.py"),
                    "revokekeys",
                    "alice",
                    cwd=str(cwd),
                    env={**command_env(home), **env},
                    stdout=subprocess.DEVNULL,
                )
                assert await revoke.wait() == 0
                return alice_uid, alice_link, bob_link, await links(alice)

    alice_uid, alice_link, bob_link, renewed = run(scenario())
    for link in (alice_link, bob_link, renewed):
        # The signed token is random-looking base64, which may spell "key" by chance: look for the parameter.
        assert link.startswith(f"{SITE}/list?t=") and "key" not in parse_qs(urlsplit(link).query)
    tokens = [parse_qs(urlsplit(link).query)["t"][0] for link in (alice_link, bob_link, renewed)]
    assert all(alice_uid not in token for token in tokens)
    # Only hashes are kept; revokekeys revoked alice's links handed out before it, not the one made since, nor bob's.
    with sqlite3.connect(home / "pillbox.db") as db:
        rows = {
            digest: (kind, revoked is not None)
            for digest, kind, revoked in db.execute("SELECT token_hash, kind, revoked_at FROM accounts_listlink")
        }
    state = [rows[hashlib.sha256(token.encode()).hexdigest()] for token in tokens]
    assert state == [("stdio", True), ("stdio", False), ("stdio", False)]


def lease_shortener(home: Path):
    async def expire(todo_id: str, delta) -> None:
        """Time passing, as the stdio servers (other processes) see it: the lease's end moves back by delta."""
        with sqlite3.connect(home / "pillbox.db") as db:
            (until,) = db.execute("SELECT claimed_until FROM todos_todo WHERE key = ?", (todo_id,)).fetchone()
            moved = datetime.fromisoformat(until) - delta
            db.execute("UPDATE todos_todo SET claimed_until = ? WHERE key = ?", (moved.isoformat(" "), todo_id))

    return expire


def test_todos_stdio_claims_and_updates(tmp_path):
    """Two local agents, each its own stdio process on the shared database; neither sends `by`: each is known by
    the name its client gave in the handshake (`Codex CLI` becomes `Codex-CLI`)."""
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir()

    async def scenario() -> None:
        async with (
            stdio_client("todos", home=home, cwd=cwd, user="alice", name="claude-code@shop") as first,
            stdio_client("todos", home=home, cwd=cwd, user="alice", name="Codex CLI") as second,
        ):
            await claims.scenario_claims(
                first, "claude-code@shop", None, second, "Codex-CLI", None, lease_shortener(home)
            )
            await claims.scenario_update(first, None)

    run(scenario())
