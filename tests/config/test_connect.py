"""`manage.py connect` writes each client's documented format, merges without clobbering (after a backup), and
`--hooks` + `recall` start a Claude Code session with the project's memory."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from mcp import StdioServerParameters
from mcp.client import Client

from accounts.models import ApiKey
from accounts.services import apikey_authenticate, keys_revoke_all
from config.sites import write_site_record
from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller
from pillbox.tools import TOOLSET
from tests.clients import ROOT, run
from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 (a fixture)

MANAGE = str(ROOT / "manage.py")
OTHER = {"command": "npx", "args": ["-y", "some-other-server"]}


def connect(*args: str, stderr: StringIO | None = None) -> str:
    out = StringIO()
    call_command("connect", *args, stdout=out, stderr=stderr or StringIO())
    return out.getvalue()


def git(project: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=project, check=True, capture_output=True, text=True).stdout


def start_both(entries: dict, *, cwd: Path, home: Path, path: str = "/usr/bin:/bin") -> dict[str, list[str]]:
    """Start each server the way a client does from its written entry, and list its tools (SDK client, stdio)."""

    async def tools(entry: dict) -> list[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(cwd),
                                       env={"HOME": str(home), "PATH": path, **entry.get("env", {})})
        async with Client(params, mode="legacy") as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    return {name: run(tools(entries[name])) for name in ("pillbox", "todos")}


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak-*"))


def stdio_entry(server: str) -> dict:
    return {"command": sys.executable, "args": [MANAGE, "mcp", server]}


def test_claude_code_is_personal_by_default_and_the_project_stays_clean(places):
    """Local scope (what `claude mcp add --scope local` writes): the servers go into the person's ~/.claude.json
    under this project, the hook into .claude/settings.local.json, kept out of git with its backups; git status
    stays clean, and the entries as written start both servers."""
    home, project = places
    git(project, "init", "-q")
    (home / ".claude.json").write_text(json.dumps({"projects": {str(project): {"allowedTools": ["x"]},
                                                                "/elsewhere": {"mcpServers": {"other": OTHER}}},
                                                   "mcpServers": {"other": OTHER}, "keep": 1}))
    printed = connect("claude-code")
    assert f"claude mcp add --scope local pillbox -- {sys.executable} {MANAGE} mcp pillbox" in printed
    assert json.loads((home / ".claude.json").read_text())["keep"] == 1  # printing writes nothing
    assert "Wrote pillbox and todos" in connect("claude-code", "--write", "--hooks")
    connect("claude-code", "--write", "--hooks")
    written = json.loads((home / ".claude.json").read_text())
    assert written["keep"] == 1 and written["mcpServers"] == {"other": OTHER}
    assert written["projects"]["/elsewhere"] == {"mcpServers": {"other": OTHER}}
    mine = written["projects"][str(project)]
    assert mine["allowedTools"] == ["x"]
    for server in ("pillbox", "todos"):
        assert mine["mcpServers"][server] == {"type": "stdio", **stdio_entry(server)}
    # beside the person's own file, not in the project; one only: the second write changed nothing
    assert len(backups(home / ".claude.json")) == 1
    hook = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert hook["hooks"]["SessionStart"][0]["hooks"][0]["command"] == f"{sys.executable} {MANAGE} recall"
    (project / ".claude" / "settings.local.json").write_text("{}")
    connect("claude-code", "--write", "--hooks")  # a backup of the personal settings now
    assert backups(project / ".claude" / "settings.local.json")
    assert git(project, "status", "--porcelain", "--untracked-files=all") == ""

    tools = start_both(mine["mcpServers"], cwd=project, home=home)
    assert "bottle_list" in tools["pillbox"] and "search_todos" in tools["todos"]


def test_the_project_scope_writes_only_what_a_team_can_share(places):
    """--scope project: .mcp.json and .claude/settings.json name the pillbox-todos launcher, no path of this
    machine and no key; backups stay out of git; each teammate's one step is said; and the files still start both
    servers through the launcher on PATH."""
    home, project = places
    git(project, "init", "-q")
    machine = (str(home), str(ROOT), sys.executable, str(Path(sys.executable).parent))
    printed = connect("claude-code", "--scope", "project", "--hooks")
    assert not any(path in printed for path in machine), printed
    assert "claude mcp add --scope project pillbox -- pillbox-todos mcp pillbox" in printed
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": OTHER}}))
    said = connect("claude-code", "--scope", "project", "--write", "--hooks")
    connect("claude-code", "--scope", "project", "--write", "--hooks")
    assert "each teammate installs it once" in said and "pipx install" in said and "manage.py launcher" in said
    assert git(project, "status", "--porcelain", "--untracked-files=all").split("\n")[:-1] == \
        ["?? .claude/settings.json", "?? .mcp.json"]
    shared = (project / ".mcp.json").read_text() + (project / ".claude" / "settings.json").read_text()
    assert not any(path in shared for path in machine) and "Bearer" not in shared
    entries = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert entries["other"] == OTHER and entries["todos"] == {"type": "stdio", "command": "pillbox-todos",
                                                              "args": ["mcp", "todos"]}
    assert "pillbox-todos recall" in shared
    assert backups(project / ".mcp.json")  # kept, but not committed

    launcher = home / ".local" / "bin" / "pillbox-todos"
    assert launcher.is_file() and os.access(launcher, os.X_OK)
    tools = start_both(entries, cwd=project, home=home, path=f"{launcher.parent}:/usr/bin:/bin")
    assert "bottle_list" in tools["pillbox"] and "search_todos" in tools["todos"]
    with pytest.raises(CommandError, match="a project's file is everyone's"):
        connect("claude-code", "--scope", "project", "--user", "alice")


def test_the_servers_get_the_home_the_site_serves(places, monkeypatch, tmp_path):
    """`up` records the data directory it serves; a shell without PILLBOX_HOME still connects the agent to it,
    and a PILLBOX_HOME that differs is said loudly."""
    home, project = places
    site_home = tmp_path / "site-home"
    write_site_record(home, home=str(site_home), url="http://127.0.0.1:8301")
    err = StringIO()
    connect("claude-code", "--write", "--hooks", stderr=err)
    entries = json.loads((home / ".claude.json").read_text())["projects"][str(project)]["mcpServers"]
    assert entries["pillbox"]["env"] == {"PILLBOX_HOME": str(site_home)} and "serves" in err.getvalue()
    hook = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert hook["hooks"]["SessionStart"][0]["hooks"][0]["command"].startswith(f"PILLBOX_HOME={site_home} ")

    monkeypatch.setenv("PILLBOX_HOME", str(tmp_path / "another"))
    err = StringIO()
    printed = connect("cursor", stderr=err)
    assert err.getvalue().startswith("WARNING: PILLBOX_HOME here is") and str(site_home) in err.getvalue()
    assert str(tmp_path / "another") in printed  # the shell's own choice is still what is written


def test_each_client_gets_its_own_documented_format(places):
    home, project = places
    connect("cursor", "--write")  # personal by default: the user's file
    cursor = json.loads((home / ".cursor" / "mcp.json").read_text())
    assert cursor == {"mcpServers": {server: stdio_entry(server) for server in ("pillbox", "todos")}}
    connect("cursor", "--write", "--scope", "project")
    assert json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]["pillbox"] == \
        {"command": "pillbox-todos", "args": ["mcp", "pillbox"]}
    with pytest.raises(CommandError, match="--scope local is Claude Code's"):
        connect("cursor", "--scope", "local")

    connect("vscode", "--write")
    personal = json.loads((home / ".config" / "Code" / "User" / "mcp.json").read_text())
    assert personal["servers"]["todos"] == {"type": "stdio", **stdio_entry("todos")}
    vscode = project / ".vscode" / "mcp.json"
    vscode.parent.mkdir()
    vscode.write_text(json.dumps({"servers": {"other": {"type": "stdio", **OTHER}}, "inputs": []}))
    connect("vscode", "--write", "--scope", "project")
    written = json.loads(vscode.read_text())
    assert written["inputs"] == [] and written["servers"]["other"]["command"] == "npx"
    assert written["servers"]["todos"] == {"type": "stdio", "command": "pillbox-todos", "args": ["mcp", "todos"]}

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
    home, _ = places
    (home / ".claude.json").write_text("{broken")
    with pytest.raises(CommandError, match="not valid JSON"):
        connect("claude-code", "--write")
    assert (home / ".claude.json").read_text() == "{broken"


@pytest.mark.django_db(transaction=True)
def test_http_uses_the_site_and_one_key_per_file(places, settings, alice):
    """Printing makes no key; --write makes one and a later --write uses the one the file holds again (a new one
    only when that key no longer works); a project's file gets the URLs alone (each person signs in with OAuth)."""
    home, project = places
    settings.SITE_URL = "https://pillbox.example.com"
    keys = ApiKey.objects.filter(user=alice.user)
    before = keys.count()
    printed = connect("claude-code", "--http", "--user", "alice")
    assert "Bearer <API key>" in printed and keys.count() == before
    connect("claude-code", "--http", "--write", "--user", "alice")
    written = json.loads((home / ".claude.json").read_text())["projects"][str(project)]["mcpServers"]
    assert written["pillbox"]["url"] == "https://pillbox.example.com/pillbox/mcp"
    assert written["todos"]["url"] == "https://pillbox.example.com/mcp" and written["todos"]["type"] == "http"
    key = written["todos"]["headers"]["Authorization"].removeprefix("Bearer ")
    assert apikey_authenticate(raw=key) == alice.user and keys.count() == before + 1
    connect("claude-code", "--http", "--write", "--user", "alice")
    again = json.loads((home / ".claude.json").read_text())["projects"][str(project)]["mcpServers"]
    assert again == written and keys.count() == before + 1
    assert f"Bearer {key}" in connect("claude-code", "--http", "--user", "alice")
    keys_revoke_all(user=alice.user)
    connect("claude-code", "--http", "--write", "--user", "alice")
    assert keys.count() == before + 2

    connect("codex", "--http", "--write", "--user", "alice")
    toml = (home / ".codex" / "config.toml").read_text()
    assert '[mcp_servers.todos]\nurl = "https://pillbox.example.com/mcp"\nhttp_headers = { "Authorization"' in toml
    connect("codex", "--http", "--write", "--user", "alice")
    assert keys.count() == before + 3  # codex's file keeps its own key, used again too
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        connect("cursor", "--http", "--write", "--user", "nobody")

    said = connect("claude-code", "--http", "--write", "--scope", "project")
    assert "signs in with OAuth" in said
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["todos"] == \
        {"type": "http", "url": "https://pillbox.example.com/mcp"}


def test_a_written_key_is_private_and_never_in_the_project(places, alice, settings):
    """An HTTP entry carries a bearer key: it goes only into the person's own file, which (with its backup) becomes
    0600; the project's shared file gets the URL alone, and git sees nothing else."""
    home, project = places
    git(project, "init", "-q")
    settings.SITE_URL = "https://pillbox.example.com"
    (home / ".cursor").mkdir(parents=True)
    (home / ".cursor" / "mcp.json").write_text('{"mcpServers": {"other": {"command": "x"}}}')
    said = connect("cursor", "--http", "--write", "--user", "alice")
    assert "holds an API key" in said and "readable by you only" in said
    [saved] = backups(home / ".cursor" / "mcp.json")
    for path in (home / ".cursor" / "mcp.json", saved):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    connect("claude-code", "--http", "--write", "--user", "alice")
    connect("cursor", "--http", "--write", "--scope", "project")
    assert "Bearer" not in (project / ".cursor" / "mcp.json").read_text()
    assert git(project, "status", "--porcelain", "--untracked-files=all") == "?? .cursor/mcp.json\n"
    # A stdio entry holds no secret: its file is left as the person has it.
    connect("codex", "--write", "--user", "alice")
    assert stat.S_IMODE((home / ".codex" / "config.toml").stat().st_mode) != 0o600


@pytest.mark.django_db(transaction=True)
def test_hooks_install_recall_and_recall_prints_the_memory(places, alice, local_bottles_over_http, monkeypatch):
    home, project = places
    settings_file = project / ".claude" / "settings.local.json"
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


def test_the_launcher_is_each_persons_own(places, monkeypatch, tmp_path):
    """`manage.py launcher` writes ~/.local/bin/pillbox-todos running this checkout with this interpreter and the
    person's data directory; a second run changes nothing."""
    home, _ = places
    monkeypatch.setenv("PILLBOX_HOME", str(tmp_path / "my data"))
    out = StringIO()
    call_command("launcher", stdout=out, stderr=StringIO())
    launcher = home / ".local" / "bin" / "pillbox-todos"
    assert out.getvalue().startswith(f"Wrote {launcher}") and os.access(launcher, os.X_OK)
    text = launcher.read_text()
    assert f"export PILLBOX_HOME='{tmp_path / 'my data'}'" in text and f"exec {sys.executable} {MANAGE} \"$@\"" in text
    again = StringIO()
    call_command("launcher", stdout=again, stderr=StringIO())
    assert again.getvalue().startswith("Already there:") and launcher.read_text() == text
    # It runs this checkout's recall with that data directory (which does not exist yet, and is not made).
    shown = subprocess.run([str(launcher), "recall"], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert shown.stdout.startswith(f"Pillbox: no data directory at {tmp_path / 'my data'} ")
    assert not (tmp_path / "my data").exists()
