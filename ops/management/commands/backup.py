"""`manage.py backup DEST`: copy the global database and every registered local bottle database into DEST."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ops.backups import BackupError, backup


class Command(BaseCommand):
    help = (
        "Copy the global database and every registered local bottle database into DEST (a new directory), "
        "consistently and while the site runs, with a manifest.json. PostgreSQL: runs (or prints) pg_dump."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dest", type=Path)

    def handle(self, *args: object, dest: Path, **options: object) -> None:
        try:
            manifest = backup(dest, say=self.stdout.write)
        except BackupError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"backup written to {dest.resolve()} ({1 if manifest['global'] else 0} global, "
            f"{len(manifest['locals'])} local databases)"
        )
