"""Hostile input: whatever an agent sends, every tool answers with its documented errors, never an internal error
and never a trace. Pillbox errors are ``error: <code>`` with a code of docs/errors.md other than
``internal_error``; Todos errors are one plain sentence. Unknown arguments are refused by both.

The bulk calls the tool handlers in-process (thousands of cases a minute); a smaller share goes through the real
HTTP endpoint, where malformed JSON-RPC envelopes and headers are thrown at it too (never a 500).

    HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/reliability/test_hostile_input.py   # >10,000 cases
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from hypothesis import assume, given
from hypothesis import strategies as st

from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller, Tool, ToolFailure, ToolReply
from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 - a fixture
from tests.reliability.fuzz import LONG, PER_TOOL, arguments_for, fuzz_settings, hostile
from tests.reliability.fuzz_protocol import ACCEPTS, CONTENT_TYPES, ORIGINS, VERSIONS, bodies
from tests.reliability.helpers import MCP_PATHS, TOOLSETS, assert_no_trace, pillbox_code, run_ok, short_id

ALL_TOOLS = [(server, tool) for server, toolset in TOOLSETS.items() for tool in toolset.tools]
AUTHOR = {"author_name": "Ada", "author_email": "ada@example.com"}


@dataclass
class Playground:
    remote: Caller  # over HTTP: no working directory, the global database
    local: Caller  # over stdio, in a project with a local bottle
    key: str
    ids: list[str]  # real records' ids in every form an agent may write them



@pytest.fixture
def playground(alice, tmp_path, monkeypatch, local_bottles_over_http) -> Playground:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # `~` in a fuzzed directory must never reach the real home
    project = home / "project"
    project.mkdir()
    remote = Caller(user=alice.user, transport="http")
    local = Caller(user=alice.user, transport="stdio", workdir=project)

    shorts: list[str] = []
    for caller, scope in ((remote, "global"), (local, "local")):
        bottle = short_id(run_ok(caller, "pillbox", "bottle_create", name=f"fuzz-{scope}", display_name="Fuzz",
                                 scope=scope))
        rx = short_id(run_ok(caller, "pillbox", "prescription_open", bottle_id=bottle, title="Fuzzing", **AUTHOR))
        closed = short_id(run_ok(caller, "pillbox", "prescription_open", bottle_id=bottle, title="Closed", **AUTHOR))
        pill = short_id(run_ok(caller, "pillbox", "pill_store", prescription_id=rx, title="A pill",
                               content="auth tokens", compound="decision", **AUTHOR))
        run_ok(caller, "pillbox", "prescription_close", id=closed)
        shorts += [bottle, rx, closed, pill]
    shorts.append(short_id(run_ok(remote, "pillbox", "capsule_store", title="A capsule", content="x",
                                  compound="convention")))
    for key in ("fuzz-todo", "other-todo"):
        run_ok(remote, "todos", "put_todo", id=key, name="Fuzz the tools", description="auth")
    ids = [
        *shorts,
        *(short[:8] for short in shorts),
        *(short.upper() for short in shorts),
        *(str(uuid.UUID(short.ljust(32, "0")))[:23] for short in shorts),
        "fuzz-todo",
        "other-todo",
    ]
    return Playground(remote, local, alice.key, ids)


def check_answer(server: str, text: str, is_error: bool) -> None:
    assert_no_trace(text)
    if not is_error:
        return
    if server == "pillbox":
        pillbox_code(text)  # the documented layout, and a code other than internal_error
    else:
        assert text.strip(), "an empty error"
        assert text != TOOLSETS["todos"].internal_error_text and not text.startswith("error:"), text[:500]


def call_in_process(server: str, tool: Tool, caller: Caller, arguments: Any) -> None:
    """Any exception other than ToolFailure escapes and fails the test: it would be an internal error.

    Both servers refuse an argument their schema does not list (a misspelt one silently dropped would change
    the call's meaning), naming it."""
    unknown = [name for name in arguments if name not in tool.input_schema.get("properties", {})] \
        if isinstance(arguments, dict) else []
    try:
        reply = tool.handler(caller, arguments)
    except ToolFailure as failure:
        check_answer(server, failure.text, True)
        return
    if isinstance(reply, ToolReply):
        check_answer(server, reply.text, reply.is_error)
        assert reply.is_error or not unknown, (unknown, reply.text[:300])
    else:
        check_answer(server, str(reply), False)
        assert not unknown, (unknown, str(reply)[:300])


@pytest.mark.parametrize(("server", "tool"), ALL_TOOLS, ids=[f"{server}.{tool.name}" for server, tool in ALL_TOOLS])
def test_tool_answers_hostile_input_in_the_spec_words(playground, server, tool):
    @fuzz_settings(PER_TOOL)
    @given(arguments=arguments_for(tool.input_schema, playground.ids), over_stdio=st.booleans())
    def check(arguments: dict[str, Any], over_stdio: bool) -> None:
        call_in_process(server, tool, playground.local if over_stdio else playground.remote, arguments)

    check()


# ---------------------------------------------------------------- through the HTTP endpoint


def post(client: Client, server: str, body: bytes | str, **headers: str) -> Any:
    """POST raw bytes; assert the endpoint answered like a protocol endpoint (no 5xx, no trace, JSON or empty)."""
    response = client.generic("POST", MCP_PATHS[server], body, **headers)
    content = response.content.decode("utf-8", "replace")
    assert response.status_code < 500, (response.status_code, content[:1000])
    assert_no_trace(content)
    if not content:
        assert response.status_code in (202, 405), response.status_code
        return None
    answer = json.loads(content)
    for message in answer if isinstance(answer, list) else [answer]:
        if isinstance(message, dict) and "error" in message and isinstance(message["error"], dict):
            assert message["error"].get("code") != -32603, message  # JSON-RPC internal error
    return answer


def _arguments(server: str) -> st.SearchStrategy[tuple[str, Any]]:
    tools = TOOLSETS[server].tools
    return st.sampled_from(tools).flatmap(
        lambda tool: st.tuples(
            st.just(tool.name), st.one_of(arguments_for(tool.input_schema), arguments_for(tool.input_schema), hostile)
        )
    )


@pytest.mark.parametrize("server", ["pillbox", "todos"])
def test_http_endpoint_answers_hostile_tool_input(playground, server, settings):
    settings.MCP_USER_RATE_LIMIT = (0, 60)  # the long profile sends one user's thousands of calls in a minute
    client = Client()

    @fuzz_settings(PER_TOOL * 4)
    @given(call=_arguments(server))
    def check(call: tuple[str, Any]) -> None:
        name, arguments = call
        payload = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        try:
            body = json.dumps(payload)
        except RecursionError:  # too deep for the test's own encoder; raw deep bodies are sent below
            assume(False)
        answer = post(
            client, server, body, CONTENT_TYPE="application/json", HTTP_AUTHORIZATION=f"Bearer {playground.key}"
        )
        if len(body.encode("utf-8", "surrogatepass")) > 1024 * 1024:
            return  # refused with 413 before anything was read
        if "result" in answer:
            result = answer["result"]
            check_answer(server, "".join(item.get("text", "") for item in result["content"]), result["isError"])
        else:
            assert answer["error"]["code"] in (-32602, -32600), answer  # invalid params (not an object)

    check()




@pytest.mark.parametrize("server", ["pillbox", "todos"])
def test_http_endpoint_survives_malformed_envelopes_and_headers(playground, server):
    client = Client()

    @fuzz_settings(PER_TOOL * 8)
    @given(
        body=bodies,
        content_type=st.sampled_from(CONTENT_TYPES),
        accept=st.sampled_from(ACCEPTS),
        version=st.one_of(st.none(), st.sampled_from(VERSIONS)),
        origin=st.sampled_from(ORIGINS),
        authorization=st.sampled_from(
            [
                "good",
                "good",
                "good",
                "none",
                "Bearer ",
                "Bearer pbx_wrong",
                "Basic eA==",
                "Bearer " + "x" * 5000,
                "bearer\x00x",
            ]
        ),
    )
    def check(
        body: str | bytes, content_type: str, accept: str, version: str | None, origin: str | None, authorization: str
    ) -> None:
        headers = {"CONTENT_TYPE": content_type, "HTTP_ACCEPT": accept}
        if version is not None:
            headers["HTTP_MCP_PROTOCOL_VERSION"] = version
        if origin is not None:
            headers["HTTP_ORIGIN"] = origin
        if authorization == "good":
            headers["HTTP_AUTHORIZATION"] = f"Bearer {playground.key}"
        elif authorization != "none":
            headers["HTTP_AUTHORIZATION"] = authorization
        raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        post(client, server, raw, **headers)

    check()


@pytest.mark.parametrize(
    "directory",
    ["~nosuchuser-pillbox", "~nosuchuser-pillbox/project", "/tmp/" + "n" * 300, "x" * 255 + "/" + "y" * 300],
)
def test_vinculate_of_an_unreadable_directory_is_db_not_found(playground, directory):
    """Found by the long run: `~unknown-user` (RuntimeError) and names longer than the file system allows
    (OSError ENAMETOOLONG) were internal errors."""
    tool = TOOLSETS["pillbox"].by_name["bottle_vinculate"]
    with pytest.raises(ToolFailure) as failure:
        tool.handler(playground.local, {"directory": directory})
    assert pillbox_code(failure.value.text) == "db_not_found"


def test_long_profile_is_over_ten_thousand_cases():
    """The documented long run really is one: 31 tools x 350 in-process cases, plus the HTTP share."""
    if LONG:
        assert PER_TOOL * len(ALL_TOOLS) >= 10_000
    else:
        assert 350 * len(ALL_TOOLS) >= 10_000


def test_a_handler_crash_is_an_internal_error_without_a_trace(playground):
    """The net under everything: an exception a handler did not expect becomes the toolset's internal error text,
    with no trace (run_tool), over HTTP too."""

    def explode(caller: Caller, arguments: dict[str, Any]) -> str:
        raise RuntimeError("secret internals at /srv/app.py line 3")

    for toolset in TOOLSETS.values():
        tool = Tool(name="explode", description="", input_schema={"type": "object"}, handler=explode)
        reply = run_tool(toolset, tool, playground.remote, {})
        assert reply.is_error and reply.text == toolset.internal_error_text
        assert "secret internals" not in reply.text


def test_the_playground_paths_stay_inside_the_test(playground, tmp_path):
    """`~` and relative traversal in bottle_vinculate resolve against the test's own home and project."""
    assert Path.home() == tmp_path / "home"
