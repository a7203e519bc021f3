"""The configuration each MCP client needs to reach this checkout's servers, and merging it into their files.

Every client keeps a map of named servers in its own format: Claude Code (``.mcp.json``, or ``~/.claude.json``
at the top for every project or under ``projects[<project>]`` for one), Claude Desktop
(``claude_desktop_config.json``) and Cursor (``mcp.json``) under ``mcpServers``; VS Code (``mcp.json``) under
``servers`` with an explicit ``type``; Codex (``config.toml``) as ``[mcp_servers.NAME]`` tables. Merging
replaces only our own entries (``pillbox``, ``todos``) and keeps everything else in the file.

Personal and shared: what names this machine (the command that runs this copy, a data directory, a key) goes
into the person's own files (``local``/``user`` scope); a project's file, meant to be committed, names only the
``pillbox-todos`` command found on ``PATH``, which each person installs once (the package, or the launcher of
their own checkout).
"""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import shutil
import stat
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from base.files import UnsafeFile, checked_target, followed_into, read_regular, write_atomically
from base.gitexclude import exclude_from_git
from config import installed

CLIENTS = ("claude-code", "claude-desktop", "cursor", "codex", "vscode")
SERVERS = ("pillbox", "todos")
HTTP_PATHS = {"todos": "/mcp", "pillbox": "/pillbox/mcp"}
Scope = Literal["local", "user", "project"]
SCOPES = ("local", "user", "project")
LAUNCHER = installed.COMMAND  # the command a project's shared file names; each person's own, on PATH
# SessionStart sources after which the conversation holds no memory yet (a resumed one still has it).
HOOK_MATCHER = "startup|clear|compact"


class ConnectError(Exception):
    """A configuration that cannot be made or merged; the message says why and what to do."""


@dataclass(frozen=True)
class Server:
    """One server as the clients see it: a command to launch (stdio) or a URL with a bearer key (HTTP)."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str = ""
    key: str = ""

    @property
    def is_http(self) -> bool:
        return bool(self.url)


def stdio_servers(user: str | None = None, home: str | None = None, *, portable: bool = False) -> list[Server]:
    """The command that runs this copy (installed.command(): the console script, uvx, or a checkout's Python and
    manage.py), so the client may start them from anywhere (with ``home`` as PILLBOX_HOME); ``portable``: the
    ``pillbox-todos`` on PATH instead, naming nothing of this machine."""
    if portable:
        return [Server(name, LAUNCHER, ("mcp", name)) for name in SERVERS]
    extra = ["--user", user] if user else []
    env = (("PILLBOX_HOME", home),) if home else ()
    program, *words = installed.command()
    return [Server(name, program, (*words, "mcp", name, *extra), env) for name in SERVERS]


def http_servers(site_url: str, key: str) -> list[Server]:
    return [Server(name, url=site_url.rstrip("/") + HTTP_PATHS[name], key=key) for name in SERVERS]


# ---------------------------------------------------------------- where each client keeps its servers


def _desktop_file(home: Path) -> Path:
    system = platform.system()
    if system == "Darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if system == "Windows":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming") / "Claude" / "claude_desktop_config.json"
    return home / ".config" / "Claude" / "claude_desktop_config.json"


def _vscode_user_file(home: Path) -> Path:
    system = platform.system()
    if system == "Darwin":
        return home / "Library" / "Application Support" / "Code" / "User" / "mcp.json"
    if system == "Windows":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming") / "Code" / "User" / "mcp.json"
    return home / ".config" / "Code" / "User" / "mcp.json"


def config_file(client: str, scope: Scope, *, home: Path, project: Path) -> Path:
    if client == "claude-code":
        return project / ".mcp.json" if scope == "project" else home / ".claude.json"
    if scope == "local" and client in CLIENTS:
        raise ConnectError(f"--scope local is Claude Code's; {client}'s personal file is --scope user (its default).")
    if client == "claude-desktop":
        if scope == "project":
            raise ConnectError("Claude Desktop has no per-project configuration; use --scope user.")
        return _desktop_file(home)
    if client == "cursor":
        return (project if scope == "project" else home) / ".cursor" / "mcp.json"
    if client == "vscode":
        return project / ".vscode" / "mcp.json" if scope == "project" else _vscode_user_file(home)
    if client == "codex":
        return (project if scope == "project" else home) / ".codex" / "config.toml"
    raise ConnectError(f"Unknown client {client}; choose one of {', '.join(CLIENTS)}.")


def default_scope(client: str) -> Scope:
    """Personal by default: Claude Code's local scope (this project, this person), the user's file elsewhere."""
    return "local" if client == "claude-code" else "user"


def servers_key(client: str, scope: Scope, project: Path) -> tuple[str, ...]:
    """Where the map of servers is in the client's JSON file."""
    if client == "vscode":
        return ("servers",)
    if client == "claude-code" and scope == "local":  # what `claude mcp add --scope local` writes
        return ("projects", str(project), "mcpServers")
    return ("mcpServers",)


# ---------------------------------------------------------------- one entry per client format


def json_entry(client: str, server: Server) -> dict[str, Any]:
    if server.is_http:
        if client == "claude-desktop":
            raise ConnectError(
                "Claude Desktop adds remote servers as connectors, not in its file: Settings → Connectors → Add "
                f"custom connector, URL {server.url} (it signs in with OAuth). Without --http it runs them locally."
            )
        entry: dict[str, Any] = {"url": server.url}
        if server.key:  # without one (a shared file) the client signs in with OAuth
            entry["headers"] = {"Authorization": f"Bearer {server.key}"}
        return {"type": "http", **entry} if client in ("claude-code", "vscode") else entry
    entry = {"command": server.command, "args": list(server.args)}
    if server.env:
        entry["env"] = dict(server.env)
    return {"type": "stdio", **entry} if client in ("claude-code", "vscode") else entry


def json_entries(client: str, servers: list[Server]) -> dict[str, Any]:
    return {server.name: json_entry(client, server) for server in servers}


def json_document(keys: tuple[str, ...], entries: dict[str, Any]) -> dict[str, Any]:
    document: dict[str, Any] = entries
    for key in reversed(keys):
        document = {key: document}
    return document


def _toml_string(value: str) -> str:
    return json.dumps(value)  # JSON's escapes are TOML basic-string escapes


def _toml_inline(values: dict[str, str]) -> str:
    return "{ " + ", ".join(f"{_toml_string(k)} = {_toml_string(v)}" for k, v in values.items()) + " }"


def toml_tables(servers: list[Server]) -> str:
    blocks = []
    for server in servers:
        lines = [f"[mcp_servers.{server.name}]"]
        if server.is_http:
            lines.append(f"url = {_toml_string(server.url)}")
            if server.key:
                lines.append(f"http_headers = {_toml_inline({'Authorization': f'Bearer {server.key}'})}")
        else:
            lines += [f"command = {_toml_string(server.command)}",
                      "args = [" + ", ".join(_toml_string(arg) for arg in server.args) + "]"]
            if server.env:
                lines.append(f"env = {_toml_inline(dict(server.env))}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def claude_code_commands(servers: list[Server], scope: Scope) -> list[str]:
    """The `claude mcp add` lines doing the same as the file (quoted for a POSIX shell)."""
    import shlex

    commands = []
    for server in servers:
        if server.is_http:
            header = ["--header", f"Authorization: Bearer {server.key}"] if server.key else []
            commands.append(shlex.join(["claude", "mcp", "add", "--scope", scope, "--transport", "http", server.name,
                                        server.url, *header]))
        else:
            env = [part for name, value in server.env for part in ("--env", f"{name}={value}")]
            commands.append(shlex.join(["claude", "mcp", "add", "--scope", scope, *env, server.name, "--",
                                        server.command, *server.args]))
    return commands


# ---------------------------------------------------------------- merging into an existing file


BACKUPS_KEPT = 3  # the last few versions of a file we changed; older backups of it are removed
_BACKUP_STAMP = re.compile(r"\.bak-\d{8}T\d{12}Z$")


def safe_place(path: Path, *, home: Path, project: Path) -> tuple[Path, str]:
    """Where to read and write a client's file, refusing links a repository could have planted: inside the
    project no link at all (a clone is someone else's tree); in the person's home a link is followed only when it
    leads somewhere else in that home (dotfiles), and the sentence returned says so."""
    try:
        if path.is_relative_to(project):
            return checked_target(path, root=project), ""
        if path.is_relative_to(home):
            return followed_into(path, root=home)
        return checked_target(path, root=path.parent), ""
    except UnsafeFile as exc:
        raise ConnectError(str(exc)) from None


def backup(path: Path, project: Path, content: bytes) -> Path:
    """Keep ``content`` (what ``path`` held before we change it) beside it, readable by its owner only, and the
    last few such copies only; a copy in the project is kept out of its commits (.git/info/exclude)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    copy = path.with_name(f"{path.name}.bak-{stamp}")
    write_atomically(copy, content, mode=0o600)
    older = sorted(candidate for candidate in path.parent.glob(glob.escape(path.name) + ".bak-*")
                   if _BACKUP_STAMP.search(candidate.name))
    for stale in older[:-BACKUPS_KEPT]:
        stale.unlink(missing_ok=True)
    if path.is_relative_to(project):
        exclude_from_git(project, str(path.relative_to(project)) + ".bak-*")
    return copy


@dataclass(frozen=True)
class Written:
    """What a merge did: whether the file changed, and where its previous content was kept."""

    changed: bool
    saved: Path | None = None


def _read_text(path: Path) -> str:
    try:
        content = read_regular(path)
    except UnsafeFile as exc:
        raise ConnectError(str(exc)) from None
    return "" if content is None else content.decode("utf-8", errors="replace")


def _read_json(path: Path) -> dict[str, Any]:
    text = _read_text(path)
    if not text.strip():
        return {}
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConnectError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); fix it or move it away, "
                           "then run this again. Nothing was changed.") from None
    if not isinstance(document, dict):
        raise ConnectError(f"{path} does not hold a JSON object; nothing was changed.")
    return document


def write_file(path: Path, text: str, *, mode: int | None = None) -> None:
    try:
        write_atomically(path, text, mode=mode)
    except UnsafeFile as exc:
        raise ConnectError(str(exc)) from None


def replace_text(path: Path, text: str, *, project: Path, mode: int | None = None) -> Written:
    """Write ``text`` to ``path`` after a backup of what was there; nothing at all (no backup either) when the file
    already holds exactly that."""
    try:
        current = read_regular(path)
        if current == text.encode():
            if mode is not None and stat.S_IMODE(path.lstat().st_mode) != mode:
                write_atomically(path, text, mode=mode)
            return Written(changed=False)
        saved = backup(path, project, current) if current is not None else None
        write_atomically(path, text, mode=mode)
    except UnsafeFile as exc:
        raise ConnectError(str(exc)) from None
    return Written(changed=True, saved=saved)


def merge_json(path: Path, keys: tuple[str, ...], entries: dict[str, Any], *, project: Path,
               mode: int | None = None) -> Written:
    """Put ``entries`` into the object at ``keys`` (made when missing), keeping everything else in the file."""
    document = _read_json(path)
    place = document
    for depth, key in enumerate(keys):
        current = place.setdefault(key, {})
        if not isinstance(current, dict):
            raise ConnectError(f"{'.'.join(keys[:depth + 1])} in {path} is not an object; nothing was changed.")
        place = current
    place.update(entries)
    return replace_text(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n", project=project, mode=mode)


def read_entries(path: Path, keys: tuple[str, ...]) -> dict[str, Any]:
    """The servers already at ``keys`` in a JSON file ({} when there are none or the file cannot be read)."""
    try:
        place: Any = _read_json(path)
    except ConnectError:
        return {}
    for key in keys:
        place = place.get(key) if isinstance(place, dict) else None
    return place if isinstance(place, dict) else {}


_TABLE = re.compile(r"^\s*\[+\s*([^\]]+?)\s*\]+\s*(#.*)?$")


def merge_toml(path: Path, servers: list[Server], *, project: Path, mode: int | None = None) -> Written:
    """Replace our ``[mcp_servers.NAME]`` tables (and their sub-tables), keeping every other line as it was."""
    text = _read_text(path)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConnectError(f"{path} is not valid TOML ({exc}); fix it, then run this again. Nothing was changed.") \
            from None
    ours = {f"mcp_servers.{server.name}" for server in servers}
    kept, skipping = [], False
    for line in text.splitlines():
        if match := _TABLE.match(line):
            name = match.group(1).replace('"', "").replace(" ", "")
            skipping = any(name == table or name.startswith(table + ".") for table in ours)
        if not skipping:
            kept.append(line)
    body = "\n".join(kept).rstrip()
    merged = (body + "\n\n" if body else "") + toml_tables(servers)
    try:
        parsed = tomllib.loads(merged)  # what we write must read back, with our servers in it
    except tomllib.TOMLDecodeError:
        parsed = {}
    if any(server.name not in parsed.get("mcp_servers", {}) for server in servers):
        raise ConnectError(f"{path} defines mcp_servers in a form this command cannot merge (an inline table?); "
                           "add the tables printed above by hand. Nothing was changed.")
    return replace_text(path, merged, project=project, mode=mode)


def hook_command(user: str | None = None, home: str | None = None, *, portable: bool = False) -> str:
    import shlex

    if portable:
        return f"{LAUNCHER} recall"
    extra = ["--user", user] if user else []
    command = shlex.join([*installed.command(), "recall", *extra])
    # Hooks run in a shell: a data directory other than the default travels as a variable, as it does to servers.
    return f"PILLBOX_HOME={shlex.quote(home)} {command}" if home else command


def merge_hook(path: Path, command: str, *, project: Path) -> Written:
    """Add a SessionStart hook running ``command`` to a Claude Code settings file (unchanged when it is there)."""
    document = _read_json(path)
    hooks = document.setdefault("hooks", {})
    if not isinstance(hooks, dict) or not isinstance(hooks.setdefault("SessionStart", []), list):
        raise ConnectError(f"hooks.SessionStart in {path} is not a list; nothing was changed.")
    for group in hooks["SessionStart"]:
        for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
            if isinstance(hook, dict) and hook.get("command") == command:
                return Written(changed=False)
    hooks["SessionStart"].append({"matcher": HOOK_MATCHER, "hooks": [{"type": "command", "command": command}]})
    return replace_text(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n", project=project)


def hook_file(scope: Scope, *, home: Path, project: Path) -> Path:
    """Claude Code's settings for the hook: the project's own and personal one (``settings.local.json``, which
    Claude Code keeps out of git, and so do we), the project's shared one, or the user's."""
    if scope == "local":
        return project / ".claude" / "settings.local.json"
    return (project if scope == "project" else home) / ".claude" / "settings.json"


# ---------------------------------------------------------------- the launcher a shared file names


def launcher_file(home: Path) -> Path:
    return home / ".local" / "bin" / LAUNCHER


def launcher_text(pillbox_home: str | None) -> str:
    import shlex

    lines = ["#!/bin/sh", f"{_launcher_signature()} (written by `manage.py launcher`).",
             "# A project's shared MCP configuration runs it by name, so it names no machine's paths."]
    if pillbox_home:
        lines.append(f"export PILLBOX_HOME={shlex.quote(pillbox_home)}")
    lines.append(f'exec {shlex.join(installed.command())} "$@"')
    return "\n".join(lines) + "\n"


def _launcher_signature() -> str:
    return f"# {LAUNCHER}: this person's Pillbox & Todos"


def install_launcher(home: Path, pillbox_home: str | None) -> tuple[Path, bool, Path | None]:
    """Write the launcher into ``~/.local/bin`` (POSIX shells): False when it was already this one; a file of the
    same name that is not one of ours is kept aside first (the third value)."""
    if platform.system() == "Windows":
        raise ConnectError(f"The {LAUNCHER} launcher is a POSIX shell script; on Windows put a {LAUNCHER}.cmd "
                           f"on PATH running: {installed.shown()} %*")
    path, text = launcher_file(home), launcher_text(pillbox_home)
    try:
        path, _ = followed_into(path, root=home)
        current = read_regular(path)
        if current == text.encode():
            return path, False, None
        saved = None
        if current is not None and _launcher_signature().encode() not in current:
            saved = backup(path, home, current)
        write_atomically(path, text, mode=0o755)
    except UnsafeFile as exc:
        raise ConnectError(str(exc)) from None
    return path, True, saved


def launcher_on_path(home: Path) -> bool:
    found = shutil.which(LAUNCHER)
    return found is not None and Path(found).resolve() == launcher_file(home).resolve()
