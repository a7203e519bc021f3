"""`manage.py restore SRC [--force]`: put a backup made by `manage.py backup` back where it came from."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.backups import BackupError, restore


class Command(BaseCommand):
    help = (
        "Restore the databases of a backup directory (manage.py backup) to where they came from. Refuses to "
        "overwrite existing databases unless --force."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", type=Path)
        parser.add_argument("--force", action="store_true", help="overwrite the databases that exist")

    def handle(self, *args: object, source: Path, force: bool, **options: object) -> None:
        try:
            restore(source, force=force, say=self.stdout.write)
        except BackupError as error:
            raise CommandError(str(error)) from None
