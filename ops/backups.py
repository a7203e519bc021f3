"""Backups of every database the site writes, and one user's data as JSON.

``backup``: the global database and every registered local bottle database, each copied with SQLite's online
backup API (a consistent snapshot of a live file: writers keep writing meanwhile). Read transactions are opened on
every file before the first copy starts, so each copy is the file as it was at that moment, however long the
copies take. A ``manifest.json`` lists every copy with where it came from, its bottles and its SHA-256. With
PostgreSQL the global database is dumped with ``pg_dump`` (run if it is installed, else the command is printed).

``restore``: the copies back where they came from, through the same backup API (so a running server sees a
consistent file); it refuses to overwrite anything unless forced.

``export_user`` / ``import_user``: one user's todos, capsules and registered bottles (with their prescriptions and
pills, from whichever database holds them) as JSON, every column kept (ids, timestamps at full precision,
soft-delete state), so that import after export gives back exactly the same rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import uuid
from collections.abc import Callable, Iterable
from contextlib import ExitStack, closing
from datetime import date, datetime
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connections, models, transaction
from django.utils import timezone

from accounts.models import Account
from base.files import write_atomically
from base.private import FILE_MODE, private_db_file, private_dir
from pillbox.databases import open_local
from pillbox.global_db import GLOBAL
from pillbox.models import Bottle, Capsule, Pill, Prescription, Registration
from todos.models import Todo

FORMAT = 1
MANIFEST = "manifest.json"


class BackupError(Exception):
    """Something a person must sort out (a missing file, a target that would be overwritten)."""


# ---------------------------------------------------------------- databases


def _global_settings() -> dict[str, Any]:
    return connections[GLOBAL].settings_dict


def _is_sqlite() -> bool:
    engine: str = _global_settings()["ENGINE"]
    return engine.endswith("sqlite3")


def _global_file() -> Path | None:
    """The global database's file, or None when it is not a plain file (an in-memory test database)."""
    name = str(_global_settings()["NAME"])
    if name.startswith("file:") or name == ":memory:":
        return None
    return Path(name)


def _open_global() -> tuple[sqlite3.Connection, bool]:
    """A connection to the global SQLite database, and whether we opened it (and so must close it)."""
    path = _global_file()
    if path is not None:
        return sqlite3.connect(path, timeout=60, isolation_level=None), True
    connections[GLOBAL].ensure_connection()
    return connections[GLOBAL].connection, False


def local_databases() -> list[Path]:
    """Every local bottle database some user has registered, whose file exists."""
    paths = {
        Path(path)
        for path in Registration.objects.filter(scope=Bottle.SCOPE_LOCAL)
        .exclude(db_path="")
        .values_list("db_path", flat=True)
    }
    return sorted(path for path in paths if path.is_file())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _copy(source: sqlite3.Connection, target: Path) -> None:
    if os.path.lexists(target):  # never written through whatever stands there (a link could point anywhere)
        raise BackupError(f"{target} exists already; choose a new directory")
    private_db_file(target)  # a copy holds what the original does (sessions, keys' hashes): its owner's only
    with closing(sqlite3.connect(target)) as copy:
        source.backup(copy)
        status = copy.execute("PRAGMA integrity_check").fetchone()[0]
    if status != "ok":
        raise BackupError(f"the copy {target} failed its integrity check: {status}")


def _bottle_ids(connection: sqlite3.Connection) -> list[str]:
    try:
        return [str(uuid.UUID(row[0])) for row in connection.execute("SELECT id FROM pillbox_bottle ORDER BY id")]
    except sqlite3.DatabaseError:
        return []


def pg_dump_command(target: Path) -> list[str]:
    db = _global_settings()
    command = ["pg_dump", "--format=custom", "--no-owner", f"--file={target}"]
    for flag, key in (("--host", "HOST"), ("--port", "PORT"), ("--username", "USER")):
        if db.get(key):
            command.append(f"{flag}={db[key]}")
    return [*command, str(db["NAME"])]


def backup(dest: Path, *, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Copy every database into ``dest`` (created; it must not hold a backup already) and write the manifest."""
    dest = dest.resolve()
    if (dest / MANIFEST).exists():
        raise BackupError(f"{dest} already holds a backup; choose a new directory")
    if not dest.exists():
        private_dir(dest)  # a directory the person named and that exists already keeps its mode
    private_dir(dest / "local")
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "created_at": timezone.now().isoformat(),
        "global": None,
        "locals": [],
    }
    locals_ = local_databases()
    with ExitStack() as stack:
        sources: list[tuple[str, Path | None, sqlite3.Connection]] = []
        if _is_sqlite():
            connection, opened = _open_global()
            if opened:
                stack.callback(connection.close)
            sources.append(("global", _global_file(), connection))
        for local in locals_:
            sources.append(
                ("local", local, stack.enter_context(closing(sqlite3.connect(local, timeout=60, isolation_level=None))))
            )
        # Every file's snapshot is fixed before the first copy starts.
        for _, _, connection in sources:
            if not connection.in_transaction:
                connection.execute("BEGIN")
                stack.callback(connection.execute, "ROLLBACK")
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        for index, (kind, path, connection) in enumerate(sources):
            file = "global.db" if kind == "global" else f"local/{index:03d}.db"
            _copy(connection, dest / file)
            entry = {
                "file": file,
                "path": str(path) if path else None,
                "sha256": _sha256(dest / file),
                "bottles": _bottle_ids(connection),
            }
            if kind == "global":
                manifest["global"] = {"engine": "sqlite", **entry}
            else:
                manifest["locals"].append(entry)
            say(f"copied {path or 'the global database'} -> {dest / file}")
    if not _is_sqlite():
        command = pg_dump_command(dest / "global.dump")
        manifest["global"] = {"engine": "postgresql", "file": None, "command": shlex.join(command)}
        if shutil.which("pg_dump"):
            env = {"PGPASSWORD": str(_global_settings().get("PASSWORD") or "")}
            subprocess.run(command, check=True, env={**os.environ, **env})
            (dest / "global.dump").chmod(FILE_MODE)
            manifest["global"]["file"] = "global.dump"
            say(f"dumped the PostgreSQL database -> {dest / 'global.dump'}")
        else:
            say(
                "PostgreSQL: pg_dump is not installed here; back the global database up with:\n  "
                + shlex.join(command)
                + "\n(restore it with pg_restore --clean --dbname=...)"
            )
    write_atomically(dest / MANIFEST, json.dumps(manifest, indent=2) + "\n", mode=FILE_MODE)
    return manifest


def read_manifest(source: Path) -> dict[str, Any]:
    try:
        manifest: dict[str, Any] = json.loads((source / MANIFEST).read_text())
    except FileNotFoundError:
        raise BackupError(f"{source} holds no {MANIFEST}: not a backup made by `manage.py backup`") from None
    if manifest.get("format") != FORMAT:
        raise BackupError(f"{source}: unknown backup format {manifest.get('format')!r}")
    for entry in [manifest["global"], *manifest["locals"]]:
        if entry and entry.get("file") and entry.get("sha256"):
            if _sha256(source / entry["file"]) != entry["sha256"]:
                raise BackupError(f"{source / entry['file']} does not match its checksum: the backup is damaged")
    return manifest


def restore(source: Path, *, force: bool = False, say: Callable[[str], None] = print) -> list[str]:
    """Put every copy back where it came from; refuses to overwrite existing databases unless ``force``."""
    source = source.resolve()
    manifest = read_manifest(source)
    glob = manifest["global"]
    if glob and glob["engine"] == "sqlite" and not _is_sqlite():
        raise BackupError("the backup holds a SQLite global database but this site runs on PostgreSQL")
    existing = [entry["path"] for entry in manifest["locals"] if Path(entry["path"]).exists()]
    if glob and glob["engine"] == "sqlite" and ((file := _global_file()) is None or file.exists()):
        existing.insert(0, str(_global_file() or "the global database"))
    if existing and not force:
        raise BackupError("restoring would overwrite " + ", ".join(existing) + "; pass --force to overwrite")
    restored = []
    if glob and glob["engine"] == "sqlite":
        connections.close_all()
        target, opened = _open_global()
        try:
            with closing(sqlite3.connect(source / glob["file"])) as copy:
                copy.backup(target)
        finally:
            if opened:
                target.close()
        restored.append(str(_global_file() or "the global database"))
    elif glob:
        say(
            f"PostgreSQL: restore the global database with pg_restore --clean from {source / 'global.dump'} "
            f"(made by: {glob['command']})"
        )
    for entry in manifest["locals"]:
        path = Path(entry["path"])
        private_dir(path.parent)
        private_db_file(path)
        with (
            closing(sqlite3.connect(source / entry["file"])) as copy,
            closing(sqlite3.connect(path, timeout=60)) as target,
        ):
            copy.backup(target)
        restored.append(str(path))
    for done in restored:
        say(f"restored {done}")
    return restored


# ---------------------------------------------------------------- one user's data as JSON


def _encode(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()  # full precision (DjangoJSONEncoder would cut microseconds)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _row(obj: models.Model, *, skip: Iterable[str] = ()) -> dict[str, Any]:
    skipped = set(skip)
    return {f.attname: _encode(getattr(obj, f.attname)) for f in obj._meta.concrete_fields if f.attname not in skipped}


def _fields(model: type[models.Model], data: dict[str, Any]) -> dict[str, Any]:
    by_name = {f.attname: f for f in model._meta.concrete_fields}
    unknown = set(data) - set(by_name)
    if unknown:
        raise BackupError(f"{model.__name__}: unknown fields {sorted(unknown)}")
    return {name: by_name[name].to_python(value) for name, value in data.items()}


def export_user(username: str) -> dict[str, Any]:
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise BackupError(f"there is no user {username!r}")
    account = Account.objects.filter(user=user).first()
    bottles = []
    for registration in Registration.objects.filter(user=user).order_by("name", "id"):
        entry: dict[str, Any] = {
            "registration": _row(registration, skip=("id", "user_id")),
            "bottle": None,
            "prescriptions": [],
            "pills": [],
        }
        alias = GLOBAL if registration.scope == Bottle.SCOPE_GLOBAL else None
        if alias is None and registration.db_path and Path(registration.db_path).is_file():
            alias = open_local(Path(registration.db_path))
        bottle = Bottle.objects.using(alias).filter(pk=registration.bottle_id).first() if alias else None
        if bottle is not None:
            entry["bottle"] = _row(bottle)
            entry["prescriptions"] = [
                _row(rx) for rx in Prescription.objects.using(alias).filter(bottle=bottle).order_by("id")
            ]
            entry["pills"] = [
                _row(pill) for pill in Pill.objects.using(alias).filter(prescription__bottle=bottle).order_by("id")
            ]
        bottles.append(entry)
    return {
        "format": FORMAT,
        "user": {
            "username": user.get_username(),
            "email": getattr(user, "email", ""),
            "uid": account.uid if account else None,
            "max_tasks": account.max_tasks if account else None,
        },
        "todos": [_row(todo, skip=("id", "owner_id")) for todo in Todo.objects.filter(owner=user).order_by("key")],
        "capsules": [
            _row(capsule, skip=("owner_id",)) for capsule in Capsule.objects.filter(owner=user).order_by("id")
        ],
        "bottles": bottles,
    }


def _upsert(model: type[models.Model], alias: str, lookup: dict[str, Any], values: dict[str, Any]) -> None:
    manager = model._default_manager.using(alias)
    if not manager.filter(**lookup).update(**values):
        manager.create(**lookup, **values)


def import_user(data: dict[str, Any]) -> dict[str, int]:
    """Create or update the user's rows from an export (idempotent); returns counts per kind."""
    if data.get("format") != FORMAT:
        raise BackupError(f"unknown export format {data.get('format')!r}")
    person = data["user"]
    User = get_user_model()
    counts = {"todos": 0, "capsules": 0, "bottles": 0, "prescriptions": 0, "pills": 0}
    with transaction.atomic(using=GLOBAL):
        user, created = User.objects.get_or_create(
            username=person["username"], defaults={"email": person.get("email") or ""}
        )
        if created:
            user.set_unusable_password()
            user.save()
        account = Account.objects.filter(user=user).first()
        if person.get("uid") and (account is None or account.uid != person["uid"]):
            if Account.objects.filter(uid=person["uid"]).exclude(user=user).exists():
                raise BackupError(f"the uid {person['uid']} belongs to another user here")
            if account is None:
                account = Account.objects.create(user=user, uid=person["uid"])
            else:
                Account.objects.filter(pk=account.pk).update(uid=person["uid"])
        if person.get("max_tasks") is not None:
            Account.objects.filter(user=user).update(max_tasks=person["max_tasks"])
        for todo in data["todos"]:
            values = _fields(Todo, todo)
            _upsert(Todo, GLOBAL, {"owner": user, "key": values.pop("key")}, values)
            counts["todos"] += 1
        for capsule in data["capsules"]:
            values = _fields(Capsule, capsule)
            capsule_id = values.pop("id")
            if Capsule.objects.filter(pk=capsule_id).exclude(owner=user).exists():
                raise BackupError(f"the capsule {capsule_id} belongs to another user here")
            _upsert(Capsule, GLOBAL, {"id": capsule_id}, {**values, "owner": user})
            counts["capsules"] += 1
        for entry in data["bottles"]:
            registration = _fields(Registration, entry["registration"])
            _upsert(Registration, GLOBAL, {"user": user, "bottle_id": registration.pop("bottle_id")}, registration)
            if entry["bottle"] is None:
                continue
            if registration["scope"] == Bottle.SCOPE_GLOBAL:
                alias = GLOBAL
            else:
                alias = open_local(Path(registration["db_path"]), create=True)
            with transaction.atomic(using=alias):
                for model, rows, kind in (
                    (Bottle, [entry["bottle"]], "bottles"),
                    (Prescription, entry["prescriptions"], "prescriptions"),
                    (Pill, entry["pills"], "pills"),
                ):
                    for row in rows:
                        values = _fields(model, row)
                        _upsert(model, alias, {"id": values.pop("id")}, values)
                        counts[kind] += 1
    return counts


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
