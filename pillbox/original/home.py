"""The original's global file: its memory becomes a user's global memory, on purpose (``manage.py
import_original``) or the first time they connect over stdio from the home it ran in."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.utils import DatabaseError, OperationalError, ProgrammingError

from base.lru import BoundedLru
from pillbox.global_db import GLOBAL, global_db_file
from pillbox.models import Bottle, Capsule, OriginalImport, Pill, Prescription, Registration
from pillbox.origin import record_found
from pillbox.original.files import Counts, ImportFailed, Snapshot
from pillbox.original.judge import TOO_MUCH, refused
from pillbox.original.news import announce, announce_failure
from pillbox.original.reading import read
from pillbox.original.recognise import recognise, unreadable
from pillbox.original.saving import give_free_seqs, log_import, new_rows, record_import, save, save_memory

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger("pillbox")


def imported_record(path: Path) -> OriginalImport | None:
    """The record of an earlier import of the original's global file at ``path``."""
    try:
        return OriginalImport.objects.using(GLOBAL).filter(source=str(path)).first()
    except (OperationalError, ProgrammingError):  # the global database has no schema yet (a dry run)
        return None


def global_snapshot(path: Path) -> Snapshot | None:
    """What the original's global file at ``path`` holds; None when it is not one."""
    found = recognise(path)
    if found is None or found.kind != OriginalImport.KIND_GLOBAL:
        return None
    return read(found)


def _register(user: User, entries: list[Registration]) -> tuple[int, int]:
    """Add registry entries for ``user``; a bottle already registered stays as it is, and a name the user
    already gives another bottle is skipped (names are unique among a user's bottles)."""
    mine = {registration.bottle_id: registration.name for registration in Registration.objects.filter(user=user)}
    names = set(mine.values())
    added = skipped = 0
    for entry in entries:
        if entry.bottle_id in mine:
            continue
        if entry.name in names:
            logger.warning("not registering the original's bottle %s for %s: the name is taken", entry.name, user)
            skipped += 1
            continue
        entry.user = user
        entry.save(using=GLOBAL)
        if entry.db_path:  # a project the user's own original registry names is theirs (pillbox.origin)
            record_found(user=user, db_path=entry.db_path)
        mine[entry.bottle_id] = entry.name
        names.add(entry.name)
        added += 1
    return added, skipped


def _check_quotas(snapshot: Snapshot, user: User, registrations: list[Registration]) -> None:
    """Refused when the rows the global file would add to the user's own would pass one of their quotas
    (``PILLBOX_QUOTAS``, as ``pillbox.quotas`` counts them: discarded rows included); run inside the import's
    transaction, so nothing of the file is written."""
    mine = set(Registration.objects.filter(user=user).values_list("bottle_id", flat=True))
    bottles = mine | {registration.bottle_id for registration in registrations}
    prescriptions = Prescription.objects.using(GLOBAL).filter(bottle_id__in=bottles)
    pills = Pill.objects.using(GLOBAL).filter(prescription__bottle_id__in=bottles)
    totals = {
        "bottles": len(bottles),
        "prescriptions": prescriptions.count() + len(new_rows(Prescription, GLOBAL, snapshot.prescriptions)),
        "pills": pills.count() + len(new_rows(Pill, GLOBAL, snapshot.pills)),
        "capsules": Capsule.objects.filter(owner=user).count() + len(new_rows(Capsule, GLOBAL, snapshot.capsules)),
    }
    for kind, total in totals.items():
        allowed = settings.PILLBOX_QUOTAS[kind]
        if allowed and total > allowed:
            raise refused(snapshot.found.path, f"importing it would give {user.get_username()} {total:,} {kind}, "
                                               f"over the {allowed:,} a user may have (PILLBOX_QUOTAS)", TOO_MUCH)


def import_global(snapshot: Snapshot, *, user: User) -> Counts | None:
    """Copy the original's global file into the global database for ``user``: its bottles become their global
    bottles, its capsules their capsules, its registry their registrations. None when already imported."""
    source = str(snapshot.found.path)
    for capsule in snapshot.capsules:
        capsule.owner = user
    registrations = [
        Registration(bottle_id=bottle.id, name=bottle.name, display_name=bottle.display_name,
                     scope=Bottle.SCOPE_GLOBAL, directory=bottle.directory, db_path="")
        for bottle in snapshot.bottles
    ] + [
        Registration(bottle_id=entry.bottle_id, name=entry.name, display_name=entry.display_name,
                     scope=Bottle.SCOPE_LOCAL, directory=entry.directory, db_path=entry.db_path)
        for entry in snapshot.registry
    ]
    try:
        with transaction.atomic(using=GLOBAL):
            if OriginalImport.objects.using(GLOBAL).filter(source=source).exists():
                return None
            _check_quotas(snapshot, user, registrations)
            counts = save_memory(GLOBAL, snapshot)
            capsules = new_rows(Capsule, GLOBAL, snapshot.capsules)
            give_free_seqs(Capsule, GLOBAL, capsules)
            counts.capsules = save(Capsule, GLOBAL, capsules)
            counts.registrations, skipped = _register(user, registrations)
            counts.skipped += skipped
            record_import(GLOBAL, snapshot, counts, username=user.get_username())
    except IntegrityError:
        if OriginalImport.objects.using(GLOBAL).filter(source=source).exists():
            return None  # another process imported it at the same moment
        raise
    log_import(snapshot, counts)
    announce(counts)
    return counts


def original_global_file() -> Path:
    """Where the original keeps its global file, whatever PILLBOX_HOME says: the home it ran in."""
    return Path.home() / ".pillbox" / "pillbox.db"


def home_candidates() -> list[Path]:
    """Where the original's global file and our own global file (the same one by default) are, as configured."""
    return [path for path in (original_global_file(), global_db_file()) if path is not None]


def home_files() -> list[Path]:
    """The original's global file, and our own global file, that exist (resolved, each once)."""
    unique: list[Path] = []
    for candidate in home_candidates():
        if candidate.is_file() and candidate.resolve() not in unique:
            unique.append(candidate.resolve())
    return unique


_home_checked: BoundedLru[tuple[str, object], bool] = BoundedLru(max_items=1024, max_bytes=1 << 20)


def import_home(user: User) -> None:
    """Over stdio the process runs as the person whose home it is: their original global file becomes theirs
    the first time they connect. Checked once per process (each path as configured and as resolved: a checked
    file costs no look at the disk); a failure is told once and the tools work on."""
    for candidate in home_candidates():
        given = (str(candidate), user.pk)
        if given in _home_checked or not candidate.is_file():
            continue  # a file not there yet is looked for again on the next call
        path = candidate.resolve()
        key = (str(path), user.pk)
        seen = key in _home_checked
        for checked in {given, key}:
            _home_checked.put(checked, True, size=len(checked[0]))
        if seen:
            continue
        try:
            if imported_record(path) is not None:
                continue
            snapshot = global_snapshot(path)
            if snapshot is not None:
                import_global(snapshot, user=user)
        except ImportFailed as exc:
            announce_failure(exc)
        except DatabaseError as exc:
            logger.exception("importing the original Pillbox file %s failed", path)
            announce_failure(unreadable(path, exc))
