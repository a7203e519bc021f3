"""What a file of the original is, and what this package makes of it: the tables that tell it apart, what was
found (``Found``), what it holds once read (``Snapshot``), how much was brought across (``Counts``), and the
errors that stop its import."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, fields
from pathlib import Path

from pillbox.exceptions import IncompatibleDb
from pillbox.models import Bottle, Capsule, OriginalImport, Pill, Prescription

ORIGINAL_TABLES = frozenset({"bottles", "prescriptions", "pills", "schema_migrations"})
GLOBAL_TABLES = frozenset({"capsules", "registered_bottles"})
KNOWN_VERSIONS = frozenset({1})
RECORD_TABLE = OriginalImport._meta.db_table
AGAIN = "then run `pillbox-todos import_original` again"
READ_TABLES = ORIGINAL_TABLES | GLOBAL_TABLES


class ImportFailed(IncompatibleDb):
    """A file of the original Pillbox that cannot be brought across; nothing of it was written."""


class Refused(ImportFailed):
    """A file holding the original's tables in a shape the original never writes, or more than one may import
    (``judge_tables``, ``judge_triggers``, ``judge_size`` in pillbox.original.judge)."""


@dataclass(frozen=True)
class Found:
    path: Path
    kind: str  # OriginalImport.KIND_GLOBAL or KIND_LOCAL
    version: int
    recorded: bool  # the file carries our record of its import (local files)


@dataclass
class Counts:
    bottles: int = 0
    prescriptions: int = 0
    pills: int = 0
    capsules: int = 0
    registrations: int = 0
    skipped: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))

    def phrase(self) -> str:
        parts = [_plural(self.bottles, "bottle"), _plural(self.prescriptions, "prescription"),
                 _plural(self.pills, "pill")]
        if self.capsules:
            parts.append(_plural(self.capsules, "capsule"))
        if self.registrations:
            parts.append(_plural(self.registrations, "registry entry", "registry entries"))
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        return ", ".join(parts)


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


@dataclass(frozen=True)
class RegistryEntry:
    bottle_id: uuid.UUID
    name: str
    display_name: str
    db_path: str

    @property
    def directory(self) -> str:
        folder = Path(self.db_path).parent
        return str(folder.parent if folder.name == ".pillbox" else folder)


@dataclass
class Snapshot:
    """Everything one file of the original holds, already parsed into our rows (not yet saved)."""

    found: Found
    bottles: list[Bottle] = field(default_factory=list)
    prescriptions: list[Prescription] = field(default_factory=list)
    pills: list[Pill] = field(default_factory=list)
    capsules: list[Capsule] = field(default_factory=list)
    registry: list[RegistryEntry] = field(default_factory=list)
    skipped: int = 0  # rows whose bottle or prescription the file does not hold

    def counts(self) -> Counts:
        registrations = len(self.registry) + (len(self.bottles) if self.found.kind == OriginalImport.KIND_GLOBAL else 0)
        return Counts(len(self.bottles), len(self.prescriptions), len(self.pills), len(self.capsules),
                      registrations, self.skipped)
