"""Memory written by the original Pillbox (the Rust core with its Node MCP front), brought across.

The original keeps its files exactly where we keep ours: ``~/.pillbox/pillbox.db`` (global: capsules, global
bottles, its registry of projects) and ``<project>/.pillbox/pillbox.db`` (one local bottle). A file is
recognised by its tables and its ``schema_migrations``, never by its path. The first time one is met, its rows
are copied into our tables — same ids, timestamps, views, authors and soft-delete state — in one transaction
that also writes a record of what was copied, so it happens once per file.

The original's tables are only ever read, through a read-only connection, and never altered: no renames, no
triggers, no rows. Our tables live beside them in the same file (a local file always had to hold ours; the
global file does too when ``PILLBOX_HOME`` is ``~/.pillbox``), and the original ignores tables it does not know,
so its binary keeps working on its file. From the import on, the two copies are independent.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import uuid
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.utils import DatabaseError, OperationalError, ProgrammingError
from django.utils import timezone

from base.lru import BoundedLru
from pillbox import ids
from pillbox.exceptions import IncompatibleDb
from pillbox.models import Bottle, Capsule, OriginalImport, Pill, Prescription, Registration

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger("pillbox")

GLOBAL = "default"
ORIGINAL_TABLES = frozenset({"bottles", "prescriptions", "pills", "schema_migrations"})
GLOBAL_TABLES = frozenset({"capsules", "registered_bottles"})
KNOWN_VERSIONS = frozenset({1})
RECORD_TABLE = OriginalImport._meta.db_table
CHUNK = 500
AGAIN = "then run `manage.py import_original` again"
# What a file of the original may hold and still be read (issue 23: a 72 KB file whose generated column makes
# 200 MB a row). Its rows per table are held to the user's quotas (PILLBOX_QUOTAS), its tables' stored bytes to
# PILLBOX_IMPORT_MAX_BYTES, and each text to the tools' own limits (longer is cut, as a compound always was).
CONTENT_LIMIT = 5000  # the tools' limit on a pill's or capsule's content (pillbox.tools takes it from here)
NAME_LIMIT = 255
COMPOUND_LIMIT = 64
QUOTA_OF = {"bottles": "bottles", "prescriptions": "prescriptions", "pills": "pills", "capsules": "capsules",
            "registered_bottles": "bottles"}
# The original's own triggers (they keep its full-text index in step with its rows, and fire only when the
# original writes them, which this module never does). Any other trigger in its file is refused: it could fire on
# our writes into the same file.
ORIGINAL_TRIGGERS = frozenset({(f"{table}_a{event}", table) for table in ("pills", "capsules") for event in "iud"})
# Terminal control sequences (CSI: ESC [ … final byte; OSC, DCS, PM, APC: ESC ] … up to BEL or ESC \; and any
# other two-character escape; an unended string only loses its ESC and the letter after it) go whole, then
# every control character the tools refuse in their input.
ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b.?|\x9b[0-?]*[ -/]*[@-~]?",
                     re.DOTALL)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # Cc, newline and tab aside
READ_TABLES = ORIGINAL_TABLES | GLOBAL_TABLES


class ImportFailed(IncompatibleDb):
    """A file of the original Pillbox that cannot be brought across; nothing of it was written."""


class Refused(ImportFailed):
    """A file holding the original's tables in a shape the original never writes, or more than one may import
    (``_judge_tables``, ``_judge_triggers``, ``_judge_size``)."""


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


# ---------------------------------------------------------------- telling the agent, once


class News:
    """What the imports of one tool call did, for the first lines of its answer."""

    def __init__(self) -> None:
        self.counts = Counts()
        self.failures: list[str] = []

    def lines(self) -> list[str]:
        done = [f"imported from the original Pillbox: {self.counts.phrase()}"] if self.counts else []
        return done + [f"not imported from the original Pillbox: {failure}" for failure in self.failures]

    def before(self, text: str) -> str:
        lines = self.lines()
        return "\n".join(lines) + "\n\n" + text if lines else text

    def after(self, text: str) -> str:
        lines = self.lines()
        return text + "\n\n" + "\n".join(lines) if lines else text


_news: ContextVar[News | None] = ContextVar("pillbox_original_news", default=None)


@contextmanager
def announcements() -> Iterator[News]:
    """Collect what imports happen inside the block (outside one, they are only logged)."""
    news = News()
    token = _news.set(news)
    try:
        yield news
    finally:
        _news.reset(token)


def _announce(counts: Counts) -> None:
    if (news := _news.get()) is not None:
        news.counts = news.counts + counts


# What a process has already said or checked, per file: bounded, as every in-process memory of a server is (a
# forgotten entry is only said or checked again).
_told: BoundedLru[str, bool] = BoundedLru(max_items=1024, max_bytes=1 << 20)


def announce_failure(error: ImportFailed) -> None:
    """A file that could not be imported while others were: told once per process (it is retried on every
    call, and an agent needs to hear it once, not in every answer)."""
    if error.message in _told:
        return
    _told.put(error.message, True, size=len(error.message))
    logger.warning("%s", error.message)
    if (news := _news.get()) is not None:
        news.failures.append(error.message)


# ---------------------------------------------------------------- recognising a file


def _read_only(path: Path) -> sqlite3.Connection:
    # mode=ro: whatever happens here, this connection cannot write to the original's file.
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=60)


def _unreadable(path: Path, reason: object) -> ImportFailed:
    return ImportFailed(
        f"{path} could not be read ({reason}); check that it is readable or restore it from a backup, {AGAIN}. "
        "Nothing was imported from it and it was not changed.",
        db_path=str(path),
    )


def _openable(path: Path) -> None:
    """ImportFailed naming why, when the file cannot even be opened for reading (its mode or owner forbid it):
    SQLite would only say it is "unable to open database file".

    Asked of access(2), never by opening the file: the file may be a database this process already has open
    through SQLite (our global file is the original's by default), and closing another descriptor of it drops
    every POSIX lock the process holds on it, SQLite's included. After that the process's connections stopped
    seeing what other processes wrote (the SQLite documentation warns it can corrupt the file)."""
    if not os.access(path, os.R_OK):
        reason = "permission denied" if path.exists() else "no such file or directory"
        raise _unreadable(path, reason)


def recognise(path: Path) -> Found | None:
    """The original Pillbox's file at ``path``, or None when the file is something else.

    Raises ImportFailed when the file exists but cannot be read as a database at all.
    """
    _openable(path)
    return _recognise_openable(path)


def _recognise_openable(path: Path) -> Found | None:
    """``recognise`` for a file already known to open."""
    try:
        with closing(_read_only(path)) as conn:
            # A view in place of one of its tables still makes the file the original's: read() refuses it.
            tables = {name for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
            if not ORIGINAL_TABLES <= tables:
                return None
            _judge_tables(conn, path)
            version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
            recorded = RECORD_TABLE in tables and bool(
                conn.execute(f"SELECT 1 FROM {RECORD_TABLE} WHERE kind = ? LIMIT 1",
                             (OriginalImport.KIND_LOCAL,)).fetchone()
            )
            if not recorded:  # once imported, the file holds our tables and their triggers
                _judge_triggers(conn, path)
    except sqlite3.DatabaseError as exc:
        raise _unreadable(path, exc) from None
    kind = OriginalImport.KIND_GLOBAL if GLOBAL_TABLES <= tables else OriginalImport.KIND_LOCAL
    return Found(path=path, kind=kind, version=int(version or 0), recorded=recorded)


def is_original(path: Path) -> bool:
    try:
        return recognise(path) is not None
    except ImportFailed:
        return False


_global_originals: BoundedLru[tuple[str, int, int], bool] = BoundedLru(max_items=4096, max_bytes=4 << 20)


def is_global_original(path: Path) -> bool:
    """Whether ``path`` is the original's global file (never a project's database, whatever its place).

    Asked on every walk up from the working directory, so the answer is kept per file (a file does not turn
    into the original's global database)."""
    try:
        stat = path.stat()
    except (OSError, ValueError):
        return False
    key = (str(path), stat.st_dev, stat.st_ino)
    known = _global_originals.get(key)
    if known is None:
        try:
            found = recognise(path)
        except ImportFailed:
            return False
        known = found is not None and found.kind == OriginalImport.KIND_GLOBAL
        _global_originals.put(key, known, size=len(key[0]))
    return known


def _check_version(found: Found) -> None:
    if found.version in KNOWN_VERSIONS:
        return
    newest = max(KNOWN_VERSIONS)
    if found.version > newest:
        raise ImportFailed(
            f"{found.path} was written by a newer version of the original Pillbox (its schema version "
            f"{found.version}; this Pillbox imports version {newest}); upgrade Pillbox to import it. "
            "Nothing was imported from it and it was not changed.",
            db_path=str(found.path),
        )
    raise ImportFailed(
        f"{found.path} records no schema version this Pillbox knows ({found.version}); open it once with the "
        f"original Pillbox so it finishes its own migrations, {AGAIN}. Nothing was imported from it.",
        db_path=str(found.path),
    )


def only_our_constraints(sender: object, connection: Any, **kwargs: object) -> None:
    """Django checks every table's foreign keys after each SQLite migration; in a file shared with the original,
    an orphan row of the original's (it runs with foreign keys unenforced) must not stop our schema from being
    created beside it. Connected to ``connection_created``: the check then covers our tables only."""
    if connection.vendor != "sqlite":
        return
    check_all = connection.check_constraints

    def check_ours(table_names: list[str] | None = None) -> None:
        if table_names is None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")
                tables = [name for (name,) in cursor.fetchall()]
            theirs = ORIGINAL_TABLES | GLOBAL_TABLES
            if any(name in theirs for name in tables):
                table_names = [name for name in tables if name not in theirs]
        check_all(table_names)

    connection.check_constraints = check_ours


# ---------------------------------------------------------------- reading a file


class _BadRow(Exception):
    def __init__(self, table: str, row_id: object, reason: str) -> None:
        super().__init__(f"{table} {row_id}: {reason}")


def _uuid(table: str, value: object) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError):
        raise _BadRow(table, value, "the id is not a UUID") from None


def _moment(table: str, row_id: object, column: str, value: object) -> datetime | None:
    if value is None:
        return None
    try:
        if isinstance(value, int | float):
            return datetime.fromtimestamp(value, UTC)
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except (ValueError, OSError, OverflowError):
        raise _BadRow(table, row_id, f"{column} is not a date ({value!r})") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _required(table: str, row_id: object, column: str, value: object) -> datetime:
    moment = _moment(table, row_id, column, value)
    if moment is None:
        raise _BadRow(table, row_id, f"{column} is empty")
    return moment


def _views(table: str, row_id: object, value: int | float | str | bytes | None) -> int:
    try:
        return max(int(value or 0), 0)
    except (TypeError, ValueError):
        raise _BadRow(table, row_id, f"views is not a number ({value!r})") from None


def _text(value: object, limit: int, *, lines: bool = False) -> str:
    """A text of the file as the tools would take it: terminal control sequences and control characters
    removed (newline and tab kept in a text of several ``lines``, else made spaces), at most ``limit``
    characters. The original allows NULL authors (unknown: stays empty) and longer texts than ours (cut)."""
    if value is None:
        return ""
    # Bytes from _cut: a character its cut went through is dropped, as is anything that is not UTF-8.
    text = value.decode("utf-8", "ignore") if isinstance(value, bytes) else str(value)
    text = CONTROL.sub("", ESCAPES.sub("", text if lines else text.replace("\n", " ").replace("\t", " ")))
    return text[:limit]


def _cut(column: str, limit: int) -> str:
    """A text column read no longer than it will be kept (a huge row never reaches Python whole), as bytes: SQLite's
    text functions stop at a NUL, which would lose what follows it. Up to 4 bytes a character in UTF-8."""
    return f"substr(CAST({column} AS BLOB), 1, {4 * limit})"


FOREIGN = "The original Pillbox never writes such a file; remove it or ask whoever made it"
TOO_MUCH = f"Raise the limit named (or ask the operator to), {AGAIN}"


def _refused(path: Path, what: str, remedy: str = FOREIGN) -> Refused:
    return Refused(
        f"{path} cannot be imported safely: {what}. {remedy}. Nothing was imported from it and it was not changed.",
        db_path=str(path),
    )


def _judge_tables(conn: sqlite3.Connection, path: Path) -> None:
    """Refused when the tables read here (the original's, our record of an import) are not plain tables of plain
    columns: a view or a virtual table in place of one, or a generated or hidden column, is computed when read
    (``printf('%.*c', 200000000, 'x')`` makes 200 MB of every row). Asked before any of its rows is read."""
    read = READ_TABLES | {RECORD_TABLE}
    present = set()
    for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'view')"):
        if name in read and kind == "view":
            raise _refused(path, f"its {name} is a view, not a table")
        if name in read and (sql or "").lstrip().upper().startswith("CREATE VIRTUAL"):
            raise _refused(path, f"its {name} is a virtual table, not a table")
        if name in read:
            present.add(name)
    for table in sorted(present):
        for column in conn.execute(f'PRAGMA table_xinfo("{table}")'):
            if column[6]:  # hidden: 1 hidden, 2 generated (virtual), 3 generated (stored)
                raise _refused(path, f"the column {column[1]} of its {table} table is generated or hidden")


def _judge_triggers(conn: sqlite3.Connection, path: Path) -> None:
    """Refused when a file about to be imported holds a trigger the original does not make: it would fire on our
    writes into the same file (our schema, then the copied rows)."""
    from pillbox.databases import global_db_file

    # Our own global database may be this very file (PILLBOX_HOME = ~/.pillbox): our tables' triggers are ours.
    ours = path.resolve() == global_db_file()
    for name, table in conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger'"):
        if (name, table) not in ORIGINAL_TRIGGERS and (table in READ_TABLES or not ours):
            raise _refused(path, f"it holds a trigger the original does not make ({name} on {table})")


def _judge_size(conn: sqlite3.Connection, found: Found) -> None:
    """Refused when the file holds more than one may import: more stored bytes than ``PILLBOX_IMPORT_MAX_BYTES``
    in the original's tables, or more rows of a kind than the user's quota of it."""
    present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} & READ_TABLES
    limit = settings.PILLBOX_IMPORT_MAX_BYTES
    if limit and (stored := _stored_bytes(conn, found, present)) > limit:
        raise _refused(found.path, f"its tables hold {stored:,} bytes, over the {limit:,} this Pillbox reads from one "
                              "file (PILLBOX_IMPORT_MAX_BYTES)", TOO_MUCH)
    for table in sorted(present & set(QUOTA_OF)):
        count = conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
        kind = QUOTA_OF[table]
        allowed = settings.PILLBOX_QUOTAS[kind]
        if allowed and count > allowed:
            raise _refused(found.path, f"its {table} table holds {count:,} rows, over the {allowed:,} {kind} a "
                                       "user may have (PILLBOX_QUOTAS)", TOO_MUCH)


def _stored_bytes(conn: sqlite3.Connection, found: Found, tables: set[str]) -> int:
    """The bytes the original's tables take in the file (their pages, overflow included); the whole file when
    this SQLite has no ``dbstat``."""
    marks = ", ".join("?" * len(tables))
    try:
        return int(conn.execute(f"SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name IN ({marks})",
                                sorted(tables)).fetchone()[0])
    except sqlite3.OperationalError:
        return found.path.stat().st_size


def read(found: Found) -> Snapshot:
    """Every bottle, prescription, pill, capsule and registry entry of the file, parsed; ImportFailed if any
    row cannot be taken as it is (then nothing of the file is imported)."""
    _check_version(found)
    snapshot = Snapshot(found=found)
    try:
        with closing(_read_only(found.path)) as conn:
            conn.execute("BEGIN")  # one read transaction: a consistent picture while the original may write
            _judge_size(conn, found)
            _read_rows(conn, snapshot)
            conn.rollback()
    except sqlite3.DatabaseError as exc:
        raise _unreadable(found.path, exc) from None
    except _BadRow as exc:
        raise ImportFailed(
            f"{found.path} holds a row that cannot be imported ({exc}); correct or discard it with the original "
            f"Pillbox, {AGAIN}. Nothing was imported from it and it was not changed.",
            db_path=str(found.path),
        ) from None
    return snapshot


def _read_rows(conn: sqlite3.Connection, snapshot: Snapshot) -> None:
    is_global = snapshot.found.kind == OriginalImport.KIND_GLOBAL
    # A project's bottle is where its file really is (the project holding .pillbox/), whatever the file claims.
    here = None if is_global else str(snapshot.found.path.resolve().parent.parent)
    for row in conn.execute(f"SELECT id, {_cut('name', NAME_LIMIT)}, {_cut('display_name', NAME_LIMIT)}, "
                            f"{_cut('directory', 4096)}, {_cut('scope', 16)}, created_at, views "
                            "FROM bottles ORDER BY id"):
        row_id, name, display_name, directory, scope, created_at, views = row
        # Everything in the original's global file is a global bottle, and lives in our global database.
        scope = _text(scope, 16)
        scope = Bottle.SCOPE_GLOBAL if is_global else (scope if scope in {"local", "global"} else "local")
        snapshot.bottles.append(Bottle(
            id=_uuid("bottles", row_id), name=_text(name, NAME_LIMIT),
            display_name=_text(display_name or name, NAME_LIMIT), directory=here or _text(directory, 4096),
            scope=scope, created_at=_required("bottles", row_id, "created_at", created_at),
            views=_views("bottles", row_id, views),
        ))
    bottle_ids = {bottle.id for bottle in snapshot.bottles}
    for row in conn.execute(f"SELECT id, bottle_id, {_cut('title', NAME_LIMIT)}, {_cut('author_name', NAME_LIMIT)}, "
                            f"{_cut('author_email', NAME_LIMIT)}, started_at, ended_at, deleted_at, views "
                            "FROM prescriptions ORDER BY id"):
        row_id, bottle_id, title, author_name, author_email, started_at, ended_at, deleted_at, views = row
        if _uuid("prescriptions", bottle_id) not in bottle_ids:
            snapshot.skipped += 1
            continue
        snapshot.prescriptions.append(Prescription(
            id=_uuid("prescriptions", row_id), bottle_id=_uuid("prescriptions", bottle_id),
            title=_text(title, NAME_LIMIT), author_name=_text(author_name, NAME_LIMIT),
            author_email=_text(author_email, NAME_LIMIT),
            started_at=_required("prescriptions", row_id, "started_at", started_at),
            ended_at=_moment("prescriptions", row_id, "ended_at", ended_at),
            deleted_at=_moment("prescriptions", row_id, "deleted_at", deleted_at),
            views=_views("prescriptions", row_id, views),
        ))
    # Our discard of a prescription discards its pills with it (and restoring it brings them back): a pill the
    # original left live under a discarded prescription is hidden the same way.
    discarded_with = {prescription.id: prescription.deleted_at for prescription in snapshot.prescriptions}
    for row in conn.execute(f"SELECT id, prescription_id, {_cut('compound', COMPOUND_LIMIT)}, "
                            f"{_cut('title', NAME_LIMIT)}, {_cut('content', CONTENT_LIMIT)}, "
                            f"{_cut('author_name', NAME_LIMIT)}, {_cut('author_email', NAME_LIMIT)}, "
                            "created_at, updated_at, deleted_at, views FROM pills ORDER BY id"):
        row_id, prescription_id, compound, title, content, author_name, author_email = row[:7]
        created_at, updated_at, deleted_at, views = row[7:]
        if _uuid("pills", prescription_id) not in discarded_with:
            snapshot.skipped += 1
            continue
        pill_id, parent = _uuid("pills", row_id), _uuid("pills", prescription_id)
        created = _required("pills", row_id, "created_at", created_at)
        snapshot.pills.append(Pill(
            id=pill_id, seq=ids.millisecond_of(pill_id), prescription_id=parent,
            compound=_text(compound, COMPOUND_LIMIT), title=_text(title, NAME_LIMIT),
            content=_text(content, CONTENT_LIMIT, lines=True), author_name=_text(author_name, NAME_LIMIT),
            author_email=_text(author_email, NAME_LIMIT), created_at=created,
            updated_at=_moment("pills", row_id, "updated_at", updated_at) or created,
            deleted_at=_moment("pills", row_id, "deleted_at", deleted_at) or discarded_with[parent],
            views=_views("pills", row_id, views),
        ))
    if not is_global:
        return
    for row in conn.execute(f"SELECT id, {_cut('compound', COMPOUND_LIMIT)}, {_cut('title', NAME_LIMIT)}, "
                            f"{_cut('content', CONTENT_LIMIT)}, created_at, updated_at, deleted_at, views "
                            "FROM capsules ORDER BY id"):
        row_id, compound, title, content, created_at, updated_at, deleted_at, views = row
        capsule_id = _uuid("capsules", row_id)
        created = _required("capsules", row_id, "created_at", created_at)
        snapshot.capsules.append(Capsule(
            id=capsule_id, seq=ids.millisecond_of(capsule_id), compound=_text(compound, COMPOUND_LIMIT),
            title=_text(title, NAME_LIMIT), content=_text(content, CONTENT_LIMIT, lines=True), created_at=created,
            updated_at=_moment("capsules", row_id, "updated_at", updated_at) or created,
            deleted_at=_moment("capsules", row_id, "deleted_at", deleted_at), views=_views("capsules", row_id, views),
        ))
    for bottle_id, name, display_name, db_path in conn.execute(
        f"SELECT bottle_id, {_cut('name', NAME_LIMIT)}, {_cut('display_name', NAME_LIMIT)}, {_cut('db_path', 4096)} "
        "FROM registered_bottles ORDER BY id"
    ):
        snapshot.registry.append(RegistryEntry(
            bottle_id=_uuid("registered_bottles", bottle_id), name=_text(name, NAME_LIMIT),
            display_name=_text(display_name or name, NAME_LIMIT), db_path=_text(db_path, 4096),
        ))


# ---------------------------------------------------------------- writing our rows


def _chunks(values: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(values), CHUNK):
        yield values[start:start + CHUNK]


def _existing(model: type[models.Model], alias: str, column: str, values: Iterable[Any]) -> set[Any]:
    found: set[Any] = set()
    for chunk in _chunks(list(values)):
        found.update(model._default_manager.using(alias).filter(**{f"{column}__in": chunk})
                     .values_list(column, flat=True))
    return found


def _new_rows(model: type[models.Model], alias: str, rows: list[Any]) -> list[Any]:
    """The rows whose id the database does not hold yet (a row already there is left as it is)."""
    taken = _existing(model, alias, "id", [row.id for row in rows])
    return [row for row in rows if row.id not in taken]


def _give_free_seqs(model: type[models.Model], alias: str, rows: list[Any]) -> None:
    """``seq`` is the creation millisecond, unique per table; ids the original made in the same millisecond
    (or that meet one of ours) take the next free one, which only the index key ever sees."""
    taken = _existing(model, alias, "seq", [row.seq for row in rows])
    for row in rows:
        while row.seq in taken:
            row.seq += 1
            if _existing(model, alias, "seq", [row.seq]):
                taken.add(row.seq)
        taken.add(row.seq)


def _save(model: type[models.Model], alias: str, rows: list[Any]) -> int:
    # Plain INSERTs, so the full-text triggers on our tables index every row as it arrives.
    model._default_manager.using(alias).bulk_create(rows, batch_size=CHUNK)
    return len(rows)


def _save_memory(alias: str, snapshot: Snapshot) -> Counts:
    bottles = _new_rows(Bottle, alias, snapshot.bottles)
    prescriptions = _new_rows(Prescription, alias, snapshot.prescriptions)
    pills = _new_rows(Pill, alias, snapshot.pills)
    _give_free_seqs(Pill, alias, pills)
    return Counts(bottles=_save(Bottle, alias, bottles), prescriptions=_save(Prescription, alias, prescriptions),
                  pills=_save(Pill, alias, pills), skipped=snapshot.skipped)


def _record(alias: str, snapshot: Snapshot, counts: Counts, username: str) -> None:
    OriginalImport.objects.using(alias).create(
        source=str(snapshot.found.path), kind=snapshot.found.kind, username=username,
        schema_version=snapshot.found.version, imported_at=timezone.now(), bottles=counts.bottles,
        prescriptions=counts.prescriptions, pills=counts.pills, capsules=counts.capsules,
        registrations=counts.registrations, skipped=counts.skipped,
    )


def _log(snapshot: Snapshot, counts: Counts) -> None:
    logger.info("imported %s from the original Pillbox file %s", counts.phrase(), snapshot.found.path)


# ---------------------------------------------------------------- a project's file


def local_snapshot(path: Path) -> Snapshot | None:
    """What the original's project file at ``path`` holds, when it was never imported; None for any other
    file (ours, a global file, or one our own checks will judge). ImportFailed for a file that cannot be."""
    # A file that cannot even be opened (its mode, its owner) is named now: let through, every query on it would
    # fail later, an internal error in each tool that reaches it. Whose file it is cannot be told unread.
    _openable(path)
    try:
        found = _recognise_openable(path)
    except Refused:
        raise
    except ImportFailed:
        return None  # not readable as a database at all: the usual checks on our own files answer that
    if found is None or found.recorded:
        return None
    if found.kind == OriginalImport.KIND_GLOBAL:
        raise ImportFailed(
            f"{path} is the original Pillbox's global database, not a project's: its memory becomes your global "
            "memory (run `manage.py import_original`).",
            db_path=str(path),
        )
    return read(found)


def import_local(snapshot: Snapshot, alias: str) -> Counts | None:
    """Copy a project file's memory into our tables in the same file; None when another process already did."""
    try:
        with transaction.atomic(using=alias):
            if OriginalImport.objects.using(alias).filter(kind=OriginalImport.KIND_LOCAL).exists():
                return None
            counts = _save_memory(alias, snapshot)
            _record(alias, snapshot, counts, username="")
    except IntegrityError:
        if OriginalImport.objects.using(alias).filter(kind=OriginalImport.KIND_LOCAL).exists():
            return None
        raise
    _log(snapshot, counts)
    _announce(counts)
    return counts


# ---------------------------------------------------------------- the global file


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
        "prescriptions": prescriptions.count() + len(_new_rows(Prescription, GLOBAL, snapshot.prescriptions)),
        "pills": pills.count() + len(_new_rows(Pill, GLOBAL, snapshot.pills)),
        "capsules": Capsule.objects.filter(owner=user).count() + len(_new_rows(Capsule, GLOBAL, snapshot.capsules)),
    }
    for kind, total in totals.items():
        allowed = settings.PILLBOX_QUOTAS[kind]
        if allowed and total > allowed:
            raise _refused(snapshot.found.path, f"importing it would give {user.get_username()} {total:,} {kind}, "
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
            counts = _save_memory(GLOBAL, snapshot)
            capsules = _new_rows(Capsule, GLOBAL, snapshot.capsules)
            _give_free_seqs(Capsule, GLOBAL, capsules)
            counts.capsules = _save(Capsule, GLOBAL, capsules)
            counts.registrations, skipped = _register(user, registrations)
            counts.skipped += skipped
            _record(GLOBAL, snapshot, counts, username=user.get_username())
    except IntegrityError:
        if OriginalImport.objects.using(GLOBAL).filter(source=source).exists():
            return None  # another process imported it at the same moment
        raise
    _log(snapshot, counts)
    _announce(counts)
    return counts


def original_global_file() -> Path:
    """Where the original keeps its global file, whatever PILLBOX_HOME says: the home it ran in."""
    return Path.home() / ".pillbox" / "pillbox.db"


def home_candidates() -> list[Path]:
    """Where the original's global file and our own global file (the same one by default) are, as configured."""
    from pillbox.databases import global_db_file

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
            announce_failure(_unreadable(path, exc))
