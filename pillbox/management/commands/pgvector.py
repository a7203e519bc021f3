"""`manage.py pgvector status|enable|disable [--database ALIAS]`: whether PostgreSQL searches the vectors itself.

Migration 0013 turns it on when the server has the pgvector extension at migrate time; ``enable`` does the same
later (the extension installed since), ``disable`` goes back to the search in the process. Running servers see
the change within half a minute (``pillbox.search.pgvector.RECHECK_SECONDS``).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections, transaction

from pillbox.embeddings import halfvec
from pillbox.search import pgvector


class Command(BaseCommand):
    help = "Say whether PostgreSQL searches the vectors by meaning itself (pgvector); turn it on or off."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "enable", "disable"])
        parser.add_argument("--database", default="default", help="the database's alias (default: default)")

    def handle(self, *args: Any, action: str, database: str, **options: Any) -> None:
        if database not in connections:
            raise CommandError(f"No database named {database!r} in the settings.")
        connection = connections[database]
        if action != "status":
            change = halfvec.enable if action == "enable" else halfvec.disable
            with transaction.atomic(using=database):
                self.stdout.write(change(connection))
        said = pgvector.state(database, fresh=True)
        self.stdout.write(f"pgvector: {pgvector.DESCRIPTIONS.get(said, said)}")
