"""`manage.py export USERNAME FILE`: one user's todos, capsules and bottles (with prescriptions and pills) as JSON."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from base.files import UnsafeFile, write_atomically
from ops.backups import BackupError, dump_json, export_user


class Command(BaseCommand):
    help = (
        "Write one user's data as JSON to FILE ('-' for stdout): todos, capsules, registered bottles with their "
        "prescriptions and pills, every field kept (ids, timestamps, discarded and deleted rows)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("file")

    def handle(self, *args: object, username: str, file: str, **options: object) -> None:
        try:
            text = dump_json(export_user(username))
        except BackupError as error:
            raise CommandError(str(error)) from None
        if file == "-":
            sys.stdout.write(text)
        else:
            try:
                write_atomically(Path(file), text, mode=0o600)  # a person's whole data: theirs to read only
            except (UnsafeFile, OSError) as error:
                raise CommandError(f"Could not write {file}: {error}") from None
