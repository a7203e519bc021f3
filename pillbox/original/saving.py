"""Writing a file's rows into our tables: rows already there are left as they are, and each import leaves a
record of what it copied (``OriginalImport``), so it happens once per file."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import models
from django.utils import timezone

from pillbox.models import Bottle, OriginalImport, Pill, Prescription
from pillbox.original.files import Counts, Snapshot

logger = logging.getLogger("pillbox")

CHUNK = 500


def _chunks(values: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(values), CHUNK):
        yield values[start:start + CHUNK]


def _existing(model: type[models.Model], alias: str, column: str, values: Iterable[Any]) -> set[Any]:
    found: set[Any] = set()
    for chunk in _chunks(list(values)):
        found.update(model._default_manager.using(alias).filter(**{f"{column}__in": chunk})
                     .values_list(column, flat=True))
    return found


def new_rows(model: type[models.Model], alias: str, rows: list[Any]) -> list[Any]:
    """The rows whose id the database does not hold yet (a row already there is left as it is)."""
    taken = _existing(model, alias, "id", [row.id for row in rows])
    return [row for row in rows if row.id not in taken]


def give_free_seqs(model: type[models.Model], alias: str, rows: list[Any]) -> None:
    """``seq`` is the creation millisecond, unique per table; ids the original made in the same millisecond
    (or that meet one of ours) take the next free one, which only the index key ever sees."""
    taken = _existing(model, alias, "seq", [row.seq for row in rows])
    for row in rows:
        while row.seq in taken:
            row.seq += 1
            if _existing(model, alias, "seq", [row.seq]):
                taken.add(row.seq)
        taken.add(row.seq)


def save(model: type[models.Model], alias: str, rows: list[Any]) -> int:
    # Plain INSERTs, so the full-text triggers on our tables index every row as it arrives.
    model._default_manager.using(alias).bulk_create(rows, batch_size=CHUNK)
    return len(rows)


def save_memory(alias: str, snapshot: Snapshot) -> Counts:
    bottles = new_rows(Bottle, alias, snapshot.bottles)
    prescriptions = new_rows(Prescription, alias, snapshot.prescriptions)
    pills = new_rows(Pill, alias, snapshot.pills)
    give_free_seqs(Pill, alias, pills)
    return Counts(bottles=save(Bottle, alias, bottles), prescriptions=save(Prescription, alias, prescriptions),
                  pills=save(Pill, alias, pills), skipped=snapshot.skipped)


def record_import(alias: str, snapshot: Snapshot, counts: Counts, username: str) -> None:
    OriginalImport.objects.using(alias).create(
        source=str(snapshot.found.path), kind=snapshot.found.kind, username=username,
        schema_version=snapshot.found.version, imported_at=timezone.now(), bottles=counts.bottles,
        prescriptions=counts.prescriptions, pills=counts.pills, capsules=counts.capsules,
        registrations=counts.registrations, skipped=counts.skipped,
    )


def log_import(snapshot: Snapshot, counts: Counts) -> None:
    logger.info("imported %s from the original Pillbox file %s", counts.phrase(), snapshot.found.path)
