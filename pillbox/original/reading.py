"""Reading a file of the original: every row of its tables parsed into ours, in one read transaction, each text
cleaned and cut as the tools would take it."""

from __future__ import annotations

import re
import sqlite3
import uuid
from contextlib import closing
from datetime import UTC, datetime

from pillbox import ids
from pillbox.limits import COMPOUND_LIMIT, CONTENT_LIMIT, NAME_LIMIT
from pillbox.models import Bottle, Capsule, OriginalImport, Pill, Prescription
from pillbox.original.files import AGAIN, KNOWN_VERSIONS, Found, ImportFailed, RegistryEntry, Snapshot
from pillbox.original.judge import judge_size
from pillbox.original.recognise import read_only, unreadable

# Terminal control sequences (CSI: ESC [ … final byte; OSC, DCS, PM, APC: ESC ] … up to BEL or ESC \; and any
# other two-character escape; an unended string only loses its ESC and the letter after it) go whole, then
# every control character the tools refuse in their input.
ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b.?|\x9b[0-?]*[ -/]*[@-~]?",
                     re.DOTALL)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # Cc, newline and tab aside


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


def read(found: Found) -> Snapshot:
    """Every bottle, prescription, pill, capsule and registry entry of the file, parsed; ImportFailed if any
    row cannot be taken as it is (then nothing of the file is imported)."""
    _check_version(found)
    snapshot = Snapshot(found=found)
    try:
        with closing(read_only(found.path)) as conn:
            conn.execute("BEGIN")  # one read transaction: a consistent picture while the original may write
            judge_size(conn, found)
            _read_rows(conn, snapshot)
            conn.rollback()
    except sqlite3.DatabaseError as exc:
        raise unreadable(found.path, exc) from None
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
