"""`manage.py connect CLIENT [--http] [--scope user|project] [--write] [--hooks]`: connect an agent in one command.

Prints (or with --write merges into the client's file, after a backup) the configuration for both servers:
stdio with this checkout's absolute paths, or with --http this site's URLs and a fresh API key.
"""

from __future__ import annotations

import getpass
import json
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from config import connect
from config.connect import CLIENTS, ConnectError
from config.gitexclude import exclude_from_git


class Command(BaseCommand):
    help = ("Print, or with --write merge into the client's configuration file (backed up first), the MCP "
            "configuration for the pillbox and todos servers: stdio (this checkout) or --http (this site + a new key).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("client", choices=CLIENTS)
        parser.add_argument("--http", action="store_true",
                            help="connect over HTTP to SITE_URL with a new API key (default: stdio, local)")
        parser.add_argument("--scope", choices=("user", "project"),
                            help="the user's file or the project's (default: project; user for codex and "
                                 "claude-desktop)")
        parser.add_argument("--write", action="store_true", help="merge into the file (other servers are kept)")
        parser.add_argument("--hooks", action="store_true",
                            help="claude-code: also add a SessionStart hook running `manage.py recall`, so a new "
                                 "session starts with this project's memory")
        parser.add_argument("--user", help="the user the servers act for (default: $PILLBOX_USER, else the login)")
        parser.add_argument("--project", help="the project directory (default: the current directory)")

    def handle(self, *args: object, client: str, http: bool, scope: connect.Scope | None, write: bool, hooks: bool,
               user: str | None, project: str | None, **options: object) -> None:
        if hooks and client != "claude-code":
            raise CommandError("--hooks is for claude-code (other clients have no session-start hook to install).")
        chosen = scope or connect.default_scope(client)
        home, where = Path.home(), Path(project or os.getcwd()).resolve()
        try:
            path = connect.config_file(client, chosen, home=home, project=where)
            servers = self._servers(client, http, user)
            self._connect(client, chosen, path, servers, write, where)
            if hooks:
                self._hook(chosen, home, where, write, user)
        except ConnectError as exc:
            raise CommandError(str(exc)) from None

    def _servers(self, client: str, http: bool, user: str | None) -> list[connect.Server]:
        if not http:
            return connect.stdio_servers(user)
        if client == "claude-desktop":  # refused before a key is made for nothing
            connect.json_entry(client, connect.http_servers(settings.SITE_URL, "")[0])
        from django.contrib.auth import get_user_model

        from accounts.services import apikey_create
        from config.bootstrap import ensure_global_db

        ensure_global_db()
        username = user or os.environ.get("PILLBOX_USER") or getpass.getuser()
        account = get_user_model().objects.filter(username=username).first()
        if account is None:
            raise CommandError(f"There is no user named {username!r}; add one with `manage.py adduser {username}` "
                               "or name another with --user.")
        _, key = apikey_create(user=account, name=f"connect {client}")
        self.stderr.write(f"Made a new API key for {username} (revoke it on {settings.SITE_URL}/account/).")
        return connect.http_servers(settings.SITE_URL, key)

    def _connect(
        self, client: str, scope: connect.Scope, path: Path, servers: list[connect.Server], write: bool, where: Path
    ) -> None:
        if client == "codex":
            text = connect.toml_tables(servers)
        else:
            text = json.dumps(connect.json_document(client, servers), indent=2, ensure_ascii=False) + "\n"
        if not write:
            self.stdout.write(f"# {client}: merge into {path} (or run again with --write)\n{text}")
            if client == "claude-code":
                self.stdout.write("# or run:\n" + "\n".join(connect.claude_code_commands(servers, scope)))
            return
        saved = connect.backup(path)
        if client == "codex":
            connect.merge_toml(path, servers)
        else:
            connect.merge_json(path, connect.json_document(client, servers))
        kept = f" (the previous file is kept as {saved})" if saved else ""
        self.stdout.write(f"Wrote pillbox and todos to {path}{kept}. Restart {client} to pick them up.")
        if servers and servers[0].is_http:
            self._guard_key(path, saved, scope, where)

    def _guard_key(self, path: Path, saved: Path | None, scope: connect.Scope, where: Path) -> None:
        """The file (and its backup) now hold an API key: its owner's only, and, in a project, out of git."""
        for written in (path, saved):
            if written is not None:
                written.chmod(0o600)
        if scope == "project" and path.is_relative_to(where):
            name = str(path.relative_to(where))
            exclude_from_git(where, name)
            exclude_from_git(where, name + ".bak-*")
            self.stdout.write(f"{path} holds an API key: it is readable by you only and kept out of git commits "
                              "(.git/info/exclude); don't share it.")
        else:
            self.stdout.write(f"{path} holds an API key: it is readable by you only; don't share it.")

    def _hook(self, scope: connect.Scope, home: Path, project: Path, write: bool, user: str | None) -> None:
        path = connect.hook_file(scope, home=home, project=project)
        command = connect.hook_command(user)
        if not write:
            hook = {"hooks": {"SessionStart": [{"matcher": connect.HOOK_MATCHER,
                                                "hooks": [{"type": "command", "command": command}]}]}}
            self.stdout.write(f"\n# the memory hook: merge into {path}\n{json.dumps(hook, indent=2)}")
            return
        saved = connect.backup(path)
        if connect.merge_hook(path, command):
            kept = f" (the previous file is kept as {saved})" if saved else ""
            self.stdout.write(f"Added the SessionStart hook ({command}) to {path}{kept}.")
        else:
            if saved:
                saved.unlink()  # nothing changed: no backup to keep
            self.stdout.write(f"The SessionStart hook is already in {path}.")
