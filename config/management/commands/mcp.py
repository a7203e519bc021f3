"""`manage.py mcp pillbox|todos [--user NAME]`: serve one MCP server over stdio for a local agent.

Run from the directory the agent works in: Pillbox finds the project's `.pillbox/pillbox.db` from there.
Nothing but protocol goes to stdout; everything else goes to stderr.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.module_loading import import_string


class Command(BaseCommand):
    help = "Serve the pillbox or todos MCP server over stdio (for Claude Code, Cursor and other local agents)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("server", choices=sorted(settings.MCP_SERVERS))
        parser.add_argument("--user", help="the local user (default: $PILLBOX_USER, else the login name)")

    def handle(self, *args: object, server: str, user: str | None, **options: object) -> None:
        from accounts.services import user_get_or_create
        from config.bootstrap import ensure_global_db
        from config.mcp.stdio import serve_stdio
        from config.mcp.tools import Caller

        username = user or os.environ.get("PILLBOX_USER") or getpass.getuser()
        if not username:
            raise CommandError("no user: pass --user NAME or set PILLBOX_USER")
        ensure_global_db()
        caller = Caller(user=user_get_or_create(username=username), transport="stdio", workdir=Path.cwd())
        serve_stdio(import_string(settings.MCP_SERVERS[server]), caller)
