"""`manage.py connect CLIENT [--http] [--scope local|user|project] [--write] [--hooks]`: connect an agent in one
command.

Prints (or with --write merges into the client's file, after a backup) the configuration for both servers.
Personal by default (Claude Code's local scope, the user's file elsewhere): stdio with the command that runs this
copy (config/installed.py), or with --http this site's URLs and an API key. ``--scope project`` writes what a team
can commit: the ``pillbox-todos`` command by name (or, with --http, the URLs alone, each person signing in with
OAuth), and says how each teammate installs it.
"""

from __future__ import annotations

import getpass
import json
import os
import tomllib
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from base.gitexclude import exclude_from_git
from config import connect, installed, sites
from config.connect import CLIENTS, LAUNCHER, SCOPES, ConnectError

NO_KEY = "<API key>"


def shown(path: Path, project: Path) -> str:
    """A project's file by its place in the project (what is printed for a team names no path of this machine)."""
    return f"./{path.relative_to(project)}" if path.is_relative_to(project) else str(path)


class Command(BaseCommand):
    help = ("Print, or with --write merge into the client's configuration file (backed up first), the MCP "
            "configuration for the pillbox and todos servers: stdio (this copy's command) or --http (this site).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("client", choices=CLIENTS)
        parser.add_argument("--http", action="store_true",
                            help="connect over HTTP to SITE_URL with an API key (default: stdio, local); a "
                                 "written key is used again by the next --write, and printing makes none")
        parser.add_argument("--scope", choices=SCOPES,
                            help="local: Claude Code, this project, only you (its default); user: your file for "
                                 "every project (the others' default); project: the project's shared file, "
                                 f"naming the {LAUNCHER} command each teammate installs once")
        parser.add_argument("--write", action="store_true", help="merge into the file (other servers are kept)")
        parser.add_argument("--hooks", action="store_true",
                            help="claude-code: also add a SessionStart hook running `recall` (this copy's), so a new "
                                 "session starts with this project's memory")
        parser.add_argument("--user", help="the user the servers act for (default: $PILLBOX_USER, else the login)")
        parser.add_argument("--project", help="the project directory (default: the current directory)")

    def handle(self, *args: object, client: str, http: bool, scope: connect.Scope | None, write: bool, hooks: bool,
               user: str | None, project: str | None, **options: object) -> None:
        if hooks and client != "claude-code":
            raise CommandError("--hooks is for claude-code (other clients have no session-start hook to install).")
        chosen = scope or connect.default_scope(client)
        shared = chosen == "project"
        if shared and user:
            raise CommandError("--user names one person, and a project's file is everyone's: each teammate's "
                               f"{LAUNCHER} acts for its own login (or PILLBOX_USER).")
        home, where = Path.home(), Path(project or os.getcwd()).resolve()
        try:
            path, followed = connect.safe_place(connect.config_file(client, chosen, home=home, project=where),
                                                home=home, project=where)
            if followed:
                self.stderr.write(followed)
            data_home, note = ("", "") if http else sites.servers_home(home)
            if note:
                self.stderr.write(note)
            servers = self._servers(client, chosen, http, user, data_home or None, path, where, write)
            self._connect(client, chosen, path, servers, write, where)
            if hooks:
                self._hook(chosen, home, where, write, user, data_home or None)
            if shared and not http:
                self._launcher(home, data_home or None, write)
        except ConnectError as exc:
            raise CommandError(str(exc)) from None

    def _servers(self, client: str, scope: connect.Scope, http: bool, user: str | None, data_home: str | None,
                 path: Path, where: Path, write: bool) -> list[connect.Server]:
        if not http:
            return connect.stdio_servers(user, data_home, portable=scope == "project")
        if client == "claude-desktop":  # refused before a key is made for nothing
            connect.json_entry(client, connect.http_servers(settings.SITE_URL, NO_KEY)[0])
        if scope == "project":  # no key in a shared file: each person's client signs in with OAuth
            return connect.http_servers(settings.SITE_URL, "")
        from django.contrib.auth import get_user_model

        from accounts.services import apikey_authenticate, apikey_create
        from base.bootstrap import ensure_global_db

        ensure_global_db()
        username = user or os.environ.get("PILLBOX_USER") or getpass.getuser()
        account = get_user_model().objects.filter(username=username).first()
        if account is None:
            raise CommandError(f"There is no user named {username!r}; add one with `pillbox-todos adduser {username}` "
                               "or name another with --user.")
        # The key the file already holds for this site and user is used again: running this twice makes one key.
        written = self._written_key(client, scope, path, where)
        if written and apikey_authenticate(raw=written) == account:
            return connect.http_servers(settings.SITE_URL, written)
        if not write:
            self.stderr.write(f"No API key was made (printing only): --write makes one and writes it, or put "
                              f"one from `pillbox-todos createkey {username}` where {NO_KEY} is.")
            return connect.http_servers(settings.SITE_URL, NO_KEY)
        _, key = apikey_create(user=account, name=f"connect {client}")
        self.stderr.write(f"Made a new API key for {username} (revoke it on {settings.SITE_URL}/account/).")
        return connect.http_servers(settings.SITE_URL, key)

    def _written_key(self, client: str, scope: connect.Scope, path: Path, where: Path) -> str:
        """The bearer key of our todos entry in the client's file when it points at this site, else ''."""
        url = connect.http_servers(settings.SITE_URL, "")[1].url  # todos
        entry: Any
        if client == "codex":
            try:
                entry = tomllib.loads(path.read_text()).get("mcp_servers", {}).get("todos", {})
            except (OSError, tomllib.TOMLDecodeError):
                return ""
            headers = entry.get("http_headers") if isinstance(entry, dict) else None
        else:
            entry = connect.read_entries(path, connect.servers_key(client, scope, where)).get("todos")
            headers = entry.get("headers") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or entry.get("url") != url or not isinstance(headers, dict):
            return ""
        value = headers.get("Authorization")
        return value.removeprefix("Bearer ") if isinstance(value, str) and value.startswith("Bearer ") else ""

    def _connect(
        self, client: str, scope: connect.Scope, path: Path, servers: list[connect.Server], write: bool, where: Path
    ) -> None:
        keys = connect.servers_key(client, scope, where)
        if client == "codex":
            text = connect.toml_tables(servers)
        else:
            text = json.dumps(connect.json_document(keys, connect.json_entries(client, servers)), indent=2,
                              ensure_ascii=False) + "\n"
        if not write:
            self.stdout.write(f"# {client}: merge into {shown(path, where)} (or run again with --write)\n{text}")
            if client == "claude-code":
                self.stdout.write("# or run:\n" + "\n".join(connect.claude_code_commands(servers, scope)))
            return
        # A file holding an API key (and its backup) is readable by its owner only.
        mode = 0o600 if servers[0].is_http and servers[0].key else None
        if client == "codex":
            written = connect.merge_toml(path, servers, project=where, mode=mode)
        else:
            written = connect.merge_json(path, keys, connect.json_entries(client, servers), project=where, mode=mode)
        place = f" for {where}" if scope == "local" else ""
        if written.changed:
            kept = f" (the previous file is kept as {written.saved})" if written.saved else ""
            self.stdout.write(f"Wrote pillbox and todos to {path}{place}{kept}. Restart {client} to pick them up.")
        else:
            self.stdout.write(f"{path} already has these pillbox and todos entries{place}; nothing was changed.")
        if mode is not None:
            self._guard_key(path, scope, where)
        elif scope == "project" and servers[0].is_http:
            self.stdout.write(f"{path} names the site only (no key): each teammate's client signs in with OAuth "
                              "the first time it connects.")
            if settings.SITE_URL.startswith(("http://127.", "http://localhost", "http://[::1]")):
                self.stderr.write(f"warning: {settings.SITE_URL} is this machine's own address; for a team, set "
                                  "SITE_URL to the address everyone reaches.")

    def _guard_key(self, path: Path, scope: connect.Scope, where: Path) -> None:
        """The file now holds an API key (written owner-only): in a project, it is kept out of git too."""
        if path.is_relative_to(where):
            exclude_from_git(where, str(path.relative_to(where)))
            self.stdout.write(f"{path} holds an API key: it is readable by you only and kept out of git commits "
                              "(.git/info/exclude); don't share it.")
        else:
            self.stdout.write(f"{path} holds an API key: it is readable by you only; don't share it.")

    def _hook(self, scope: connect.Scope, home: Path, project: Path, write: bool, user: str | None,
              data_home: str | None) -> None:
        path, followed = connect.safe_place(connect.hook_file(scope, home=home, project=project), home=home,
                                            project=project)
        if followed:
            self.stderr.write(followed)
        command = connect.hook_command(user, data_home, portable=scope == "project")
        if not write:
            hook = {"hooks": {"SessionStart": [{"matcher": connect.HOOK_MATCHER,
                                                "hooks": [{"type": "command", "command": command}]}]}}
            self.stdout.write(f"\n# the memory hook: merge into {shown(path, project)}\n{json.dumps(hook, indent=2)}")
            return
        if scope == "local":  # personal: never committed, whatever the project's .gitignore says
            exclude_from_git(project, str(path.relative_to(project)))
        written = connect.merge_hook(path, command, project=project)
        if written.changed:
            kept = f" (the previous file is kept as {written.saved})" if written.saved else ""
            self.stdout.write(f"Added the SessionStart hook ({command}) to {path}{kept}.")
        else:
            self.stdout.write(f"The SessionStart hook is already in {path}.")

    def _launcher(self, home: Path, data_home: str | None, write: bool) -> None:
        once = "\n  ".join(installed.teammate_install())
        if installed.on_path():
            self.stdout.write(f"{LAUNCHER} on your PATH is this copy's own command ({installed.script()}).")
        elif write:
            path, changed, saved = connect.install_launcher(home, data_home)
            kept = f" (the file that was there, not ours, is kept as {saved})" if saved else ""
            self.stdout.write(f"{'Installed' if changed else 'Kept'} your launcher {path}{kept}.")
            if not connect.launcher_on_path(home):
                self.stderr.write(f"warning: {path.parent} is not on your PATH (or another {LAUNCHER} comes "
                                  "first): add it, or the client will not find the servers.")
        self.stdout.write(f"\nThe project's file names no path of this machine, only {LAUNCHER}: each teammate "
                          f"installs it once, with one of:\n  {once}")
