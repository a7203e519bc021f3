"""Hypothesis strategies for malformed requests at the MCP endpoints: JSON-RPC envelopes of every shape (ids,
methods, params, batches), raw bodies (truncated, deep, not JSON, not UTF-8), and the headers sent with them
(``Content-Type``, ``Accept``, ``MCP-Protocol-Version``, ``Origin``)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from tests.reliability.fuzz import HOSTILE_STRINGS, hostile, json_values

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "1999-01-01", "", "latest", "\x00"]
CONTENT_TYPES = [
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "text/plain",
    "",
    "application/json-seq",
    "multipart/form-data; boundary=x",
    "application/x-www-form-urlencoded",
]
ACCEPTS = [
    "application/json, text/event-stream",
    "application/json",
    "*/*",
    "text/html",
    "",
    "text/event-stream",
    "application/*;q=0",
]
ORIGINS = [
    None,
    "http://127.0.0.1:8000",
    "http://localhost",
    "https://evil.example",
    "null",
    "http://[::1]",
    "file://",
    "http://127.0.0.1.evil.example",
    "://",
    "\x00",
]
METHODS = [
    "tools/call",
    "tools/list",
    "initialize",
    "ping",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "notifications/initialized",
    "notifications/cancelled",
    "completion/complete",
    "logging/setLevel",
    "",
    "rpc.discover",
    "tools/call/../list",
    "\x00",
    "x" * 10_000,
]
identifiers = st.one_of(
    st.integers(),
    st.text(max_size=20),
    st.none(),
    st.floats(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from([2**70, -(2**70), "", "\x00"]),
)
envelope = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.one_of(st.just("2.0"), st.just("2.0"), st.sampled_from(["1.0", "2", 2.0, None, ""])),
        "id": identifiers,
        "method": st.one_of(st.sampled_from(METHODS), st.text(max_size=30), json_values),
        "params": st.one_of(
            json_values,
            st.fixed_dictionaries(
                {},
                optional={
                    "name": st.one_of(
                        st.sampled_from(["pill_read", "put_todo", "start_workspace", "nope", ""]), json_values
                    ),
                    "arguments": st.one_of(json_values, hostile),
                    "protocolVersion": st.sampled_from(VERSIONS),
                    "capabilities": json_values,
                    "clientInfo": json_values,
                    "_meta": json_values,
                    "cursor": json_values,
                },
            ),
        ),
        "result": json_values,
        "error": json_values,
    },
)


def _encode(value: Any) -> str:
    try:
        return json.dumps(value)
    except RecursionError:  # deeper than the test's own encoder goes: send a deep body of the same shape
        return "[" * 5000 + "]" * 5000


bodies = st.one_of(
    envelope.map(_encode),
    st.lists(envelope, max_size=4).map(_encode),
    json_values.map(_encode),
    st.binary(max_size=200),
    st.sampled_from(
        [
            b"",
            b"{",
            b"[",
            b"[]",
            b"{}",
            b"null",
            b"\xef\xbb\xbf{}",
            b"\xff\xfe{\x00}\x00",
            b'{"a":' * 100_000,
            b"[" * 100_000 + b"]" * 100_000,
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}' * 2,
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}\x00',
            b"NaN",
            b'"\\ud800"',
        ]
    ),
    st.sampled_from(HOSTILE_STRINGS[:20]).map(lambda text: text.encode("utf-8", "surrogatepass")),
)
