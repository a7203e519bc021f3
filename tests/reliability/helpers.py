"""Shared by the reliability proofs: MCP calls through the real HTTP view (Django's test client) and through the
tools' handlers in-process, a bare stdio JSON-RPC client for subprocess servers (light enough that eight of them
and their clients fit on a small CI machine), and the documented error codes (docs/errors.md)."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from django.test import Client

import pillbox.tools
import todos.tools
from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller, ToolSet
from tests.clients import ROOT

# docs/errors.md: every code a Pillbox tool may answer with; internal_error is the one a test must never see.
PILLBOX_CODES = frozenset(
    {
        "not_found",
        "prescription_required",
        "validation_error",
        "invalid_input",
        "ambiguous_id",
        "already_exists",
        "db_not_found",
        "circular_link",
        "no_bottle_in_db",
        "incompatible_db",
    }
)
MCP_PATHS = {"pillbox": "/pillbox/mcp", "todos": "/mcp"}
# The raw body of a tools/call of the tool named in place of %s, without arguments.
PING = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":{}}}'
TOOLSETS: dict[str, ToolSet] = {"pillbox": pillbox.tools.TOOLSET, "todos": todos.tools.TOOLSET}
TRACE_MARKERS = ("Traceback (most recent call last)", 'File "/', "site-packages", '.py", line ')


@dataclass(frozen=True)
class Reply:
    text: str
    is_error: bool


def rpc(client: Client, server: str, payload: Any, *, key: str | None = None, **headers: str) -> Any:
    """POST one JSON-RPC payload to an MCP endpoint; the decoded JSON answer (None for an empty body)."""
    extra = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    extra.update(headers)
    response = client.post(MCP_PATHS[server], data=json.dumps(payload), content_type="application/json", **extra)
    assert response.status_code < 500, response.content[:500]
    return json.loads(response.content) if response.content else None


def call_tool(client: Client, server: str, key: str, tool: str, arguments: Any) -> Reply:
    answer = rpc(
        client,
        server,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
        key=key,
    )
    assert "result" in answer, answer
    result = answer["result"]
    text = "".join(item.get("text", "") for item in result["content"])
    assert_no_trace(text)
    return Reply(text, bool(result.get("isError")))


def assert_no_trace(text: str) -> None:
    for marker in TRACE_MARKERS:
        assert marker not in text, text[:2000]


def pillbox_code(text: str) -> str:
    """The code of a Pillbox error text, asserting the documented layout (``error: <code>``, ``message: …``)."""
    lines = text.split("\n")
    assert len(lines) >= 2 and lines[0].startswith("error: ") and lines[1].startswith("message: "), text[:500]
    code = lines[0].removeprefix("error: ")
    assert code in PILLBOX_CODES, text[:500]
    return code


# ---------------------------------------------------------------- in-process tool calls


def run_ok(caller: Caller, server: str, tool: str, **arguments: Any) -> str:
    """A tool call a test's setup makes through the handler (run_tool): its answer, which must not be an error."""
    reply = run_tool(TOOLSETS[server], TOOLSETS[server].by_name[tool], caller, arguments)
    assert not reply.is_error, reply.text
    return reply.text


def short_id(text: str) -> str:
    """The short id of the record a tool answer shows (its ``id:`` line)."""
    match = re.search(r"^id: ([0-9a-f]{12})$", text, re.M)
    assert match, text
    return match.group(1)


# ---------------------------------------------------------------- a bare stdio client


def server_env(home: Path, **extra: str) -> dict[str, str]:
    # Without pytest-django's DJANGO_SETTINGS_MODULE: each entry point picks its own settings, as on a real machine.
    dropped = {"DATABASE_URL", "PILLBOX_ROOT", "DJANGO_SETTINGS_MODULE"}
    env = {key: value for key, value in os.environ.items() if key not in dropped}
    return {**env, "PILLBOX_HOME": str(home / ".pillbox"), "HOME": str(home), "PYTHONUNBUFFERED": "1", **extra}


class StdioServer:
    """``manage.py mcp <server>`` as a subprocess spoken to in raw JSON-RPC lines (requests may be pipelined)."""

    def __init__(self, server: str, *, home: Path, cwd: Path, user: str, stderr: Any = subprocess.DEVNULL) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "mcp", server, "--user", user],
            cwd=cwd,
            env=server_env(home),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._next = 0
        self.send(
            {
                "jsonrpc": "2.0",
                "id": self.new_id(),
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-03-26",
                    "capabilities": {},
                    "clientInfo": {"name": "reliability", "version": "1"},
                },
            }
        )
        assert "result" in self.receive()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def new_id(self) -> int:
        self._next += 1
        return self._next

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise EOFError("the server closed its output")
        return json.loads(line)

    def request_tool(self, tool: str, arguments: dict[str, Any]) -> int:
        request_id = self.new_id()
        self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        )
        return request_id

    def call(self, tool: str, arguments: dict[str, Any]) -> Reply:
        self.request_tool(tool, arguments)
        return reply_of(self.receive())

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def reply_of(message: dict[str, Any]) -> Reply:
    assert "result" in message, message
    result = message["result"]
    return Reply("".join(item.get("text", "") for item in result["content"]), bool(result.get("isError")))


# ---------------------------------------------------------------- a real web server in a subprocess


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(home: Path, *args: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=server_env(home, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def make_key(home: Path, username: str, *, staff: bool = False) -> tuple[str, str]:
    """(uid, key) from ``createkey`` (which also migrates a fresh global database); staff is set the way an
    operator would."""
    made = dict(line.split(": ", 1) for line in manage(home, "createkey", username, "--create").strip().splitlines())
    if staff:
        with sqlite3.connect(home / ".pillbox" / "pillbox.db") as db:
            db.execute("UPDATE auth_user SET is_staff = 1, is_superuser = 1 WHERE username = ?", [username])
    return made["uid"], made["key"]


@contextmanager
def web_server(home: Path, *, kind: str = "gunicorn", log: Path, **env: str) -> Iterator[str]:
    """``gunicorn config.wsgi`` (2 workers x 4 threads, as the README runs it) or ``manage.py runserver``, with
    its stderr in ``log``; yields the base URL once /healthz answers."""
    port = free_port()
    if kind == "gunicorn":
        command = [
            str(Path(sys.executable).parent / "gunicorn"),
            "config.wsgi",
            "-w",
            "2",
            "--threads",
            "4",
            "-b",
            f"127.0.0.1:{port}",
        ]
    else:
        command = [sys.executable, str(ROOT / "manage.py"), "runserver", "--noreload", f"127.0.0.1:{port}"]
    environment = server_env(
        home, DJANGO_DEBUG="false", ALLOWED_HOSTS="127.0.0.1", SITE_URL=f"http://127.0.0.1:{port}", **env
    )
    with log.open("w") as errors:
        server = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=errors, stderr=errors)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                assert server.poll() is None, log.read_text()
                try:
                    if httpx2.get(url + "/healthz", timeout=2).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                assert time.monotonic() < deadline, "the web server did not come up"
                time.sleep(0.1)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
