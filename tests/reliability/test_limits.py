"""One user cannot stall the server for everyone: batches are capped, a request's work is bounded, and each user
has a request rate and a number of requests in flight. Plus the protocol details third-party clients rely on."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from mcp_bridge.limits import in_flight
from tests.reliability.helpers import MCP_PATHS, call_tool

SEARCH = {"name": "pill_search", "arguments": {"query": "anything at all"}}


def post(client: Client, key: str, body: object, server: str = "pillbox", **headers: str):
    return client.post(
        MCP_PATHS[server], data=json.dumps(body), content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}", **headers,
    )


def searches(count: int) -> list[dict]:
    return [{"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": SEARCH} for n in range(1, count + 1)]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26"])
def test_a_batch_over_the_cap_is_refused_naming_the_cap(alice, version):
    # The attack: 200 pill_search calls in one batch held a worker for half a minute.
    response = post(Client(), alice.key, searches(200), HTTP_MCP_PROTOCOL_VERSION=version)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32600
    assert "at most 20" in error["message"] and "got 200" in error["message"]


def test_a_batch_at_the_cap_is_answered_in_full(alice):
    response = post(Client(), alice.key, searches(20), HTTP_MCP_PROTOCOL_VERSION="2025-03-26")
    assert response.status_code == 200
    assert [reply["id"] for reply in response.json()] == list(range(1, 21))
    assert all("result" in reply for reply in response.json())


def test_the_batch_cap_is_configurable(alice, settings):
    settings.MCP_MAX_BATCH = 3
    response = post(Client(), alice.key, searches(4), HTTP_MCP_PROTOCOL_VERSION="2025-03-26")
    assert response.status_code == 400
    assert "at most 3" in response.json()["error"]["message"]


def test_a_batch_stops_when_the_request_s_work_budget_is_spent(alice, settings):
    settings.MCP_REQUEST_BUDGET_SECONDS = 0  # the first message always runs; nothing after it fits
    batch = [*searches(2), {"jsonrpc": "2.0", "method": "notifications/initialized"}, *searches(3)[2:]]
    response = post(Client(), alice.key, batch, HTTP_MCP_PROTOCOL_VERSION="2025-03-26")
    assert response.status_code == 200
    replies = {reply["id"]: reply for reply in response.json()}
    assert set(replies) == {1, 2, 3}
    assert "result" in replies[1]
    for skipped in (replies[2], replies[3]):
        assert skipped["error"]["code"] == -32000
        assert "send the remaining requests again" in skipped["error"]["message"]


def test_a_user_over_the_request_rate_gets_429_with_retry_after_and_others_do_not(alice, bob, settings):
    settings.MCP_USER_RATE_LIMIT = (5, 60)
    client = Client()
    assert post(client, alice.key, searches(4), HTTP_MCP_PROTOCOL_VERSION="2025-03-26").status_code == 200
    assert call_tool(client, "pillbox", alice.key, "bottle_list", {}).text == "No bottles registered."
    refused = post(client, alice.key, {"jsonrpc": "2.0", "id": 77, "method": "tools/list"})
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    error = refused.json()
    assert error["id"] == 77 and error["error"]["code"] == -32000
    assert "at most 5 per 60 seconds" in error["error"]["message"]
    # The other server counts against the same user; another user is untouched.
    assert post(client, alice.key, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, "todos").status_code == 429
    assert call_tool(client, "pillbox", bob.key, "bottle_list", {}).text == "No bottles registered."


def test_a_user_with_every_slot_in_flight_gets_429_and_others_do_not(alice, bob, settings):
    settings.MCP_USER_CONCURRENCY = 1
    client = Client()
    ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
    with in_flight(alice.user.pk) as refusal:  # alice's one slot is taken by a request still running
        assert refusal is None
        refused = post(client, alice.key, ping)
        assert refused.status_code == 429 and refused["Retry-After"] == "1"
        assert "at most 1 in flight" in refused.json()["error"]["message"]
        assert post(client, bob.key, ping).status_code == 200
    assert post(client, alice.key, ping).status_code == 200  # the slot came back
    assert post(client, alice.key, ping).status_code == 200  # and every request gives its own back


# ---------------------------------------------------------------- protocol details


@pytest.mark.parametrize("server", ["pillbox", "todos"])
def test_an_unsupported_protocol_version_error_carries_the_request_id(alice, server):
    response = post(Client(), alice.key, {"jsonrpc": "2.0", "id": "req-9", "method": "tools/list"}, server,
                    HTTP_MCP_PROTOCOL_VERSION="1999-01-01")
    assert response.status_code == 400
    body = response.json()
    assert body["id"] == "req-9"
    assert body["error"]["code"] == -32022
    assert body["error"]["data"] == {"supported": list(KNOWN_PROTOCOL_VERSIONS), "requested": "1999-01-01"}


def test_server_discover_and_the_32022_error_list_the_same_versions(alice):
    client = Client()
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    discover = post(client, alice.key, {"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                                        "params": {"_meta": meta}}, HTTP_MCP_PROTOCOL_VERSION="2026-07-28",
                    HTTP_MCP_METHOD="server/discover")
    assert discover.status_code == 200, discover.content
    listed = discover.json()["result"]["supportedVersions"]
    refused = post(client, alice.key, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                   HTTP_MCP_PROTOCOL_VERSION="2000-01-01").json()
    assert listed == refused["error"]["data"]["supported"] == list(KNOWN_PROTOCOL_VERSIONS)


# ---------------------------------------------------------------- per-user quotas


QUOTAS = {"bottles": 2, "prescriptions": 2, "pills": 3, "capsules": 2}
AUTHOR = {"author_name": "Ada", "author_email": "ada@example.com"}


def _ok(client: Client, key: str, tool: str, arguments: dict) -> str:
    reply = call_tool(client, "pillbox", key, tool, arguments)
    assert not reply.is_error, reply.text
    return reply.text


def _refused(client: Client, key: str, tool: str, arguments: dict, limit: str) -> None:
    reply = call_tool(client, "pillbox", key, tool, arguments)
    assert reply.is_error
    assert reply.text.startswith("error: validation_error\nmessage: You have reached the limit of"), reply.text
    assert f"\nlimit: {limit}\n" in reply.text


def _id(text: str) -> str:
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)["id"]


def test_per_user_quotas_refuse_the_row_past_each_limit_naming_it(alice, bob, settings):
    settings.PILLBOX_QUOTAS = QUOTAS
    client = Client()
    bottle = _id(_ok(client, alice.key, "bottle_create", {"name": "one", "display_name": "One", "scope": "global"}))
    _ok(client, alice.key, "bottle_create", {"name": "two", "display_name": "Two", "scope": "global"})
    _refused(client, alice.key, "bottle_create", {"name": "three", "display_name": "3", "scope": "global"},
             "2 bottles per user")

    first = _id(_ok(client, alice.key, "prescription_open", {"bottle_id": bottle, "title": "a", **AUTHOR}))
    second = _id(_ok(client, alice.key, "prescription_open", {"bottle_id": bottle, "title": "b", **AUTHOR}))
    _ok(client, alice.key, "prescription_discard", {"id": second})  # discarded rows still take room
    _refused(client, alice.key, "prescription_open", {"bottle_id": bottle, "title": "c", **AUTHOR},
             "2 prescriptions per user")

    pill = {"prescription_id": first, "title": "t", "content": "c", "compound": "note", **AUTHOR}
    stored = [_id(_ok(client, alice.key, "pill_store", pill)) for _ in range(3)]
    _ok(client, alice.key, "pill_discard", {"id": stored[0]})
    _refused(client, alice.key, "pill_store", pill, "3 pills per user")

    capsule = {"title": "t", "content": "c", "compound": "note"}
    _ok(client, alice.key, "capsule_store", capsule)
    _ok(client, alice.key, "capsule_store", capsule)
    _refused(client, alice.key, "capsule_store", capsule, "2 capsules per user")

    # Alice's limits are hers alone.
    _ok(client, bob.key, "capsule_store", capsule)
    _ok(client, bob.key, "bottle_create", {"name": "one", "display_name": "One", "scope": "global"})


def test_a_quota_of_zero_is_no_quota(alice, settings):
    settings.PILLBOX_QUOTAS = {**QUOTAS, "capsules": 0}
    client = Client()
    for _ in range(3):
        _ok(client, alice.key, "capsule_store", {"title": "t", "content": "c", "compound": "note"})


# ---------------------------------------------------------------- bounded in-process caches


def test_the_lru_is_bounded_by_count_and_by_bytes():
    from base.lru import BoundedLru

    lru: BoundedLru[str, str] = BoundedLru(max_items=3, max_bytes=100, size_of=len)
    for key in "abcd":
        lru.put(key, "x" * 10)
    assert len(lru) == 3 and lru.get("a") is None  # the oldest went first
    assert lru.get("b") == "x" * 10  # and b is now the most recent
    lru.put("e", "y" * 75)
    assert lru.bytes <= 100 and lru.get("b") is not None and lru.get("c") is None
    lru.put("huge", "z" * 101)  # bigger than the whole budget: never kept, nothing else lost for it
    assert lru.get("huge") is None and lru.get("b") is not None
    lru.put("b", "w")  # replacing an entry gives its bytes back
    assert lru.bytes == 10 + 75 + 1


def test_what_a_process_remembers_per_file_is_bounded(tmp_path, monkeypatch):
    """The original-import notices and checks are kept per file met: a server that meets many files keeps at
    most its bound of them (a forgotten one is only said or checked again)."""
    from pillbox.original import files, news, recognise

    for memory in (news._told, recognise._global_originals):
        monkeypatch.setattr(memory, "max_items", 3)
        memory.clear()
    for n in range(6):
        news.announce_failure(files.ImportFailed(f"file {n} could not be read"))
        (tmp_path / f"{n}.db").write_bytes(b"")
        assert recognise.is_global_original(tmp_path / f"{n}.db") is False
    assert len(news._told) == 3 and len(recognise._global_originals) == 3
    assert "file 5 could not be read" in news._told and "file 0 could not be read" not in news._told


def test_the_todo_search_index_cache_holds_its_byte_budget_whatever_users_search():
    # The attack's shape: many users (or one with long todos) fill a cache bounded only by its count.
    from todos.search import Doc, TodoIndex
    from todos.selectors import SEARCH_CACHE_BYTES, _IndexCache, search_indexes

    assert search_indexes.entries.max_bytes == SEARCH_CACHE_BYTES
    words = [f"word{n}" for n in range(3000)]
    index = TodoIndex.build(Doc(f"t{n}", f"task {n}", " ".join(words[n * 10 : n * 10 + 200])) for n in range(200))
    cache = _IndexCache(64, index.approximate_bytes * 5)
    for user in range(40):
        cache.put((user, False), (200, None), index)
    assert len(cache.entries) == 5 and cache.entries.bytes <= index.approximate_bytes * 5
    assert cache.get((39, False), (200, None)) is index and cache.get((0, False), (200, None)) is None


def test_the_sdk_client_hands_the_rate_limit_sentence_to_the_agent(live_server, alice, settings):
    from mcp.shared.exceptions import MCPError

    from tests.clients import http_client, run

    settings.MCP_USER_RATE_LIMIT = (4, 60)

    async def scenario() -> str:
        async with http_client(live_server.url + "/pillbox/mcp", key=alice.key) as client:
            for _ in range(10):
                try:
                    await client.call_tool("bottle_list", {})
                except MCPError as exc:
                    return str(exc)
        return "never refused"

    assert "Too many MCP requests: at most 4 per 60 seconds per user" in run(scenario())
