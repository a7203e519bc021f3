"""The Todos MCP server end to end over Streamable HTTP, through the SDK's own client."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command

from accounts.models import Account
from tests.clients import http_client, run
from tests.todos import claims, helpers
from tests.todos.helpers import call, put
from tests.todos.planning import fields, filters, idempotence, next_steps, views
from todos.access import list_link_user
from todos.timestamps import clock


def limit_setter(user):
    @sync_to_async
    def set_limit(limit: int) -> None:
        Account.objects.filter(user=user).update(max_tasks=limit)

    return set_limit


def list_owner(site: str):
    async def owner(url: str) -> str:
        """Open the link as a browser would; the page must show the scenario's todos, and whose list it is."""
        assert url.startswith(f"{site}/list?t=")
        page = await asyncio.to_thread(httpx2.get, url)
        assert page.status_code == 200 and "Idempotence root" in page.text
        user = await sync_to_async(list_link_user)(parse_qs(urlsplit(url).query)["t"][0])
        assert user is not None
        return user.username

    return owner


@pytest.fixture
def site(live_server, settings):
    # get_list_url builds absolute URLs from SITE_URL: point it at the live server so links can be opened.
    settings.SITE_URL = live_server.url
    return live_server.url


def test_todos_http_contract(site, alice):
    async def scenario() -> None:
        async with http_client(f"{site}/mcp", key=alice.key) as client:
            await helpers.scenario_listing(client)
            await helpers.scenario_create_defaults(client, alice.uid)
            await helpers.scenario_replace(client)
            await helpers.scenario_list_order(client)
            await helpers.scenario_not_found_and_extensions(client)
            await helpers.scenario_usage(client, limit_setter(alice.user))
            await helpers.scenario_bad_input(client)
            await helpers.scenario_limit(client, limit_setter(alice.user))
            await helpers.scenario_search(client)
            await helpers.scenario_prompt(client)

    run(scenario())


def test_todos_http_planning(site, alice):
    async def scenario() -> None:
        async with http_client(f"{site}/mcp", key=alice.key) as client:
            await fields.scenario_seed_answers_unchanged(client, alice.uid)
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
            await idempotence.scenario_idempotent_hints(client, list_owner(site), alice.user.username)

    run(scenario())


def test_todos_http_two_users_with_the_same_ids(site, alice, bob):
    async def scenario() -> None:
        async with http_client(f"{site}/mcp", key=alice.key) as a, http_client(f"{site}/mcp", key=bob.key) as b:
            await helpers.scenario_two_users(a, alice.uid, b, bob.uid)
            assert (await helpers.usage(a))["count"] == 2 and (await helpers.usage(b))["count"] == 2

    run(scenario())


def test_todos_http_at_the_seed_protocol_version(site, alice):
    """The seed speaks 2024-11-05, which has no structured content: the JSON text alone carries the answer."""
    headers = {
        "Authorization": f"Bearer {alice.key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2024-11-05",
    }

    def rpc(method: str, params: dict) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return httpx2.post(f"{site}/mcp", json=body, headers=headers).json()

    init = rpc(
        "initialize",
        {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "seed", "version": "1"}},
    )
    assert init["result"]["protocolVersion"] == "2024-11-05"
    put_result = rpc(
        "tools/call", {"name": "put_todo", "arguments": {"id": "old-client", "name": "Old client", "description": ""}}
    )
    assert list(json.loads(put_result["result"]["content"][0]["text"])) == helpers.TODO_KEYS
    missing = rpc("tools/call", {"name": "complete_todo", "arguments": {"id": "nope"}})["result"]
    assert missing["content"] == [{"type": "text", "text": "Todo not found"}] and missing["isError"] is True


def test_unknown_tool_is_a_protocol_error(site, alice):
    response = httpx2.post(
        f"{site}/mcp",
        json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "drop_todos", "arguments": {}}},
        headers={"Authorization": f"Bearer {alice.key}", "Accept": "application/json, text/event-stream"},
    )
    assert response.json()["error"]["code"] == -32602


async def _list_url(site: str, **auth: str) -> str:
    url = f"{site}/mcp"
    if "uid" in auth:
        url += f"?uid={auth['uid']}&key={auth['key']}"
        auth = {}
    async with http_client(url, key=auth.get("key")) as client:
        answer = await call(client, "get_list_url")
    assert not answer.is_error and answer.structured == {"url": answer.text}
    return answer.text


def test_list_url_for_a_bearer_caller_is_signed_opens_the_list_and_dies_on_revoke(site, alice, bob):
    async def scenario() -> str:
        async with http_client(f"{site}/mcp", key=alice.key) as a, http_client(f"{site}/mcp", key=bob.key) as b:
            await put(a, "buy-milk", "Alice's oat milk", "")
            await put(a, "done-thing", "Alice's finished chore", "")
            await call(a, "complete_todo", id="done-thing")
            await put(a, "gone-thing", "Alice's deleted errand", "")
            await call(a, "delete_todo", id="gone-thing")
            await put(b, "buy-milk", "Bob's cow milk", "")
            return (await call(a, "get_list_url")).text

    url = run(scenario())
    assert url.startswith(f"{site}/list?")
    assert alice.key not in url and "key=" not in url
    page = httpx2.get(url)
    assert page.status_code == 200
    assert "Alice&#x27;s oat milk" in page.text and "Alice&#x27;s finished chore" in page.text
    assert "deleted errand" not in page.text and "Bob" not in page.text
    # No other site sees the link (strict-origin); no-referrer would make browsers post forms with `Origin: null`,
    # which Django's CSRF check refuses.
    assert page.headers["Referrer-Policy"] == "strict-origin"

    token = parse_qs(urlsplit(url).query)["t"][0]
    # A random token: nothing in it names alice, and a changed character opens nothing.
    assert alice.uid not in token and len(token) >= 40
    flipped = token[:10] + ("A" if token[10] != "A" else "B") + token[11:]
    for forged in (flipped, token + "x", token[:-1]):
        response = httpx2.get(f"{site}/list", params={"t": forged})
        assert response.status_code == 403 and "oat milk" not in response.text
    assert httpx2.get(f"{site}/list?t=").status_code == 403

    bob_page = httpx2.get(run(_list_url(site, key=bob.key)))
    assert "Bob&#x27;s cow milk" in bob_page.text and "Alice" not in bob_page.text

    call_command("revokekeys", "alice", stdout=open("/dev/null", "w"))
    dead = httpx2.get(url)
    assert dead.status_code == 403 and "oat milk" not in dead.text
    assert httpx2.get(run(_list_url(site, key=bob.key))).status_code == 200  # bob's links live on


def test_list_url_for_a_uid_and_key_caller_gives_back_only_what_it_presented(site, alice, bob):
    url = run(_list_url(site, uid=alice.uid, key=alice.key))
    query = parse_qs(urlsplit(url).query)
    assert query == {"uid": [alice.uid], "key": [alice.key]}
    assert httpx2.get(url).status_code == 200
    # Another user's uid with alice's key opens nothing, and neither does a key alone.
    assert httpx2.get(f"{site}/list?uid={bob.uid}&key={alice.key}").status_code == 403
    assert httpx2.get(f"{site}/list?key={alice.key}").status_code == 403


def test_list_page_without_credentials_asks_to_log_in(site):
    response = httpx2.get(f"{site}/list")
    assert response.status_code == 302 and "login" in response.headers["Location"]


@pytest.fixture
def settable_clock():
    """The claims' clock, shared with the live server's thread: a test moves it on instead of waiting."""
    clock.reset()
    yield clock
    clock.reset()


def test_todos_http_claims_and_updates(site, alice, settable_clock):
    """Two agents of one user: one on a stateless legacy connection naming itself with `by`, one at 2026-07-28,
    whose requests carry its clientInfo name, the default claimer."""

    async def expire(todo_id: str, delta) -> None:
        settable_clock.advance(delta)

    async def scenario() -> None:
        async with (
            http_client(f"{site}/mcp", key=alice.key) as first,
            http_client(f"{site}/mcp", key=alice.key, mode="2026-07-28", name="codex-task") as second,
        ):
            await claims.scenario_claims(first, "agent-one", "agent-one", second, "codex-task", None, expire)
            await claims.scenario_by_required_without_a_client_name(first)
            await claims.scenario_update(second, None)

    run(scenario())
