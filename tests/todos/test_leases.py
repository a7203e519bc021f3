"""claim_next, lease tokens, writes that respect claims, names over HTTP and next_todos' umbrellas and held todos,
through the SDK client over HTTP (Django's live server) and stdio (separate processes on one SQLite file)."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from accounts.models import ApiKey
from accounts.services import apikey_create
from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller
from tests.clients import http_client, run, stdio_client
from tests.oauth.helpers import mint_token
from tests.todos import leases
from tests.todos.helpers import call, put
from todos import selectors, services
from todos.tools import TOOLSET
from todos.tools.holder import NO_NAME


@pytest.fixture
def site(live_server, settings):
    settings.SITE_URL = live_server.url
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": live_server.url}
    return live_server.url


def test_leases_over_http(site, alice):
    """One agent on a stateless legacy connection naming itself with `by`, one at 2026-07-28 known by its
    clientInfo name: requests stand alone, so the lease token is what proves a claim."""

    async def scenario() -> None:
        async with (
            http_client(f"{site}/mcp", key=alice.key) as first,
            http_client(f"{site}/mcp", key=alice.key, mode="2026-07-28", name="codex-task") as second,
        ):
            await leases.scenario_claim_next(first, "agent-one", "agent-one", second, None)
            await leases.scenario_lease_token(first, "agent-one", "agent-one", second, None,
                                              same_connection_renews=False)
            await leases.scenario_writes_respect_claims(second, "codex-task", None, first)
            await leases.scenario_next_umbrella_and_held(first, "agent-one", "agent-one", second, None)

    run(scenario())


def test_claim_next_at_once_over_http_on_postgresql(site, alice, settings):
    """Nine claim_next calls at once through three HTTP clients of one user: each gets its own todo. On PostgreSQL
    only: the live server's SQLite test database is one in-memory connection (its table locks are not the file's);
    several servers on one PostgreSQL run the same race in tests/shared."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: the live server's in-memory SQLite does not serve concurrent writers")
    settings.MCP_USER_CONCURRENCY = 0

    async def scenario() -> None:
        async with (
            http_client(f"{site}/mcp", key=alice.key) as first,
            http_client(f"{site}/mcp", key=alice.key) as second,
            http_client(f"{site}/mcp", key=alice.key) as third,
        ):
            await leases.scenario_claim_next_at_once([(first, "agent-1"), (second, "agent-2"), (third, "agent-3")],
                                                     rounds=3)

    run(scenario())


def test_leases_over_stdio(tmp_path):
    """Three local agents, each its own stdio process on the shared database and known by its client's name; the
    same `by` on the same connection renews and writes without repeating the token."""
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir()

    async def scenario() -> None:
        async with stdio_client("todos", home=home, cwd=cwd, user="alice", name="claude-code@shop") as first:
            await put(first, "st-ready", "Database ready")  # the first process migrates the fresh database
            async with (
                stdio_client("todos", home=home, cwd=cwd, user="alice", name="Codex CLI") as second,
                stdio_client("todos", home=home, cwd=cwd, user="alice", name="cursor") as third,
            ):
                await leases.scenario_claim_next(first, "claude-code@shop", None, second, None)
                await leases.scenario_lease_token(first, "claude-code@shop", None, second, None,
                                                  same_connection_renews=True)
                await leases.scenario_writes_respect_claims(second, "Codex-CLI", None, first)
                await leases.scenario_next_umbrella_and_held(first, "claude-code@shop", None, second, None)
                agents = [(first, "agent-1"), (second, "agent-2"), (third, "agent-3")]
                await leases.scenario_claim_next_at_once(agents, rounds=3)

    run(scenario())


def test_stdio_holder_writes_without_repeating_its_token(tmp_path):
    """On its own stdio connection the holder completes what it claimed without the token; another process of
    the same user, with the same client name, is another connection and is refused."""
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir()

    async def scenario() -> None:
        async with stdio_client("todos", home=home, cwd=cwd, user="alice", name="claude-code") as first:
            await put(first, "sw-a", "Mine")
            await put(first, "sw-b", "Mine too")
            async with stdio_client("todos", home=home, cwd=cwd, user="alice", name="claude-code") as twin:
                assert (await call(first, "claim_todo", id="sw-a")).data["claimedBy"] == "claude-code"
                assert (await call(first, "claim_next")).data["id"] == "sw-b"
                refusal = (await call(twin, "complete_todo", id="sw-a")).text
                assert refusal.startswith("Todo sw-a is claimed by claude-code until"), refusal
                assert (await call(twin, "claim_todo", id="sw-a")).is_error
                assert (await call(first, "update_todo", id="sw-a", priority="high")).data["claimedBy"]
                assert (await call(first, "complete_todo", id="sw-a")).data["completedAt"]
                assert "claimedBy" not in (await call(first, "release_todo", id="sw-b")).data

    run(scenario())


def test_names_over_http_come_from_the_api_key_or_the_oauth_client(site, alice):
    """Without `by` on a connection that does not tell its name, the claimer is the API key's label or the OAuth
    client's name; with neither, the refusal says what to pass."""
    labelled_key = apikey_create(user=alice.user, name="laptop claude")[1]
    token = mint_token(alice.user, resource=[f"{site}/mcp"])  # its OAuth application is called "minted"

    async def scenario() -> None:
        async with http_client(f"{site}/mcp", key=alice.key) as unnamed:
            await put(unnamed, "nm-a", "By the key's label")
            await put(unnamed, "nm-b", "By the OAuth client's name")
            assert await leases._refused(unnamed, "claim_todo", id="nm-a") == NO_NAME
            assert await leases._refused(unnamed, "claim_next") == NO_NAME
            async with http_client(f"{site}/mcp", key=labelled_key) as labelled:
                claimed = (await call(labelled, "claim_todo", id="nm-a")).data
                assert claimed["claimedBy"] == "laptop-claude"
                held = await call(labelled, "next_todos")
                assert [todo["id"] for todo in held.held] == ["nm-a"], "known by its label, it holds nm-a"
                assert [todo["id"] for todo in held.data] == ["nm-b"]
            async with http_client(f"{site}/mcp", key=token) as oauth:
                taken = (await call(oauth, "claim_next")).data
                assert (taken["id"], taken["claimedBy"]) == ("nm-b", "minted")
                assert (await call(oauth, "next_todos")).held[0]["id"] == "nm-b"

    run(scenario())


def test_createkey_label_names_the_key(alice, capsys):
    call_command("createkey", "alice", "--label", "ci bot")
    raw = re.search(r"^key: (\S+)$", capsys.readouterr().out, re.M)
    assert raw is not None
    assert ApiKey.objects.filter(user=alice.user).order_by("-pk").values_list("name", flat=True).first() == "ci bot"


def test_the_list_pages_next_is_next_todos_order_and_people_act_on_held_todos(alice):
    """/list's "Next" lists what next_todos answers, in its order (umbrellas out, held todos out), and says who
    holds what; a person completes a held todo there, whoever holds it."""
    services.todo_put(owner=alice.user, key="lp-shop", name="Open the shop", description="", priority="high")
    services.todo_put(owner=alice.user, key="lp-shelves", name="Build shelves", description="", links=["lp-shop"])
    services.todo_put(owner=alice.user, key="lp-sign", name="Hang the sign", description="", links=["lp-shop"])
    services.todo_put(owner=alice.user, key="lp-milk", name="Buy milk", description="")
    caller = Caller(user=alice.user, transport="http")
    claim = run_tool(TOOLSET, TOOLSET.by_name["claim_todo"], caller, {"id": "lp-sign", "by": "bot"})
    answer = run_tool(TOOLSET, TOOLSET.by_name["next_todos"], caller, {"limit": 50})
    names = [todo["name"] for todo in json.loads(answer.text)]
    assert names == ["Build shelves", "Buy milk"]
    browser = Client()
    query = {"uid": alice.uid, "key": alice.key}
    page = browser.get("/list", query).content.decode()
    section = page.split('aria-labelledby="next-heading"', 1)[1].split("</section>", 1)[0]
    assert re.findall(r'<a href="#todo-[^"]+">([^<]+)</a>', section) == names
    assert "@bot until" in page and json.loads(claim.text)["leaseToken"] not in page
    assert browser.post("/list/complete", {**query, "id": "lp-sign"}).status_code == 303
    assert selectors.todo_get(owner=alice.user, key="lp-sign").completed_at is not None
