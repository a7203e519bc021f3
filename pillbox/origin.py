"""Memory has an origin: a project database (``.pillbox/pillbox.db``) is the user's own only when their Pillbox
made it on this machine or they adopted it; any other is *foreign*, and is not registered, searched or read by
the session-start hook (a cloned repository may commit one, written to speak as the user's memory).

The proof: the Pillbox that makes a file writes a random token into it (``FileMark``) and records that token with
the file's real path in the user's global database (``OwnedFile``). A file is the user's own when a record of
theirs holds its token and its real path, or its token and its device and inode (a project moved, not copied).
A copy elsewhere, a stranger's file at a path of the user's, a file of a clone: foreign, until adopted
(``bottle_vinculate`` or ``manage.py adopt``), which records it with where it came from. Adopting writes nothing
into the file when it carries a mark already, so a team's committed ``.pillbox`` is adopted once per clone without
a change to commit.
"""

from __future__ import annotations

import secrets
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from base.lru import BoundedLru
from pillbox import deadlines
from pillbox.exceptions import IncompatibleDb
from pillbox.global_db import GLOBAL
from pillbox.judge import FileKey, file_key, judge_file
from pillbox.models import FileMark, OwnedFile
from pillbox.original.judge import judge_tables
from pillbox.shaping import one_line

MARK_TABLE = FileMark._meta.db_table


@dataclass(frozen=True)
class Foreign:
    """A project database this user's Pillbox did not make here and the user did not adopt."""

    path: Path  # where the file really is
    pills: int | None  # its live pills, when they could be counted safely
    copied: bool  # it carries the mark of a file of the user's that lives elsewhere


def identity(path: Path) -> str:
    info = path.stat()
    return f"{info.st_dev}:{info.st_ino}"


_tokens: BoundedLru[FileKey, str] = BoundedLru(max_items=4096, max_bytes=4 << 20)


def file_token(path: Path) -> str | None:
    """The mark in the (judged) file at ``path``, or None when it has none."""
    key = file_key(path)
    known = _tokens.get(key)
    if known is not None:
        return known or None
    try:
        with closing(deadlines.read_only(path)) as conn:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                (MARK_TABLE,)).fetchone():
                token = ""
            else:
                row = conn.execute(f'SELECT token FROM "{MARK_TABLE}" ORDER BY id LIMIT 1').fetchone()
                token = str(row[0])[:64] if row else ""
    except sqlite3.DatabaseError:
        return None
    _tokens.put(key, token, size=len(key[0]) + len(token))
    return token or None


class Ledger:
    """One user's records of the files that are theirs, read once per call."""

    def __init__(self, user: User, records: list[OwnedFile] | None = None) -> None:
        self.user = user
        self.records = list(OwnedFile.objects.using(GLOBAL).filter(user=user)) if records is None else records

    def owned(self, path: Path) -> OwnedFile | None:
        """The user's record of the file at ``path`` when the file is theirs, else None. Unsafe (IncompatibleDb)
        when the file holds what this Pillbox never writes: judged before anything of it is read."""
        real = path.resolve()
        judge_file(real)
        token = file_token(real)
        here = next((record for record in self.records if record.path == str(real)), None)
        if here is not None and (here.token == (token or "")):
            return here
        if token is None:
            return None
        moved = [record for record in self.records if record.token == token and record.identity == identity(real)]
        if moved and here is None:
            record = moved[0]
            record.path = str(real)
            record.save(update_fields=["path"])
            return record
        return None

    def foreign(self, path: Path) -> Foreign:
        real = path.resolve()
        token = file_token(real)
        copied = token is not None and any(record.token == token for record in self.records)
        return Foreign(path=real, pills=count_pills(real), copied=copied)


def count_pills(path: Path) -> int | None:
    """The live pills of a judged file, counted under the deadline; None when they cannot be counted safely."""
    try:
        with closing(deadlines.read_only(path)) as conn:
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "pillbox_pill" in tables:
                return int(conn.execute("SELECT COUNT(*) FROM pillbox_pill WHERE deleted_at IS NULL").fetchone()[0])
            if "pills" in tables:  # a project file of the original Pillbox
                judge_tables(conn, path)
                return int(conn.execute("SELECT COUNT(*) FROM pills").fetchone()[0])
    except (sqlite3.DatabaseError, IncompatibleDb):
        return None
    return 0


def mark(record: OwnedFile, alias: str) -> None:
    """Give the user's file (open as ``alias``, our schema in it) its mark when it has none yet: a file made before
    marks existed, or adopted from elsewhere unmarked."""
    if record.token:
        return
    with transaction.atomic(using=alias):
        existing = FileMark.objects.using(alias).order_by("id").first()
        token = existing.token if existing else secrets.token_hex(16)
        if existing is None:
            FileMark.objects.using(alias).create(token=token, created_at=timezone.now())
    record.token = token
    record.identity = identity(Path(record.path))
    record.save(update_fields=["token", "identity"])


def record(*, user: User, path: Path, alias: str, origin: str, claimed_directory: str = "") -> OwnedFile:
    """Record the file at ``path`` (open as ``alias``) as the user's own (made here, or adopted), marking it when it
    has no mark yet."""
    real = path.resolve()
    existing = FileMark.objects.using(alias).order_by("id").first()
    defaults = {"token": existing.token if existing else "", "identity": identity(real), "origin": origin,
                "claimed_directory": one_line(claimed_directory, 4096)}
    try:
        with transaction.atomic(using=GLOBAL):
            owned, _ = OwnedFile.objects.update_or_create(user=user, path=str(real), defaults=defaults)
    except IntegrityError:  # recorded by another process between our read and write
        owned = OwnedFile.objects.get(user=user, path=str(real))
    mark(owned, alias)
    return owned


def record_found(*, user: User, db_path: str) -> None:
    """A project file the user's own registry of the original Pillbox names: theirs, as the files registered before
    marks existed (it gets its mark when first opened)."""
    real = Path(db_path).resolve()
    if not OwnedFile.objects.filter(user=user, path=str(real)).exists():
        try:
            with transaction.atomic(using=GLOBAL):
                OwnedFile.objects.create(user=user, path=str(real), origin=OwnedFile.UPGRADED)
        except IntegrityError:
            pass


def adopt(*, user: User, path: Path, alias: str, claimed_directory: str) -> OwnedFile:
    """The user's record of the file at ``path`` (open as ``alias``): the one they have, else a new one saying it
    was adopted and which directory its bottle named."""
    return Ledger(user).owned(path) or record(user=user, path=path, alias=alias, origin=OwnedFile.ADOPTED,
                                              claimed_directory=claimed_directory)


@dataclass(frozen=True)
class Look:
    """What a person is shown of a memory before adopting it (every text shaped: it is anyone's file)."""

    bottles: list[str]
    prescriptions: int
    pills: int
    titles: list[str]  # the newest live pills' compounds and titles


def look(path: Path, *, titles: int = 10) -> Look:
    """A judged file's bottles, counts and newest pill titles, read under the deadline. Unsafe (IncompatibleDb)
    when it holds what this Pillbox never writes."""
    real = path.resolve()
    judge_file(real)
    try:
        with closing(deadlines.read_only(real)) as conn:
            bottles = [f"{one_line(name)} ({one_line(display)}), its directory named as {one_line(directory, 300)}"
                       for name, display, directory in conn.execute(
                           "SELECT name, display_name, directory FROM pillbox_bottle ORDER BY id LIMIT 20")]
            prescriptions = conn.execute("SELECT COUNT(*) FROM pillbox_prescription WHERE deleted_at IS NULL")
            prescription_count = int(prescriptions.fetchone()[0])
            pills = int(conn.execute("SELECT COUNT(*) FROM pillbox_pill WHERE deleted_at IS NULL").fetchone()[0])
            newest = [f"[{one_line(compound, 64)}] {one_line(title)}" for compound, title in conn.execute(
                "SELECT compound, title FROM pillbox_pill WHERE deleted_at IS NULL ORDER BY seq DESC LIMIT ?",
                (titles,))]
    except sqlite3.DatabaseError as exc:
        if deadlines.interrupted(exc):
            raise deadlines.stopped(str(real)) from None
        raise IncompatibleDb(f"{real} cannot be read as a Pillbox memory ({one_line(str(exc), 200)}).",
                             db_path=str(real)) from None
    return Look(bottles=bottles, prescriptions=prescription_count, pills=pills, titles=newest)
