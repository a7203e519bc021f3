"""`manage.py import FILE`: load a user's data exported by `manage.py export` (created or updated, idempotent)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.backups import BackupError, import_user


class Command(BaseCommand):
    help = (
        "Load a user's data from FILE ('-' for stdin), made by manage.py export: the user is created if "
        "missing; rows are created or updated by id, so importing twice changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")

    def handle(self, *args: object, file: str, **options: object) -> None:
        try:
            text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
            counts = import_user(json.loads(text))
        except (BackupError, ValueError, KeyError) as error:
            raise CommandError(f"cannot import {file}: {error}") from None
        self.stdout.write("imported " + ", ".join(f"{count} {kind}" for kind, count in counts.items()))
