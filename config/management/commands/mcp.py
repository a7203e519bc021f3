"""`manage.py mcp pillbox|todos [--user NAME]`: serve one MCP server over stdio for a local agent.

Run from the directory the agent works in: Pillbox finds the project's `.pillbox/pillbox.db` from there.
Nothing but protocol goes to stdout; everything else goes to stderr. `manage.py mcp SERVER [--user NAME]` never
reaches this command: manage.py serves it before setting Django up (mcp_bridge/stdio.py); this one serves the
registries' own tools when Django is already running (`django-admin mcp`, Django's options such as --settings).
"""

from __future__ import annotations

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
        from mcp_bridge.stdio import local_caller, local_username, serve_registered

        username = local_username(user)
        if not username:
            raise CommandError("no user: pass --user NAME or set PILLBOX_USER")
        serve_registered(import_string(settings.MCP_SERVERS[server]), local_caller(username))
