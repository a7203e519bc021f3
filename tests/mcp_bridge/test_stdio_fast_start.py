"""`manage.py mcp` answers the handshake from the servers' definitions before Django is set up: what it answers
is the registries' own answer byte for byte, and a setup that fails later is a tool error, not a crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import stdio_client

from config import docs
from mcp_bridge import definitions
from tests.clients import ROOT, run, stdio_params, text_of

FIRST_CALL = {"pillbox": ("bottle_list", {}), "todos": ("list_todos", {"view": "compact"})}


def handshake(server: str) -> list[dict[str, object]]:
    tool, arguments = FIRST_CALL[server]
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "prompts/list"},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
    ]


def raw_session(command: list[str], server: str, *, home: Path, cwd: Path, **env: str) -> list[str]:
    """The server's answer lines, byte for byte, to the handshake and a first call sent at once."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("DATABASE_URL", "PILLBOX_ROOT", "DJANGO_SETTINGS_MODULE")}
    environment.update(PILLBOX_HOME=str(home), HOME=str(home), PILLBOX_USER="alice", **env)
    process = subprocess.Popen(command, cwd=cwd, env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"".join(json.dumps(message).encode() + b"\n" for message in handshake(server)))
    process.stdin.flush()
    lines = []
    try:
        for line in process.stdout:  # the input stays open until the last answer: closing it cancels a call
            lines.append(line.decode())
            if json.loads(line).get("id") == 4:
                break
    finally:
        process.stdin.close()
        process.wait(timeout=60)
    return lines


def test_the_handshake_needs_neither_the_apps_nor_the_orm():
    """What manage.py imports before it answers: the bridge and the SDK; the apps come with the first call."""
    done = subprocess.run([sys.executable, "-c", "import sys, mcp_bridge.stdio; print(*sorted(sys.modules))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    # accounts.caller (who is calling: two dataclasses, no Django) is the one piece of an app the bridge names.
    allowed = {"accounts", "accounts.caller"}
    early = [name for name in done.stdout.split() if name not in allowed
             and (name.split(".")[0] in ("accounts", "pillbox", "todos", "webui")
                  or name.startswith(("django.apps", "django.contrib", "django.db.models")))]
    assert early == []


def test_the_definitions_are_what_the_registries_render():
    assert definitions.FILE.read_text(encoding="utf-8") == docs.render_definitions(), (
        "mcp_bridge/definitions.json is stale: run `python manage.py docs --write` and commit the result")


@pytest.mark.parametrize("server", ["pillbox", "todos"])
def test_the_fast_start_answers_byte_for_byte_what_the_registry_serves(server, tmp_path):
    cwd = tmp_path / "project"
    cwd.mkdir()
    fast = raw_session([sys.executable, str(ROOT / "manage.py"), "mcp", server], server,
                       home=tmp_path / "fast", cwd=cwd)
    # Django's own command serves the tool registries themselves, from a process set up before it starts.
    registry = raw_session([sys.executable, "-m", "django", "mcp", server], server, home=tmp_path / "registry",
                           cwd=cwd, DJANGO_SETTINGS_MODULE="config.settings_stdio", PYTHONPATH=str(ROOT))
    assert [json.loads(line)["id"] for line in fast] == [1, 2, 3, 4]
    assert fast == registry
    assert len(json.loads(fast[1])["result"]["tools"]) == len(definitions.servers()[server]["tools"])


def test_a_setup_that_fails_answers_tool_errors_and_keeps_serving(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "project"
    cwd.mkdir()
    errlog_path = tmp_path / "stderr.txt"
    # Django's settings refuse this address: the handshake is answered all the same, every call says it failed.
    params = stdio_params("todos", home=home, cwd=cwd)
    assert params.env is not None
    params.env["DATABASE_URL"] = "mysql://nobody@127.0.0.1/todos"

    async def scenario() -> tuple[int, list[tuple[bool, str]]]:
        with errlog_path.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                listed = len((await client.list_tools()).tools)
                replies = [await client.call_tool("list_todos", {}), await client.call_tool("get_list_usage", {})]
                return listed, [(reply.is_error, text_of(reply)) for reply in replies]

    listed, replies = run(scenario())
    assert listed == len(definitions.servers()["todos"]["tools"])
    assert replies == [(True, "Internal error: the todo list could not be reached; try again")] * 2
    assert "DATABASE_URL scheme 'mysql' is not supported" in errlog_path.read_text()


@pytest.mark.parametrize("arguments, said", [
    (["--help"], "Serve the pillbox or todos MCP server over stdio"),
    (["calendar"], "invalid choice: 'calendar'"),
])
def test_other_arguments_reach_the_management_command(arguments, said):
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "mcp", *arguments], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert said in done.stdout + done.stderr
