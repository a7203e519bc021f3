"""The Streamable HTTP side of the bridge, spoken to directly: versions, batches, statuses, limits."""

from __future__ import annotations

import httpx2
import pytest

from tests.clients import http_client, run

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
PATHS = ["/mcp", "/pillbox/mcp"]


def post(url: str, key: str, body: object, **headers: str) -> httpx2.Response:
    merged = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream", **headers}
    return httpx2.post(url, json=body, headers=merged, timeout=30)


@pytest.mark.parametrize("path", PATHS)
def test_initialize_2024_11_05_is_answered_with_2024_11_05(live_server, alice, path):
    response = post(live_server.url + path, alice.key, INIT)
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["protocolVersion"] == "2024-11-05"
    assert result["serverInfo"]["name"] in {"todos", "pillbox"}


def test_initialize_with_an_unknown_version_negotiates_the_latest_handshake(live_server, alice):
    body = {**INIT, "params": {**INIT["params"], "protocolVersion": "1999-01-01"}}
    result = post(live_server.url + "/pillbox/mcp", alice.key, body).json()["result"]
    assert result["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("path", PATHS)
def test_unsupported_protocol_version_header_is_400_with_32022(live_server, alice, path):
    response = post(
        live_server.url + path,
        alice.key,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        **{"MCP-Protocol-Version": "1999-01-01"},
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32022


def test_missing_version_header_serves_2025_03_26_without_a_handshake(live_server, alice):
    response = post(live_server.url + "/pillbox/mcp", alice.key, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert response.status_code == 200
    assert len(response.json()["result"]["tools"]) == 25


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26"])
def test_batches_are_accepted_at_the_versions_that_have_them(live_server, alice, version):
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    response = post(live_server.url + "/pillbox/mcp", alice.key, batch, **{"MCP-Protocol-Version": version})
    assert response.status_code == 200
    replies = response.json()
    assert [reply["id"] for reply in replies] == [1, 2]
    assert len(replies[1]["result"]["tools"]) == 25


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_batches_are_refused_at_later_versions(live_server, alice, version):
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]
    response = post(live_server.url + "/pillbox/mcp", alice.key, batch, **{"MCP-Protocol-Version": version})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_other_methods_are_405(live_server, path, method):
    response = httpx2.request(method, live_server.url + path, timeout=30)
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert response.content == b""  # protocol clients (SSE GETs included) get no page


@pytest.mark.parametrize("path", PATHS)
def test_a_browser_get_gets_a_page_saying_what_the_endpoint_is(live_server, path):
    accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    response = httpx2.get(live_server.url + path, headers={"Accept": accept}, timeout=30)
    # What the browser asked for: a 200 (a 405 would be logged as an error in its console).
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/html")
    assert "MCP endpoint" in response.text and "--transport http" in response.text
    sse = httpx2.get(live_server.url + path, headers={"Accept": "text/event-stream"}, timeout=30)
    assert sse.status_code == 405 and sse.content == b""


def test_a_foreign_origin_is_refused(live_server, alice):
    response = post(live_server.url + "/mcp", alice.key, INIT, Origin="https://evil.example")
    assert response.status_code == 403


def test_a_loopback_origin_is_allowed(live_server, alice):
    response = post(live_server.url + "/mcp", alice.key, INIT, Origin="http://localhost:6274")
    assert response.status_code == 200


def test_a_body_over_1_mib_is_413(live_server, alice):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "capsule_store", "arguments": {"title": "t", "content": "x" * (1024 * 1024)}},
    }
    response = post(live_server.url + "/pillbox/mcp", alice.key, body)
    assert response.status_code == 413


def test_malformed_json_is_a_parse_error(live_server, alice):
    response = httpx2.post(
        live_server.url + "/pillbox/mcp",
        content=b"{not json",
        headers={"Authorization": f"Bearer {alice.key}", "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


def test_an_invalid_envelope_is_invalid_request(live_server, alice):
    response = post(live_server.url + "/pillbox/mcp", alice.key, {"jsonrpc": "1.0", "id": 1, "method": 5})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600


def test_a_notification_is_accepted_with_202(live_server, alice):
    response = post(
        live_server.url + "/pillbox/mcp", alice.key, {"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    assert response.status_code == 202
    assert response.content == b""


def test_an_unknown_tool_is_a_protocol_error_not_a_tool_result(live_server, alice):
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}}
    reply = post(live_server.url + "/pillbox/mcp", alice.key, body).json()
    assert reply["error"]["code"] == -32602
    assert "no_such_tool" in reply["error"]["message"]


def test_an_unknown_method_is_method_not_found(live_server, alice):
    reply = post(live_server.url + "/pillbox/mcp", alice.key, {"jsonrpc": "2.0", "id": 4, "method": "nope/nope"}).json()
    assert reply["error"]["code"] == -32601


def test_arguments_of_the_wrong_type_never_leak_a_trace(live_server, alice):
    body = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "pill_read", "arguments": {"id": {"$gt": ""}}},
    }
    reply = post(live_server.url + "/pillbox/mcp", alice.key, body).json()
    text = reply["result"]["content"][0]["text"]
    assert reply["result"]["isError"] is True
    assert text.startswith("error: invalid_input")
    assert "Traceback" not in text


def test_tools_carry_schemas_and_annotations(live_server, alice):
    reply = post(
        live_server.url + "/pillbox/mcp", alice.key, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    ).json()
    tools = {tool["name"]: tool for tool in reply["result"]["tools"]}
    assert tools["pill_read"]["annotations"]["readOnlyHint"] is True
    assert tools["pill_discard"]["annotations"]["destructiveHint"] is True
    assert tools["prescription_close"]["annotations"]["idempotentHint"] is True
    store = tools["pill_store"]["inputSchema"]
    assert set(store["required"]) == {"prescription_id", "title", "content", "compound", "author_name", "author_email"}
    assert store["properties"]["title"]["maxLength"] == 255
    assert store["properties"]["content"]["maxLength"] == 5000
    assert store["properties"]["compound"]["maxLength"] == 64
    assert tools["bottle_create"]["inputSchema"]["properties"]["scope"]["enum"] == ["local", "global"]
    assert all(tool["description"] for tool in tools.values())


@pytest.mark.parametrize("mode", ["auto", "legacy", "2026-07-28"])
def test_the_sdk_client_connects_in_every_mode(live_server, alice, mode):
    async def scenario():
        async with http_client(live_server.url + "/pillbox/mcp", key=alice.key, mode=mode) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("bottle_list", {})
            return names, result

    names, result = run(scenario())
    assert len(names) == 25
    assert not result.is_error
    assert result.content[0].text == "No bottles registered."
