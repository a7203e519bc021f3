"""A project's file of the original: read (and judged) when it is first opened, then its memory copied into our
tables beside the original's in the same file (pillbox.databases.open_local calls both)."""

from __future__ import annotations

from pathlib import Path

from django.db import IntegrityError, transaction

from pillbox.models import OriginalImport
from pillbox.original.files import Counts, ImportFailed, Refused, Snapshot
from pillbox.original.news import announce
from pillbox.original.reading import read
from pillbox.original.recognise import openable, recognise_openable
from pillbox.original.saving import log_import, record_import, save_memory


def local_snapshot(path: Path) -> Snapshot | None:
    """What the original's project file at ``path`` holds, when it was never imported; None for any other
    file (ours, a global file, or one our own checks will judge). ImportFailed for a file that cannot be."""
    # A file that cannot even be opened (its mode, its owner) is named now: let through, every query on it would
    # fail later, an internal error in each tool that reaches it. Whose file it is cannot be told unread.
    openable(path)
    try:
        found = recognise_openable(path)
    except Refused:
        raise
    except ImportFailed:
        return None  # not readable as a database at all: the usual checks on our own files answer that
    if found is None or found.recorded:
        return None
    if found.kind == OriginalImport.KIND_GLOBAL:
        raise ImportFailed(
            f"{path} is the original Pillbox's global database, not a project's: its memory becomes your global "
            "memory (run `pillbox-todos import_original`).",
            db_path=str(path),
        )
    return read(found)


def import_local(snapshot: Snapshot, alias: str) -> Counts | None:
    """Copy a project file's memory into our tables in the same file; None when another process already did."""
    try:
        with transaction.atomic(using=alias):
            if OriginalImport.objects.using(alias).filter(kind=OriginalImport.KIND_LOCAL).exists():
                return None
            counts = save_memory(alias, snapshot)
            record_import(alias, snapshot, counts, username="")
    except IntegrityError:
        if OriginalImport.objects.using(alias).filter(kind=OriginalImport.KIND_LOCAL).exists():
            return None
        raise
    log_import(snapshot, counts)
    announce(counts)
    return counts
