"""`manage.py connect` writes each client's documented format, merges without clobbering (after a backup), and
`--hooks` + `recall` start a Claude Code session with the project's memory."""

from __future__ import annotations

import json
import stat
import sys
import tomllib
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from mcp import StdioServerParameters
from mcp.client import Client

from accounts.services import apikey_authenticate
from config.mcp.server import run_tool
from config.mcp.tools import Caller
from pillbox.tools import TOOLSET
from tests.clients import ROOT, run
from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 (a fixture)

MANAGE = str(ROOT / "manage.py")
OTHER = {"command": "npx", "args": ["-y", "some-other-server"]}


@pytest.fixture
def places(tmp_path, monkeypatch) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "home" / "code" / "proj"
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PILLBOX_HOME", raising=False)
    monkeypatch.chdir(project)
    return home, project


def connect(*args: str) -> str:
    out = StringIO()
    call_command("connect", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak-*"))


def stdio_entry(server: str) -> dict:
    return {"command": sys.executable, "args": [MANAGE, "mcp", server]}


def test_claude_code_project_file_is_merged_after_a_backup_and_really_starts_the_servers(places):
    home, project = places
    config = project / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"other": OTHER}, "keep": 1}))
    printed = connect("claude-code")
    assert json.loads(config.read_text())["mcpServers"] == {"other": OTHER}  # printing writes nothing
    assert f"claude mcp add --scope project pillbox -- {sys.executable} {MANAGE} mcp pillbox" in printed

    assert "Wrote pillbox and todos" in connect("claude-code", "--write")
    written = json.loads(config.read_text())
    assert written["keep"] == 1 and written["mcpServers"]["other"] == OTHER
    for server in ("pillbox", "todos"):
        assert written["mcpServers"][server] == {"type": "stdio", **stdio_entry(server)}
    [saved] = backups(config)
    assert json.loads(saved.read_text()) == {"mcpServers": {"other": OTHER}, "keep": 1}
    connect("claude-code", "--write")
    assert json.loads(config.read_text()) == written and len(backups(config)) == 2

    # The entry as written is enough for a client to start the server and list its tools.
    entry = written["mcpServers"]["pillbox"]

    async def tools() -> list[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(project),
                                       env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
        async with Client(params, mode="legacy") as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert "bottle_list" in run(tools())


def test_each_client_gets_its_own_documented_format(places):
    home, project = places
    connect("cursor", "--write", "--scope", "user")
    cursor = json.loads((home / ".cursor" / "mcp.json").read_text())
    assert cursor == {"mcpServers": {server: stdio_entry(server) for server in ("pillbox", "todos")}}

    vscode = project / ".vscode" / "mcp.json"
    vscode.parent.mkdir()
    vscode.write_text(json.dumps({"servers": {"other": {"type": "stdio", **OTHER}}, "inputs": []}))
    connect("vscode", "--write")
    written = json.loads(vscode.read_text())
    assert written["inputs"] == [] and written["servers"]["other"]["command"] == "npx"
    assert written["servers"]["todos"] == {"type": "stdio", **stdio_entry("todos")}

    connect("claude-desktop", "--write")
    desktop = json.loads((home / ".config" / "Claude" / "claude_desktop_config.json").read_text())
    assert desktop == {"mcpServers": {server: stdio_entry(server) for server in ("pillbox", "todos")}}
    with pytest.raises(CommandError, match="Connectors"):
        connect("claude-desktop", "--http")
    with pytest.raises(CommandError, match="no per-project"):
        connect("claude-desktop", "--scope", "project")


def test_codex_tables_are_replaced_and_everything_else_kept(places):
    home, _ = places
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    original = ('model = "o4-mini"  # my choice\n\n[mcp_servers.other]\ncommand = "npx"\nargs = ["-y", "x"]\n\n'
                '[mcp_servers.pillbox]\ncommand = "/old/python"\nargs = ["old"]\n\n[mcp_servers.pillbox.env]\n'
                'A = "1"\n\n[profiles.fast]\nmodel = "o3"\n')
    config.write_text(original)
    connect("codex", "--write")
    text = config.read_text()
    parsed = tomllib.loads(text)
    assert "# my choice" in text and parsed["model"] == "o4-mini" and parsed["profiles"]["fast"]["model"] == "o3"
    assert parsed["mcp_servers"]["other"] == {"command": "npx", "args": ["-y", "x"]}
    for server in ("pillbox", "todos"):
        assert parsed["mcp_servers"][server] == stdio_entry(server)
    assert backups(config)[0].read_text() == original

    config.write_text("not = [valid")
    with pytest.raises(CommandError, match="not valid TOML"):
        connect("codex", "--write")
    assert config.read_text() == "not = [valid"


def test_a_broken_json_file_is_left_alone(places):
    _, project = places
    (project / ".mcp.json").write_text("{broken")
    with pytest.raises(CommandError, match="not valid JSON"):
        connect("claude-code", "--write")
    assert (project / ".mcp.json").read_text() == "{broken"


@pytest.mark.django_db(transaction=True)
def test_http_uses_the_site_and_a_fresh_key(places, settings, alice):
    _, project = places
    settings.SITE_URL = "https://pillbox.example.com"
    connect("claude-code", "--http", "--write", "--user", "alice")
    written = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert written["pillbox"]["url"] == "https://pillbox.example.com/pillbox/mcp"
    assert written["todos"]["url"] == "https://pillbox.example.com/mcp" and written["todos"]["type"] == "http"
    key = written["todos"]["headers"]["Authorization"].removeprefix("Bearer ")
    assert apikey_authenticate(raw=key) == alice.user
    toml = connect("codex", "--http", "--user", "alice")
    assert '[mcp_servers.todos]\nurl = "https://pillbox.example.com/mcp"\nhttp_headers = { "Authorization"' in toml
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        connect("cursor", "--http", "--user", "nobody")


def test_a_written_key_is_private_and_kept_out_of_the_projects_commits(places, alice):
    """An HTTP entry carries a bearer key: the file (and its backup) become 0600, and in a git project both go
    into .git/info/exclude, so the key is neither read by other accounts nor committed by accident."""
    _, project = places
    (project / ".git" / "info").mkdir(parents=True)
    (project / ".mcp.json").write_text('{"mcpServers": {"other": {"command": "x"}}}')
    said = connect("claude-code", "--http", "--write", "--user", "alice")
    assert "holds an API key" in said and "out of git" in said
    backups = list(project.glob(".mcp.json.bak-*"))
    assert len(backups) == 1
    for path in (project / ".mcp.json", backups[0]):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    excluded = (project / ".git" / "info" / "exclude").read_text().splitlines()
    assert "/.mcp.json" in excluded and "/.mcp.json.bak-*" in excluded
    connect("claude-code", "--http", "--write", "--user", "alice")  # a second time adds no line
    assert (project / ".git" / "info" / "exclude").read_text().splitlines() == excluded
    # A stdio entry holds no secret: its file is left as the person has it.
    (project / ".cursor").mkdir()
    connect("cursor", "--write", "--user", "alice")
    assert "holds an API key" not in connect("cursor", "--write", "--user", "alice")
    assert "/.cursor/mcp.json" not in (project / ".git" / "info" / "exclude").read_text()


@pytest.mark.django_db(transaction=True)
def test_hooks_install_recall_and_recall_prints_the_memory(places, alice, local_bottles_over_http, monkeypatch):
    home, project = places
    settings_file = project / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    mine = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}, "model": "x"}
    settings_file.write_text(json.dumps(mine))
    connect("claude-code", "--write", "--hooks", "--user", "alice")
    written = json.loads(settings_file.read_text())
    command = f"{sys.executable} {MANAGE} recall --user alice"
    assert written["model"] == "x" and written["hooks"]["SessionStart"][0] == mine["hooks"]["SessionStart"][0]
    assert written["hooks"]["SessionStart"][1] == {"matcher": "startup|clear|compact",
                                                   "hooks": [{"type": "command", "command": command}]}
    assert "already" in connect("claude-code", "--write", "--hooks", "--user", "alice")
    assert json.loads(settings_file.read_text()) == written
    with pytest.raises(CommandError, match="--hooks is for claude-code"):
        connect("cursor", "--hooks")
    monkeypatch.setenv("PILLBOX_HOME", "/data/pill box")  # the hook reads the same data as the servers
    assert f"\"PILLBOX_HOME='/data/pill box' {command}\"" in connect("claude-code", "--hooks", "--user", "alice")
    monkeypatch.delenv("PILLBOX_HOME")

    def recall(*args: str) -> str:
        out = StringIO()
        call_command("recall", "--user", "alice", *args, stdout=out)
        return out.getvalue().rstrip("\n")

    assert recall().startswith("Pillbox: no bottle for this directory yet.")
    caller = Caller(user=alice.user, transport="stdio", workdir=project)

    def tool(tool_name: str, /, **arguments: object) -> str:
        reply = run_tool(TOOLSET, TOOLSET.by_name[tool_name], caller, arguments)
        assert not reply.is_error, reply.text
        return reply.text

    tool("bottle_create", name="proj", display_name="Proj")
    author = {"author_name": "Ada", "author_email": "ada@example.com"}
    older = tool("prescription_open", bottle_id="proj", title="Older session", **author).split("\n")[0][4:]
    latest = tool("prescription_open", bottle_id="proj", title="Latest session", **author).split("\n")[0][4:]
    for n in range(30):
        tool("pill_store", prescription_id=latest, title=f"Finding {n}", content="word " * 100, compound="note",
             **author)
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")  # a session started in a sub-folder gets the project's memory
    memory = recall()
    assert memory.startswith("Pillbox memory of this directory: bottle proj")
    assert tool("bottle_context", bottle_id="proj") in memory and older in memory
    assert f"prescription {latest} [open] Latest session\n  id: " in memory
    assert len(memory) <= 6000 and memory.endswith("(pill_search finds them; prescription_context <id> lists one "
                                                   "session's).")
    assert len(recall("--budget", "1500")) <= 1500
