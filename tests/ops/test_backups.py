"""Backups: `backup` copies the global database and every registered local one (consistent snapshots, manifest,
checksums), `restore` brings them back and refuses to overwrite without --force; `export`/`import` of one user's
data round-trips exactly (ids, timestamps, soft-delete state)."""

from __future__ import annotations

import json
import re
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

import pillbox.tools
import todos.tools
from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller
from ops.backups import export_user
from pillbox.databases import db_file, forget_local_aliases, open_local
from pillbox.global_db import GLOBAL
from pillbox.models import Bottle, Capsule, Pill, Prescription, Registration
from tests.clients import ROOT
from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 - a fixture
from tests.reliability.helpers import make_key, server_env
from todos.models import Todo

AUTHOR = {"author_name": "Ada", "author_email": "ada@example.com"}


def _ok(caller: Caller, toolset: Any, tool: str, **arguments: Any) -> str:
    reply = run_tool(toolset, toolset.by_name[tool], caller, arguments)
    assert not reply.is_error, reply.text
    match = re.search(r"^id: ([0-9a-f]{12})$", reply.text, re.M)
    return match.group(1) if match else ""


def _world(user: Any, project: Path) -> None:
    """A user with a bit of everything: global and local bottles, open/closed/discarded prescriptions, pills live
    and discarded, capsules live and discarded, todos pending, completed and deleted."""
    P, T = pillbox.tools.TOOLSET, todos.tools.TOOLSET
    for caller, scope in (
        (Caller(user=user, transport="http"), "global"),
        (Caller(user=user, transport="stdio", workdir=project), "local"),
    ):
        bottle = _ok(caller, P, "bottle_create", name=f"b-{user.username}-{scope}", display_name="Bé ☕", scope=scope)
        rx = _ok(caller, P, "prescription_open", bottle_id=bottle, title="Open", **AUTHOR)
        gone = _ok(caller, P, "prescription_open", bottle_id=bottle, title="Gone", **AUTHOR)
        kept = _ok(
            caller,
            P,
            "pill_store",
            prescription_id=rx,
            title="Kept",
            content="línea 1\nline 2",
            compound="decision",
            **AUTHOR,
        )
        dropped = _ok(
            caller, P, "pill_store", prescription_id=rx, title="Dropped", content="x", compound="bug", **AUTHOR
        )
        _ok(caller, P, "pill_store", prescription_id=gone, title="With its rx", content="y", compound="bug", **AUTHOR)
        _ok(caller, P, "pill_discard", id=dropped)
        _ok(caller, P, "prescription_discard", id=gone)
        _ok(caller, P, "pill_read", id=kept)  # a view counted
        closed = _ok(caller, P, "prescription_open", bottle_id=bottle, title="Closed", **AUTHOR)
        _ok(caller, P, "prescription_close", id=closed)
    remote = Caller(user=user, transport="http")
    _ok(remote, P, "capsule_store", title="Convention", content="tabs", compound="convention")
    gone = _ok(remote, P, "capsule_store", title="Old", content="spaces", compound="convention")
    _ok(remote, P, "capsule_discard", id=gone)
    for key in ("pending", "done", "deleted"):
        _ok(
            remote,
            T,
            "put_todo",
            id=f"{user.username}-{key}",
            name=key,
            description="**md**",
            priority="high",
            deadlineAt="2026-12-01T10:00:00.123456Z",
            links=["root"],
        )
    _ok(remote, T, "complete_todo", id=f"{user.username}-done")
    _ok(remote, T, "delete_todo", id=f"{user.username}-deleted")


def _rows(project: Path) -> dict[str, list[dict[str, Any]]]:
    local = open_local(db_file(project))
    return {
        "todos": list(Todo.objects.order_by("owner_id", "key").values()),
        "capsules": list(Capsule.objects.order_by("id").values()),
        "registrations": list(Registration.objects.order_by("id").values()),
        **{
            f"{alias}:{model.__name__}": list(model.objects.using(alias).order_by("id").values())
            for alias in (GLOBAL, local)
            for model in (Bottle, Prescription, Pill)
        },
    }


@pytest.fixture
def two_users(alice, bob, tmp_path, monkeypatch, local_bottles_over_http) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    project = tmp_path / "project"
    project.mkdir()
    _world(alice.user, project)
    other = tmp_path / "bobs-project"
    other.mkdir()
    _world(bob.user, other)
    return project


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the global database is PostgreSQL: backed up with pg_dump")
def test_backup_and_restore_bring_every_database_back(two_users, tmp_path):
    project = two_users
    before = _rows(project)
    dest = tmp_path / "backup"
    call_command("backup", str(dest), stdout=open("/dev/null", "w"))
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["global"]["engine"] == "sqlite"
    assert {entry["path"] for entry in manifest["locals"]} == {
        str(db_file(project).resolve()),
        str(db_file(tmp_path / "bobs-project").resolve()),
    }
    for entry in [manifest["global"], *manifest["locals"]]:
        with sqlite3.connect(dest / entry["file"]) as copy:
            assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # The copies hold what the databases do (sessions, key hashes): readable by their owner only.
        assert stat.S_IMODE((dest / entry["file"]).stat().st_mode) == 0o600, entry["file"]
    assert stat.S_IMODE(dest.stat().st_mode) == stat.S_IMODE((dest / "local").stat().st_mode) == 0o700
    with pytest.raises(CommandError, match="already holds a backup"):
        call_command("backup", str(dest))

    # Life goes on after the backup: a new pill, a discarded capsule, a purged todo, a local file lost.
    caller = Caller(user=get_user_model().objects.get(username="alice"), transport="http")
    capsule = Capsule.objects.filter(owner=caller.user, deleted_at__isnull=True).first()
    run_tool(pillbox.tools.TOOLSET, pillbox.tools.TOOLSET.by_name["capsule_discard"], caller, {"id": capsule.id.hex})
    Todo.objects.filter(key="alice-pending").delete()
    assert _rows(project) != before
    forget_local_aliases()
    db_file(project).unlink()
    for leftover in db_file(project).parent.glob("pillbox.db-*"):
        leftover.unlink()

    with pytest.raises(CommandError, match="--force"):
        call_command("restore", str(dest))
    call_command("restore", str(dest), "--force", stdout=open("/dev/null", "w"))
    forget_local_aliases()
    assert _rows(project) == before
    assert stat.S_IMODE(db_file(project).stat().st_mode) == 0o600  # a restored file is as private as a new one


def test_restore_refuses_a_damaged_backup(two_users, tmp_path):
    dest = tmp_path / "backup"
    call_command("backup", str(dest), stdout=open("/dev/null", "w"))
    manifest = json.loads((dest / "manifest.json").read_text())
    with (dest / manifest["locals"][0]["file"]).open("r+b") as handle:
        handle.seek(200)
        handle.write(b"\x00garbage")
    with pytest.raises(CommandError, match="checksum"):
        call_command("restore", str(dest), "--force")


def test_export_then_import_round_trips_one_user_exactly(two_users, tmp_path):
    project = two_users
    before = _rows(project)
    exported = tmp_path / "alice.json"
    call_command("export", "alice", str(exported))
    first = json.loads(exported.read_text())
    assert {len(first["todos"]), len(first["capsules"]), len(first["bottles"])} == {3, 2}
    assert all(entry["pills"] for entry in first["bottles"])

    # Alice disappears from this installation: her user (todos, capsules, registrations) and her bottles.
    bottle_ids = [entry["bottle"]["id"] for entry in first["bottles"]]
    get_user_model().objects.filter(username="alice").delete()
    for alias in (GLOBAL, open_local(db_file(project))):
        Bottle.objects.using(alias).filter(id__in=bottle_ids).delete()
    assert _rows(project) != before

    call_command("import", str(exported), stdout=open("/dev/null", "w"))
    call_command("import", str(exported), stdout=open("/dev/null", "w"))  # idempotent
    after = _rows(project)
    new_alice = get_user_model().objects.get(username="alice")
    old_alice_id = first_owner_id(before)

    def same(rows: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
        # Row keys of the user and of her registrations and todos are local to an installation; all else is kept.
        out = {}
        for name, values in rows.items():
            out[name] = sorted(
                (
                    {
                        key: (
                            ("ALICE" if value in (old_alice_id, new_alice.pk) else value)
                            if key in ("owner_id", "user_id")
                            else value
                        )
                        for key, value in row.items()
                        if not (name in ("todos", "registrations") and key == "id")
                    }
                    for row in values
                ),
                key=repr,
            )
        return out

    assert same(after) == same(before)
    assert export_user("alice") == first


def first_owner_id(rows: dict[str, list[dict[str, Any]]]) -> int:
    return next(row["owner_id"] for row in rows["todos"] if row["key"].startswith("alice-"))


def test_backup_and_restore_commands_on_real_files(tmp_path):
    """The commands as an operator runs them, on the files of a data directory."""
    home = tmp_path / "home"
    make_key(home, "ops")
    dest = tmp_path / "backup"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            cwd=ROOT,
            env=server_env(home),
            capture_output=True,
            text=True,
            timeout=120,
        )

    made = run("backup", str(dest))
    assert made.returncode == 0, made.stderr
    assert (dest / "global.db").is_file()
    refused = run("restore", str(dest))
    assert refused.returncode != 0 and "--force" in refused.stderr
    with sqlite3.connect(home / ".pillbox" / "pillbox.db") as db:
        db.execute("DELETE FROM accounts_apikey")
    restored = run("restore", str(dest), "--force")
    assert restored.returncode == 0, restored.stderr
    with sqlite3.connect(home / ".pillbox" / "pillbox.db") as db:
        assert db.execute("SELECT COUNT(*) FROM accounts_apikey").fetchone()[0] == 1
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
