"""`pillbox-todos import_original [--home DIR] [--user NAME] [--dry-run] [PROJECT_DIR...]`.

Brings the original Pillbox's memory across on purpose: its global file (``DIR/.pillbox/pillbox.db``), every
project file its registry names, and the projects named here. What Pillbox does by itself the first time an
agent meets those files, done at once and reported per file; safe to run again (an imported file is skipped).
"""

from __future__ import annotations

import getpass
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from django.core.management.base import BaseCommand, CommandError, CommandParser

from pillbox.exceptions import IncompatibleDb
from pillbox.models import OriginalImport
from pillbox.original.files import Counts, ImportFailed
from pillbox.original.home import global_snapshot, home_files, import_global, imported_record
from pillbox.original.news import announcements
from pillbox.original.reading import read
from pillbox.original.recognise import recognise

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class Command(BaseCommand):
    help = (
        "Import the original Pillbox's memory: the global file in HOME/.pillbox (capsules, global bottles, its "
        "registry of projects), every registered project's file, and any PROJECT_DIR given. Ids, timestamps, "
        "views, authors and discarded rows are kept; the original's files are only read. Safe to run twice."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("projects", nargs="*", metavar="PROJECT_DIR",
                            help="more project directories (or .pillbox/pillbox.db files) to import")
        parser.add_argument("--home", help="the home directory the original ran in (default: yours)")
        parser.add_argument("--user", help="who the memory becomes (default: $PILLBOX_USER, else the login name)")
        parser.add_argument("--dry-run", action="store_true", help="print what would be imported; write nothing")

    def handle(self, *args: object, projects: list[str], home: str | None, user: str | None, dry_run: bool,
               **options: object) -> None:
        username = user or os.environ.get("PILLBOX_USER") or getpass.getuser()
        self.dry_run, self.failures = dry_run, 0
        self.owner: User | None = None  # None in a dry run, which writes nothing
        self.registered: set[str] = set()
        if not dry_run:
            from accounts.services import user_get_or_create
            from base.bootstrap import ensure_global_db

            ensure_global_db()
            self.owner = user_get_or_create(username=username)
        verb = "would import" if dry_run else "importing"
        self.stdout.write(f"{verb} the original Pillbox's memory for {username}")
        local_files: list[Path] = []
        for path in self._global_files(home):
            local_files += self._global(path, username)
        for project in projects:
            target = Path(project).expanduser().resolve()
            local_files.append(target if target.is_file() else target / ".pillbox" / "pillbox.db")
        seen: set[Path] = set()
        for path in local_files:
            if path not in seen:
                seen.add(path)
                self._local(path, register=str(path) not in self.registered)
        if self.failures:
            raise CommandError(f"{self.failures} file(s) could not be imported (see above); the others were.")

    # ------------------------------------------------------------ files

    def _global_files(self, home: str | None) -> list[Path]:
        if home is None:
            return home_files()
        base = Path(home).expanduser().resolve()
        for candidate in (base / ".pillbox" / "pillbox.db", base / "pillbox.db"):
            if candidate.is_file():
                return [candidate]
        self.stdout.write(f"{base}: no .pillbox/pillbox.db there; no global file to import")
        return []

    def _fail(self, error: IncompatibleDb) -> None:
        self.failures += 1
        self.stderr.write(f"error: {error.message}")

    def _global(self, path: Path, username: str) -> list[Path]:
        """Import one global file; returns the project files its registry names (to import next)."""
        try:
            snapshot = global_snapshot(path)
        except ImportFailed as error:
            self._fail(error)
            return []
        if snapshot is None:
            self.stdout.write(f"{path}: not a global database of the original Pillbox; nothing to import")
            return []
        # A dry run must not even create an empty global database by looking for the record in it.
        record = imported_record(path) if not self.dry_run or _global_db_exists() else None
        if record is not None:
            self.stdout.write(f"{path} (global): already imported {_when(record)}")
        elif self.dry_run or self.owner is None:
            self.stdout.write(f"{path} (global): would import {snapshot.counts().phrase()}")
        else:
            try:
                counts = import_global(snapshot, user=self.owner)
            except ImportFailed as error:  # more than the user's quotas allow: nothing was written
                self._fail(error)
                return []
            self.stdout.write(f"{path} (global): " + (f"imported {counts.phrase()}" if counts else "already imported"))
        files = []
        for entry in snapshot.registry:
            self.registered.add(entry.db_path)
            if Path(entry.db_path).is_file():
                files.append(Path(entry.db_path))
            elif moved := self._moved_to(entry.bottle_id):
                self.stdout.write(f"{entry.db_path} ({entry.name}): moved; registered at {moved}")
            else:
                self.stdout.write(
                    f"{entry.db_path} ({entry.name}): registered, but the file is gone (the project moved?): listed "
                    "as unlinked; name its new directory to import it: pillbox-todos import_original DIR"
                )
        return files

    def _moved_to(self, bottle_id: uuid.UUID) -> str | None:
        from pillbox.models import Registration

        if self.owner is None:
            return None
        registration = Registration.objects.filter(user=self.owner, bottle_id=bottle_id).first()
        if registration is None or not registration.db_path or not Path(registration.db_path).is_file():
            return None
        return registration.db_path

    def _local(self, path: Path, *, register: bool) -> None:
        if not path.is_file():
            self.stdout.write(f"{path}: no such file; nothing to import")
            return
        try:
            found = recognise(path)
            if found is None or found.kind != OriginalImport.KIND_LOCAL:
                self.stdout.write(f"{path}: not a project database of the original Pillbox; nothing to import")
                return
            if found.recorded:
                self.stdout.write(f"{path} (local): already imported")
            elif self.dry_run:
                self.stdout.write(f"{path} (local): would import {read(found).counts().phrase()}")
                return
            else:
                self.stdout.write(f"{path} (local): {self._open(path)}")
            if register and not self.dry_run:
                self._register(path)
        except IncompatibleDb as error:
            self._fail(error)

    def _open(self, path: Path) -> str:
        from pillbox.databases import open_local

        with announcements() as news:
            open_local(path)
        return f"imported {news.counts.phrase()}" if news.counts else "already imported"

    def _register(self, path: Path) -> None:
        """A project named on the command line joins the user's registry, as bottle_vinculate would."""
        from pillbox.access import register, relink
        from pillbox.databases import open_local
        from pillbox.models import Bottle, OwnedFile, Registration
        from pillbox.origin import Ledger, record

        if self.owner is None:
            return
        alias = open_local(path)
        # Named by the person, from their own original Pillbox: theirs (pillbox.origin), as the registry's files are.
        if Ledger(self.owner).owned(path) is None:
            record(user=self.owner, path=path, alias=alias, origin=OwnedFile.UPGRADED)
        for bottle in Bottle.objects.using(alias):
            clash = Registration.objects.filter(user=self.owner, name=bottle.name).exclude(bottle_id=bottle.id)
            if clash.exists():
                self.stdout.write(f"{path}: not registered: you already have another bottle named {bottle.name}")
                continue
            registration, created = register(user=self.owner, bottle=bottle, db_path=path)
            if not created:
                relink(registration, path)
            self.stdout.write(f"{path}: bottle {bottle.name} " + ("registered" if created else "is registered"))


def _global_db_exists() -> bool:
    from pillbox.global_db import global_db_file

    path = global_db_file()
    return path is None or path.is_file()


def _when(record: OriginalImport) -> str:
    who = f" for {record.username}" if record.username else ""
    counts = Counts(record.bottles, record.prescriptions, record.pills, record.capsules,
                             record.registrations, record.skipped)
    return f"on {record.imported_at:%Y-%m-%d %H:%M} UTC{who} ({counts.phrase()})"
