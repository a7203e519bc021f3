"""Coming from the original Pillbox: a home and projects it wrote appear whole, the first time they are met.

The fixture builder (original_files.py) writes databases as the original leaves them on disk; the tests play the
person who ran it (HOME pointed at its home) through the SDK's own client over stdio and HTTP, and prove the original's
own tables are byte-for-byte unchanged afterwards.
"""

from __future__ import annotations

import io
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from pillbox.models import Bottle, Capsule, OriginalImport, Pill, Prescription, Registration
from tests.clients import ROOT, http_client, run, stdio_client, text_of
from tests.pillbox.original_files import write_original
from tests.pillbox.scenario import (
    fresh_home,
    http_session,
    local_bottles_over_http_fixture,  # noqa: F401 (a fixture)
    site_fixture,  # noqa: F401 (a fixture)
)

ORIGINAL_OBJECTS = re.compile(r"(bottles|prescriptions|pills|capsules|registered_bottles|schema_migrations)"
                              r"(_fts.*)?$|idx_.*|(pills|capsules)_a[iud]$")
NOTICE = "imported from the original Pillbox: "


# ---------------------------------------------------------------- the fixture and what it wrote


def build(dest: Path, *, seed: int, pills: int) -> dict[str, Any]:
    summary = write_original(dest, seed=seed, pills=pills)
    summary["dest"] = dest.resolve()
    return summary


def files(summary: dict[str, Any]) -> dict[str, Path]:
    dest = summary["dest"]
    return {"global": dest / "home" / ".pillbox" / "pillbox.db",
            "shop": dest / "projects" / "shop" / ".pillbox" / "pillbox.db",
            "blog": dest / "projects" / "blog" / ".pillbox" / "pillbox.db"}


def short(full: str) -> str:
    return full.replace("-", "")[:12]


def original_dump(path: Path) -> list[Any]:
    """The original's schema objects and every row of its tables (FTS shadow tables included), plus its
    AUTOINCREMENT counter: what must not change by a single byte."""
    with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
        objects = sorted(row for row in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
                         if ORIGINAL_OBJECTS.fullmatch(row[1]))
        dump: list[Any] = [objects]
        for kind, name, _, sql in objects:
            if kind == "table" and not (sql or "").upper().startswith("CREATE VIRTUAL"):
                dump.append((name, sorted(map(repr, conn.execute(f'SELECT * FROM "{name}"')))))
        # sqlite_sequence is SQLite's, shared with our tables (it may appear with them); the original's rows in it
        # must not change.
        sequence = conn.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone()
        counters = conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall() if sequence else []
        dump.append(sorted(row for row in counters if ORIGINAL_OBJECTS.fullmatch(row[0])))
    return dump


def dumps(summary: dict[str, Any]) -> dict[str, list[Any]]:
    return {name: original_dump(path) for name, path in files(summary).items()}


def original_rows(path: Path, table: str) -> dict[str, dict[str, Any]]:
    with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
        conn.row_factory = sqlite3.Row
        return {row["id"].replace("-", ""): dict(row) for row in conn.execute(f"SELECT * FROM {table}")}


def our_rows(path: Path, table: str) -> dict[str, dict[str, Any]]:
    with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
        conn.row_factory = sqlite3.Row
        return {row["id"]: dict(row) for row in conn.execute(f"SELECT * FROM pillbox_{table}")}


def moment(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    parsed = datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def assert_carried_over(original: dict[str, dict[str, Any]], ours: dict[str, dict[str, Any]], stamps: list[str],
                        *, authors: bool = True) -> None:
    """Same ids, same timestamps, same views, NULL authors still unknown."""
    assert set(ours) == set(original)
    for key, row in original.items():
        mine = ours[key]
        for column in stamps:
            assert moment(mine[column]) == moment(row[column]), (key, column)
        assert mine["views"] == row["views"]
        if authors:
            assert (mine["author_name"], mine["author_email"]) == (row["author_name"] or "", row["author_email"] or "")


def ids_in(text: str) -> list[str]:
    return re.findall(r"^\s*id: ([0-9a-f]{12})", text, flags=re.MULTILINE)


def live(summary: dict[str, Any], kind: str, **where: str) -> list[dict[str, Any]]:
    return [row for row in summary[kind] if not row.get("discarded") and row.get("state") != "discarded"
            and all(row.get(key) == value for key, value in where.items())]


# ---------------------------------------------------------------- what an agent sees


async def check_what_an_agent_sees(client: Any, summary: dict[str, Any], bottles: list[str]) -> None:
    async def call(tool: str, **arguments: Any) -> str:
        result = await client.call_tool(tool, arguments)
        return text_of(result)

    for bottle in (row for row in summary["bottles"] if row["name"] in bottles):
        context = await call("bottle_context", bottle_id=short(bottle["id"]))
        prescriptions = [row for row in summary["prescriptions"] if row["bottle"] == bottle["name"]]
        shown = ids_in(context)
        alive = [short(row["id"]) for row in prescriptions if row["state"] != "discarded"]
        assert shown == sorted(alive, reverse=True), context  # newest first, the discarded one left out
        for row in prescriptions:
            if row["state"] == "discarded":
                assert short(row["id"]) not in context
                continue
            assert f"[{row['state']}]" in context.split(f"id: {short(row['id'])}")[1].splitlines()[1]
            pills = [short(pill["id"]) for pill in live(summary, "pills", bottle=bottle["name"])
                     if pill["id"] in summary["_pills_by_rx"][row["id"]]]
            answer = await call("prescription_context", prescription_id=row["id"])
            assert ids_in(answer)[1:] == sorted(pills, reverse=True), answer
    for pill in (row for row in summary["pills"] if row["bottle"] in bottles):
        word = pill["title"].split()[0]
        found = ids_in(await call("pill_search", query=word, limit=100))
        read_full = await call("pill_read", id=pill["id"])
        read_short = await call("pill_read", id=short(pill["id"]))
        if pill["discarded"]:
            assert short(pill["id"]) not in found
            assert read_full.startswith("error: not_found") and read_short.startswith("error: not_found")
        else:
            assert short(pill["id"]) in found, (word, pill)
            assert f"title: {pill['title']}" in read_full and read_full == read_short


def index_pills_by_prescription(summary: dict[str, Any]) -> None:
    by_rx: dict[str, set[str]] = {}
    with closing(sqlite3.connect(f"{files(summary)['global'].as_uri()}?mode=ro", uri=True)) as conn:
        rows = list(conn.execute("SELECT id, prescription_id FROM pills"))
    for name in ("shop", "blog"):
        with closing(sqlite3.connect(f"{files(summary)[name].as_uri()}?mode=ro", uri=True)) as conn:
            rows += list(conn.execute("SELECT id, prescription_id FROM pills"))
    for pill_id, prescription_id in rows:
        by_rx.setdefault(prescription_id, set()).add(pill_id)
    summary["_pills_by_rx"] = by_rx


async def check_capsules(client: Any, summary: dict[str, Any]) -> None:
    for capsule in summary["capsules"]:
        word = capsule["title"].split()[1]
        found = ids_in(text_of(await client.call_tool("capsule_search", {"query": word, "limit": 100})))
        read = text_of(await client.call_tool("capsule_read", {"id": capsule["id"]}))
        if capsule["discarded"]:
            assert short(capsule["id"]) not in found and read.startswith("error: not_found")
        else:
            assert short(capsule["id"]) in found and f"title: {capsule['title']}" in read


def bottle_lines(listing: str) -> dict[str, str]:
    return {line.split()[1]: line for line in listing.splitlines() if line[:1] and line[:1] in "●○"}



def check_rows(summary: dict[str, Any], name: str, ours_file: Path) -> None:
    """Row for row what the original wrote in one file: ids, timestamps, views (before any read counts one),
    authors, discarded state, a bottle's scope and directory."""
    path = files(summary)[name]
    for key, row in original_rows(path, "bottles").items():
        mine = our_rows(ours_file, "bottle")[key]
        assert (mine["views"], moment(mine["created_at"]), mine["directory"], mine["name"]) == \
            (row["views"], moment(row["created_at"]), row["directory"], row["name"])
        assert mine["scope"] == ("global" if name == "global" else "local")
    ours = {key: row for key, row in our_rows(ours_file, "prescription").items()
            if row["bottle_id"] in original_rows(path, "bottles")}
    assert_carried_over(original_rows(path, "prescriptions"), ours, ["started_at", "ended_at", "deleted_at"])
    rx = set(ours)
    pills = {key: row for key, row in our_rows(ours_file, "pill").items() if row["prescription_id"] in rx}
    assert_carried_over(original_rows(path, "pills"), pills, ["created_at", "updated_at", "deleted_at"])
    if name == "global":
        assert_carried_over(original_rows(path, "capsules"), our_rows(ours_file, "capsule"),
                            ["created_at", "updated_at", "deleted_at"], authors=False)


# ---------------------------------------------------------------- over stdio, as a new user would


@pytest.mark.parametrize(("seed", "pills", "same_file"), [(1, 6, True), (7, 3, False)])
def test_a_new_user_over_stdio_finds_the_original_memory_whole(tmp_path, seed, pills, same_file):
    summary = build(tmp_path / "fixture", seed=seed, pills=pills)
    index_pills_by_prescription(summary)
    before = dumps(summary)
    home, paths = summary["dest"] / "home", files(summary)
    # By default our global database is the original's own file (~/.pillbox/pillbox.db): both live in it.
    data = home / ".pillbox" if same_file else home
    ours_global = data / "pillbox.db"
    project = {name: summary["dest"] / "projects" / name for name in ("shop", "blog")}
    per_rx = len(summary["pills"]) // len(summary["prescriptions"])
    assert per_rx == pills

    async def first_connection() -> None:
        async with stdio_client("pillbox", home=home, cwd=project["shop"], PILLBOX_HOME=str(data)) as client:
            first = text_of(await client.call_tool("bottle_list", {}))
            assert first.splitlines()[0] == (f"{NOTICE}2 bottles, 6 prescriptions, {6 * pills} pills, 8 capsules, "
                                             "3 registry entries")
            check_rows(summary, "global", ours_global)
            check_rows(summary, "shop", paths["shop"])
            listing = text_of(await client.call_tool("bottle_list", {}))
            assert NOTICE not in listing and listing == first.split("\n\n", 1)[1]
            lines = bottle_lines(listing)
            assert listing.startswith("Bottles (3)")
            assert lines["Notes"].startswith("● Notes [global]") and lines["Shop"].startswith("● Shop [local]")
            assert lines["Blog"].startswith("○ Blog [local]") and lines["Blog"].endswith("[unlinked]")
            await check_what_an_agent_sees(client, summary, ["notes", "shop"])
            await check_capsules(client, summary)
            # The typo vocabulary holds the imported words: a misspelt one still finds them.
            word = next(w for p in live(summary, "pills", bottle="shop") for w in p["title"].split() if len(w) > 6)
            typo = word[:2] + word[3] + word[2] + word[4:]
            fuzzy = text_of(await client.call_tool("pill_search", {"query": typo.lower(), "limit": 100}))
            assert "used_fuzzy: true" in fuzzy and ids_in(fuzzy)

    async def in_the_moved_project() -> None:
        async with stdio_client("pillbox", home=home, cwd=project["blog"], PILLBOX_HOME=str(data)) as client:
            first = text_of(await client.call_tool("bottle_list", {}))
            assert first.splitlines()[0] == f"{NOTICE}1 bottle, 4 prescriptions, {4 * pills} pills"
            check_rows(summary, "blog", paths["blog"])
            # Relinked where it now is, and the bottle of the directory the agent works in.
            blog = f"● Blog [local] {short(summary['registered'][1]['bottle_id'])}  ← this directory"
            assert bottle_lines(first)["Blog"] == blog
            assert f"  name: blog · {project['blog']}" in first
            await check_what_an_agent_sees(client, summary, ["blog"])

    async def again() -> None:
        async with stdio_client("pillbox", home=home, cwd=project["shop"], PILLBOX_HOME=str(data)) as client:
            assert NOTICE not in text_of(await client.call_tool("bottle_list", {}))
            assert NOTICE not in text_of(await client.call_tool("capsule_search", {"query": "lesson"}))

    run(first_connection())
    run(in_the_moved_project())
    run(again())

    total = {kind: sum(len(our_rows(ours_global if name == "global" else path, kind)) for name, path in paths.items())
             for kind in ("bottle", "prescription", "pill")}
    assert total == {"bottle": len(summary["bottles"]), "prescription": len(summary["prescriptions"]),
                     "pill": len(summary["pills"])}
    assert len(our_rows(ours_global, "capsule")) == len(summary["capsules"])
    # The original's own tables, indexes, triggers and rows: not one byte changed.
    assert dumps(summary) == before


def test_a_damaged_project_file_gets_a_clear_error_and_the_rest_still_imports_over_stdio(tmp_path):
    summary = build(tmp_path / "fixture", seed=3, pills=2)
    home, paths = summary["dest"] / "home", files(summary)
    damage(paths["shop"])
    before = paths["shop"].read_bytes()

    async def scenario() -> None:
        async with stdio_client("pillbox", home=home, cwd=summary["dest"] / "projects" / "shop") as client:
            answer = text_of(await client.call_tool("capsule_search", {"query": "lesson"}))
            lines = answer.splitlines()
            # Capsules live in the global database: a damaged project file never breaks them, but the answer
            # names that file, why it was not imported and what to do.
            assert lines[1].startswith(f"not imported from the original Pillbox: {paths['shop']} could not be read "
                                       "(database disk image is malformed); check that it is readable or restore "
                                       "it from a backup")
            assert "Found " in answer and "Traceback" not in answer
            # The global file was imported all the same, and said so.
            assert f"{NOTICE}1 bottle, 2 prescriptions, 4 pills, 8 capsules" in answer
        async with stdio_client("pillbox", home=home, cwd=summary["dest"] / "projects") as client:
            # Reached through the registry, the damaged file is named once and the tools work on.
            found = text_of(await client.call_tool("capsule_search", {"query": "lesson", "limit": 100}))
            assert found.splitlines()[0] == (f"not imported from the original Pillbox: {paths['shop']} could not be "
                                             "read (database disk image is malformed); check that it is readable "
                                             "or restore it from a backup, then run `manage.py import_original` "
                                             "again. Nothing was imported from it and it was not changed.")
            assert len(ids_in(found)) == len(live(summary, "capsules"))
            listing = text_of(await client.call_tool("bottle_list", {}))
            assert listing.startswith("Bottles (3)") and "● Shop [local]" in listing

    run(scenario())
    assert paths["shop"].read_bytes() == before  # nothing half-written: not even our schema


def damage(path: Path) -> None:
    """Overwrite the pills table's root page: the file still opens and names its tables, its rows are gone."""
    with closing(sqlite3.connect(path)) as conn:
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'pills'").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    with path.open("r+b") as handle:
        handle.seek((root - 1) * size)
        handle.write(b"\xff" * size)


def make_newer(path: Path) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES (2, 'future')")
        conn.commit()


# ---------------------------------------------------------------- the command, and over HTTP


def command(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_original", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def fixture_home(tmp_path) -> Iterator[dict[str, Any]]:
    summary = build(tmp_path / "fixture", seed=11, pills=4)
    index_pills_by_prescription(summary)
    yield summary


def our_counts() -> dict[str, int]:
    return {"bottles": Bottle.objects.count(), "prescriptions": Prescription.objects.count(),
            "pills": Pill.objects.count(), "capsules": Capsule.objects.count(),
            "registrations": Registration.objects.count(), "records": OriginalImport.objects.count()}


def test_import_original_then_http_finds_the_global_memory(site, alice, operator, local_bottles_over_http,
                                                            fixture_home):
    summary = fixture_home
    before = dumps(summary)
    home = summary["dest"] / "home"
    out, err = command("--home", str(home), "--user", "alice")
    assert err == ""
    assert f"{files(summary)['global']} (global): imported 1 bottle, 2 prescriptions, 8 pills, 8 capsules" in out
    assert f"{files(summary)['shop']} (local): imported 1 bottle, 4 prescriptions, 16 pills" in out
    assert "(blog): registered, but the file is gone" in out
    notes = next(row for row in summary["bottles"] if row["name"] == "notes")
    imported = Bottle.objects.get(pk=notes["id"])
    assert (imported.scope, imported.directory) == ("global", notes["directory"])
    assert set(Capsule.objects.values_list("owner__username", flat=True)) == {"alice"}
    # Views and timestamps came across to the global database (PostgreSQL when DATABASE_URL is set).
    originals = original_rows(files(summary)["global"], "pills")
    for pill in Pill.objects.all():
        row = originals[pill.id.hex]
        assert (pill.views, pill.created_at, pill.deleted_at) == (row["views"], moment(row["created_at"]),
                                                                  moment(row["deleted_at"]))

    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            listing = (await call("bottle_list")).ok
            assert NOTICE not in listing
            lines = bottle_lines(listing)
            assert set(lines) == {"Notes", "Shop", "Blog"} and lines["Blog"].endswith("[unlinked]")
            for pill in (row for row in summary["pills"] if row["bottle"] == "notes"):
                found = ids_in((await call("pill_search", query=pill["title"].split()[0], limit=100)).text)
                read = await call("pill_read", id=pill["id"])
                assert (short(pill["id"]) in found) is (not pill["discarded"])
                assert read.text.startswith("error: not_found") is pill["discarded"]
            for capsule in summary["capsules"]:
                found = ids_in((await call("capsule_search", query=capsule["title"].split()[1], limit=100)).text)
                assert (short(capsule["id"]) in found) is (not capsule["discarded"])

    run(scenario())
    # The operator sees what came across from which file.
    staff = Client()
    staff.force_login(operator.user)
    records = staff.get(reverse("admin:pillbox_originalimport_changelist"))
    assert records.status_code == 200 and str(files(summary)["global"]) in records.content.decode()
    # Run twice: nothing changes, and it says so.
    counts = our_counts()
    out, _ = command("--home", str(home), "--user", "alice")
    assert "(global): already imported on" in out and "(local): already imported" in out
    assert our_counts() == counts
    assert dumps(summary) == before


def test_a_dry_run_writes_nothing(alice, fixture_home):
    summary = fixture_home
    paths = files(summary)
    raw = {name: path.read_bytes() for name, path in paths.items()}
    counts = our_counts()
    out, _ = command("--home", str(summary["dest"] / "home"), "--user", "alice", "--dry-run",
                     str(summary["dest"] / "projects" / "blog"))
    assert f"{paths['global']} (global): would import 1 bottle, 2 prescriptions, 8 pills, 8 capsules" in out
    assert f"{paths['shop']} (local): would import 1 bottle, 4 prescriptions, 16 pills" in out
    assert f"{paths['blog']} (local): would import 1 bottle, 4 prescriptions, 16 pills" in out
    assert our_counts() == counts
    assert {name: path.read_bytes() for name, path in paths.items()} == raw


def test_a_damaged_or_newer_file_is_named_and_the_others_still_import(alice, local_bottles_over_http, fixture_home):
    summary = fixture_home
    paths = files(summary)
    damage(paths["shop"])
    make_newer(paths["blog"])
    raw = {name: paths[name].read_bytes() for name in ("shop", "blog")}
    err = io.StringIO()
    with pytest.raises(CommandError, match="2 file"):
        call_command("import_original", "--home", str(summary["dest"] / "home"), "--user", "alice",
                     str(summary["dest"] / "projects" / "blog"), stdout=io.StringIO(), stderr=err)
    errors = err.getvalue()
    assert f"error: {paths['shop']} could not be read (database disk image is malformed)" in errors
    assert (f"error: {paths['blog']} was written by a newer version of the original Pillbox (its schema version 2; "
            "this Pillbox imports version 1); upgrade Pillbox to import it") in errors
    # The global file came across whole; the two bad files were left exactly as they were.
    assert Capsule.objects.count() == len(summary["capsules"])
    assert Pill.objects.count() == sum(1 for pill in summary["pills"] if pill["bottle"] == "notes")
    assert OriginalImport.objects.count() == 1
    assert {name: paths[name].read_bytes() for name in ("shop", "blog")} == raw


def test_ids_the_original_made_in_the_same_millisecond_both_come_across(alice, local_bottles_over_http,
                                                                        fixture_home):
    """Our short ids are unique per database by construction; the original's may share a millisecond."""
    summary = fixture_home
    path = files(summary)["global"]
    notes = [row["id"] for row in summary["pills"] if row["bottle"] == "notes"]
    twin = notes[0][:14] + ("0" if notes[1][14] != "0" else "1") + notes[1][15:]  # same millisecond as notes[0]
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("UPDATE pills SET id = ? WHERE id = ?", (twin, notes[1]))
        conn.commit()
    command("--home", str(summary["dest"] / "home"), "--user", "alice")
    first, second = Pill.objects.get(pk=notes[0]), Pill.objects.get(pk=twin)
    assert first.seq != second.seq and first.id.hex[:12] == second.id.hex[:12]


def test_up_brings_the_original_memory_of_the_person_at_the_machine(tmp_path):
    summary = build(tmp_path / "fixture", seed=5, pills=1)
    home = summary["dest"] / "home"
    before = original_dump(files(summary)["global"])
    environment = {**os.environ, "HOME": str(home), "PILLBOX_HOME": str(home / ".pillbox"), "PILLBOX_USER": "ada"}
    environment.pop("DATABASE_URL", None)
    up = [sys.executable, str(ROOT / "manage.py"), "up", "--no-serve"]
    first = subprocess.run(up, env=environment, capture_output=True, text=True, check=True).stdout
    assert f"{NOTICE}1 bottle, 2 prescriptions, 2 pills, 8 capsules, 3 registry entries" in first.splitlines()
    second = subprocess.run(up, env=environment, capture_output=True, text=True, check=True).stdout
    assert NOTICE not in second
    assert original_dump(files(summary)["global"]) == before


def test_rows_whose_parent_the_original_lost_are_skipped_and_counted(alice, local_bottles_over_http, fixture_home):
    """The original runs with foreign keys unenforced: a file may hold a pill whose prescription is gone."""
    summary = fixture_home
    path = files(summary)["shop"]
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("INSERT INTO prescriptions (id, bottle_id, title) VALUES "
                     "('019b0000-0000-7000-8000-000000000001', '019b0000-0000-7000-8000-00000000dead', 'Lost')")
        conn.execute("INSERT INTO pills (id, compound, title, content, prescription_id) VALUES "
                     "('019b0000-0000-7000-8000-000000000002', 'bug', 'Orphan', 'x', "
                     "'019b0000-0000-7000-8000-00000000beef')")
        conn.commit()
    before = original_dump(path)
    out, err = command("--home", str(summary["dest"] / "home"), "--user", "alice")
    assert err == ""
    assert f"{path} (local): imported 1 bottle, 4 prescriptions, 16 pills, 2 skipped" in out
    assert original_dump(path) == before


def test_the_original_global_file_is_never_taken_for_a_project(tmp_path):
    """With our data directory elsewhere, the walk up from the home still passes the original's global file."""
    summary = build(tmp_path / "fixture", seed=9, pills=1)
    home = summary["dest"] / "home"
    before = original_dump(files(summary)["global"])

    async def scenario() -> None:
        async with stdio_client("pillbox", home=home, cwd=home, PILLBOX_HOME=str(tmp_path / "data")) as client:
            listing = text_of(await client.call_tool("bottle_list", {}))
            # The registered project's file comes across in the same answer (the registry reaches it).
            assert listing.startswith(f"{NOTICE}2 bottles, 6 prescriptions, 6 pills, 8 capsules, 3 registry entries")
            assert "● Notes [global]" in listing and "● Shop [local]" in listing
            linked = text_of(await client.call_tool("bottle_vinculate", {"directory": str(home)}))
            assert linked.splitlines()[0] == "error: circular_link"
            created = text_of(await client.call_tool("bottle_create", {"name": "scratch", "display_name": "S",
                                                                       "scope": "global"}))
            assert created.startswith("id: ")

    run(scenario())
    assert original_dump(files(summary)["global"]) == before


def test_a_row_that_cannot_be_taken_as_it_is_stops_only_its_file(alice, local_bottles_over_http, fixture_home):
    summary = fixture_home
    blog = files(summary)["blog"]
    prescription = next(row["id"] for row in summary["prescriptions"] if row["bottle"] == "blog")
    with closing(sqlite3.connect(blog)) as conn:
        conn.execute("INSERT INTO pills (id, compound, title, content, prescription_id) VALUES "
                     "('pill-1', 'bug', 'Odd', 'x', ?)", (prescription,))
        conn.commit()
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 file"):
        call_command("import_original", "--home", str(summary["dest"] / "home"), "--user", "alice",
                     str(blog.parent.parent), stdout=io.StringIO(), stderr=err)
    assert err.getvalue().startswith(f"error: {blog} holds a row that cannot be imported (pills pill-1: the id is "
                                     "not a UUID); correct or discard it with the original Pillbox")
    assert not our_tables(blog)  # nothing of it written, not even our schema
    assert Pill.objects.count() == sum(1 for pill in summary["pills"] if pill["bottle"] == "notes")


def our_tables(path: Path) -> set[str]:
    with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master") if name.startswith("pillbox_")}


# ---------------------------------------------------------------- after the import: pages, linking, more files


def rx_of(summary: dict[str, Any]) -> dict[str, str]:
    return {pill: rx for rx, pills in summary["_pills_by_rx"].items() for pill in pills}


def title_words(row: dict[str, Any]) -> str:
    return row["title"].split(" (")[0]


def test_a_discarded_row_from_the_original_is_restored_from_the_pages_and_found_again(
        site, alice, local_bottles_over_http, tmp_path):
    summary = build(tmp_path / "fixture", seed=2, pills=4)
    index_pills_by_prescription(summary)
    paths, parent, state = files(summary), rx_of(summary), {row["id"]: row["state"] for row in summary["prescriptions"]}
    # The original left one pill live under the shop's discarded prescription: ours discards it with it.
    gone = next(row["id"] for row in summary["prescriptions"]
                if row["bottle"] == "shop" and row["state"] == "discarded")
    left_live, *one_by_one = sorted(summary["_pills_by_rx"][gone])
    with closing(sqlite3.connect(paths["shop"])) as conn:
        conn.execute("UPDATE pills SET deleted_at = NULL WHERE id = ?", (left_live,))
        conn.commit()
    before = dumps(summary)
    command("--home", str(summary["dest"] / "home"), "--user", "alice")
    pill = {row["id"]: row for row in summary["pills"]}
    # A pill the original discarded on its own in a live prescription, in the global bottle and in a local one.
    alone = {bottle: next(row for row in summary["pills"] if row["bottle"] == bottle and row["discarded"]
                          and state[parent[row["id"]]] != "discarded") for bottle in ("notes", "shop")}
    capsule = next(row for row in summary["capsules"] if row["discarded"])
    pills = [alone["notes"], alone["shop"], pill[left_live], pill[one_by_one[0]]]

    async def agent_sees(restored: set[str]) -> None:
        async with http_session(site, alice.key) as call:
            for row in pills:
                found = ids_in((await call("pill_search", query=title_words(row), limit=100)).text)
                read = (await call("pill_read", id=short(row["id"]))).text
                assert (short(row["id"]) in found) is (row["id"] in restored), (row, found)
                assert read.startswith("error: not_found") is (row["id"] not in restored), read
            found = ids_in((await call("capsule_search", query=title_words(capsule), limit=100)).text)
            read = (await call("capsule_read", id=capsule["id"])).text
            assert (short(capsule["id"]) in found) is (capsule["id"] in restored)
            assert (f"title: {capsule['title']}" in read) is (capsule["id"] in restored), read

    def in_page_search(row: dict[str, Any], kind: str) -> bool:
        html = pages.get("/pillbox/search", {"q": title_words(row)}).content.decode()
        return f"/pillbox/{kind}/{row['id'].replace('-', '')}/" in html

    def deleted_at(row: dict[str, Any]) -> Any:
        if row["bottle"] == "notes":
            return Pill.objects.get(pk=row["id"]).deleted_at
        return our_rows(paths["shop"], "pill")[row["id"].replace("-", "")]["deleted_at"]

    run(agent_sees(set()))
    pages = Client()
    pages.force_login(alice.user)
    for row in alone.values():
        url = f"/pillbox/pills/{row['id']}/"
        assert "discarded" in pages.get(url).content.decode() and not in_page_search(row, "pills")
        assert pages.post(url + "restore").status_code == 303
        assert deleted_at(row) is None and in_page_search(row, "pills")
    # Restoring the prescription brings back the pill discarded with it; those the original discarded one by one
    # before (their own deleted_at, earlier than the prescription's) stay discarded, as ours do, until restored.
    assert pages.post(f"/pillbox/prescriptions/{gone}/restore").status_code == 303
    assert deleted_at(pill[left_live]) is None and in_page_search(pill[left_live], "pills")
    assert all(deleted_at(pill[key]) is not None for key in one_by_one)
    assert pages.post(f"/pillbox/pills/{one_by_one[0]}/restore").status_code == 303
    assert capsule["title"] not in pages.get("/pillbox/capsules/").content.decode()
    assert capsule["title"] in pages.get("/pillbox/capsules/", {"show": "discarded"}).content.decode()
    assert pages.post(f"/pillbox/capsules/{capsule['id']}/restore").status_code == 303
    assert Capsule.objects.get(pk=capsule["id"]).deleted_at is None and in_page_search(capsule, "capsules")
    run(agent_sees({row["id"] for row in pills} | {capsule["id"]}))
    assert dumps(summary) == before  # restoring changes our rows only, never the original's


def test_bottle_vinculate_on_a_project_the_original_wrote_brings_it_across_and_says_so_once(tmp_path):
    summary = build(tmp_path / "fixture", seed=4, pills=3)
    index_pills_by_prescription(summary)
    shop, path = summary["dest"] / "projects" / "shop", files(summary)["shop"]
    before = original_dump(path)
    home = fresh_home(tmp_path / "me")  # a home without the original: only the project was written by it

    async def scenario() -> None:
        async with stdio_client("pillbox", home=home, cwd=tmp_path, PILLBOX_HOME=str(home / ".pillbox")) as client:
            linked = text_of(await client.call_tool("bottle_vinculate", {"directory": str(shop)}))
            assert linked.count(NOTICE) == 1
            notice, answer = linked.split("\n\n", 1)
            assert notice == f"{NOTICE}1 bottle, 4 prescriptions, 12 pills"
            bottle = next(row for row in summary["bottles"] if row["name"] == "shop")
            assert answer.splitlines()[:3] == ["status: linked", f"bottle_id: {short(bottle['id'])}", "name: shop"]
            assert f"db_path: {path}" in answer
            check_rows(summary, "shop", path)
            listing = text_of(await client.call_tool("bottle_list", {}))
            assert NOTICE not in listing and bottle_lines(listing)["Shop"].startswith("● Shop [local]")
            await check_what_an_agent_sees(client, summary, ["shop"])
            again = text_of(await client.call_tool("bottle_vinculate", {"directory": str(shop)}))
            assert NOTICE not in again and again.startswith("status: already_linked")
        async with stdio_client("pillbox", home=home, cwd=tmp_path, PILLBOX_HOME=str(home / ".pillbox")) as client:
            # A new process: the file carries the record of its import.
            again = text_of(await client.call_tool("bottle_vinculate", {"directory": str(shop)}))
            assert NOTICE not in again and again.startswith("status: already_linked")

    run(scenario())
    assert len(our_rows(path, "pill")) == sum(1 for row in summary["pills"] if row["bottle"] == "shop")
    assert original_dump(path) == before


def test_import_original_names_a_project_not_in_the_registry_imports_and_registers_it(
        site, alice, local_bottles_over_http, fixture_home, tmp_path):
    summary = fixture_home
    paths, projects = files(summary), summary["dest"] / "projects"
    before = dumps(summary)
    nobody = tmp_path / "no-original"  # a home where the original never ran: no registry names the project
    nobody.mkdir()
    out, err = command("--home", str(nobody), "--user", "alice", str(projects / "shop"))
    assert err == ""
    assert f"{paths['shop']} (local): imported 1 bottle, 4 prescriptions, 16 pills" in out
    assert f"{paths['shop']}: bottle shop registered" in out
    registration = Registration.objects.get(user=alice.user)
    assert (registration.name, registration.scope, registration.db_path, registration.directory) == \
        ("shop", "local", str(paths["shop"]), str(projects / "shop"))
    check_rows(summary, "shop", paths["shop"])

    async def alice_sees(names: set[str]) -> None:
        async with http_session(site, alice.key) as call:
            listing = (await call("bottle_list")).ok
            assert {name for name, line in bottle_lines(listing).items() if line.startswith("●")} == names
            for row in live(summary, "pills", bottle="shop"):
                assert short(row["id"]) in ids_in((await call("pill_search", query=title_words(row), limit=100)).text)

    run(alice_sees({"Shop"}))
    out, _ = command("--home", str(nobody), "--user", "alice", str(projects / "shop"))
    assert f"{paths['shop']} (local): already imported" in out and f"{paths['shop']}: bottle shop is registered" in out
    assert Registration.objects.filter(user=alice.user).count() == 1
    # Then the home: the registry's entries join hers, and the moved project named at its new place is linked
    # there (the registry still has its old one).
    out, err = command("--home", str(summary["dest"] / "home"), "--user", "alice", str(projects / "blog"))
    assert err == ""
    assert f"{paths['blog']} (local): imported 1 bottle, 4 prescriptions, 16 pills" in out
    assert f"{paths['blog']}: bottle blog is registered" in out
    blog = Registration.objects.get(user=alice.user, name="blog")
    assert (blog.db_path, blog.directory) == (str(paths["blog"]), str(projects / "blog"))
    run(alice_sees({"Notes", "Shop", "Blog"}))
    assert dumps(summary) == before


def test_over_http_the_imported_global_memory_reads_as_over_stdio(site, alice, local_bottles_over_http, fixture_home):
    """Context in order, short ids, capsules read, a misspelt word: on SQLite and, in CI's second pass, PostgreSQL."""
    summary = fixture_home
    command("--home", str(summary["dest"] / "home"), "--user", "alice")
    notes = live(summary, "pills", bottle="notes")
    word, row = max(((word, row) for row in notes for word in title_words(row).split() if word.isalpha()),
                    key=lambda pair: (len(pair[0]), pair[0]))
    assert len(word) > 6
    typo = (word[:3] + ("x" if word[3] != "x" else "q") + word[4:]).lower()  # one letter wrong

    async def scenario() -> None:
        async with http_client(site + "/pillbox/mcp", key=alice.key) as client:
            await check_what_an_agent_sees(client, summary, ["notes"])
            await check_capsules(client, summary)
            fuzzy = text_of(await client.call_tool("pill_search", {"query": typo, "limit": 100}))
            assert "used_fuzzy: true" in fuzzy and short(row["id"]) in ids_in(fuzzy), (typo, fuzzy)

    run(scenario())


# ---------------------------------------------------------------- files that cannot be imported


def unreadable(path: Path) -> None:
    path.chmod(0)
    if os.access(path, os.R_OK):
        path.chmod(0o600)
        pytest.skip("this user reads a file whatever its mode (root?): it cannot be made unreadable")


def make_unversioned(path: Path) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("DELETE FROM schema_migrations")
        conn.commit()


CANNOT_READ = ("could not be read (permission denied); check that it is readable or restore it from a backup, then "
               "run `manage.py import_original` again. Nothing was imported from it and it was not changed.")
NEWER = ("was written by a newer version of the original Pillbox (its schema version 2; this Pillbox imports version "
         "1); upgrade Pillbox to import it. Nothing was imported from it and it was not changed.")
UNVERSIONED = ("records no schema version this Pillbox knows (0); open it once with the original Pillbox so it "
               "finishes its own migrations, then run `manage.py import_original` again. Nothing was imported from it.")


def import_failing(summary: dict[str, Any], *projects: str) -> str:
    err = io.StringIO()
    with pytest.raises(CommandError, match=r"\d+ file\(s\) could not be imported"):
        call_command("import_original", "--home", str(summary["dest"] / "home"), "--user", "alice",
                     *(str(summary["dest"] / "projects" / name) for name in projects), stdout=io.StringIO(), stderr=err)
    return err.getvalue()


def assert_only_the_global_file_came_across(summary: dict[str, Any]) -> None:
    assert Capsule.objects.count() == len(summary["capsules"])
    assert Pill.objects.count() == sum(1 for pill in summary["pills"] if pill["bottle"] == "notes")
    assert list(OriginalImport.objects.values_list("source", flat=True)) == [str(files(summary)["global"])]


def test_an_unreadable_file_and_a_newer_one_are_named_and_the_others_still_import(alice, local_bottles_over_http,
                                                                                   fixture_home):
    summary = fixture_home
    paths = files(summary)
    make_newer(paths["blog"])
    raw = {name: paths[name].read_bytes() for name in ("shop", "blog")}
    unreadable(paths["shop"])
    try:
        errors = import_failing(summary, "blog")
    finally:
        paths["shop"].chmod(0o600)
    assert errors.splitlines() == [f"error: {paths['shop']} {CANNOT_READ}", f"error: {paths['blog']} {NEWER}"]
    # The global file came across whole; nothing of the two others was written, not even our schema.
    assert_only_the_global_file_came_across(summary)
    assert {name: paths[name].read_bytes() for name in ("shop", "blog")} == raw
    assert not our_tables(paths["shop"]) and not our_tables(paths["blog"])


def test_a_file_that_records_no_schema_version_is_named_and_the_others_still_import(alice, local_bottles_over_http,
                                                                                     fixture_home):
    summary = fixture_home
    paths = files(summary)
    make_unversioned(paths["blog"])
    raw = paths["blog"].read_bytes()
    assert import_failing(summary, "blog").splitlines() == [f"error: {paths['blog']} {UNVERSIONED}"]
    assert len(our_rows(paths["shop"], "pill")) == sum(1 for pill in summary["pills"] if pill["bottle"] == "shop")
    assert_only_the_global_file_came_across(summary)
    assert paths["blog"].read_bytes() == raw and not our_tables(paths["blog"])


@pytest.mark.parametrize("which", ["global", "shop"])
def test_an_unreadable_file_is_named_over_stdio_and_the_other_files_still_import(tmp_path, which):
    summary = build(tmp_path / "fixture", seed=6, pills=2)
    home, paths = summary["dest"] / "home", files(summary)
    shop = summary["dest"] / "projects" / "shop"
    raw = paths[which].read_bytes()
    unreadable(paths[which])
    # Our data directory apart from the original's, so an unreadable original global file is only that.
    data = tmp_path / "data"

    async def scenario() -> None:
        async with stdio_client("pillbox", home=home, cwd=shop, PILLBOX_HOME=str(data)) as client:
            listing = text_of(await client.call_tool("bottle_list", {}))
            notice, failure = listing.split("\n\n", 1)[0].splitlines()
            assert failure == f"not imported from the original Pillbox: {paths[which]} {CANNOT_READ}"
            capsules = text_of(await client.call_tool("capsule_search", {"query": "lesson", "limit": 100}))
            assert not capsules.startswith("error:"), capsules
            if which == "global":
                assert notice == f"{NOTICE}1 bottle, 4 prescriptions, 8 pills"
                assert bottle_lines(listing)["Shop"].startswith("● Shop [local]") and "Notes" not in listing
            else:
                assert notice == f"{NOTICE}1 bottle, 2 prescriptions, 4 pills, 8 capsules, 3 registry entries"
                assert len(ids_in(capsules)) == len(live(summary, "capsules"))
                context = text_of(await client.call_tool("bottle_context", {"bottle_id": "shop"}))
                assert context.startswith("error: incompatible_db") and str(paths["shop"]) in context, context
            # Search works on, over what did come across.
            for row in live(summary, "pills", bottle="shop" if which == "global" else "notes"):
                found = text_of(await client.call_tool("pill_search", {"query": title_words(row), "limit": 100}))
                assert short(row["id"]) in ids_in(found), found
            again = text_of(await client.call_tool("bottle_list", {}))
            assert "the original Pillbox" not in again  # told once

    try:
        run(scenario())
    finally:
        paths[which].chmod(0o600)
    assert paths[which].read_bytes() == raw


def test_an_original_file_that_appears_while_a_server_runs_is_imported_on_its_next_call(tmp_path):
    """A server checks the home's original file once it is there; until then it looks for it on every call."""
    summary = build(tmp_path / "fixture", seed=9, pills=1)
    original = summary["dest"] / "home" / ".pillbox"
    home = tmp_path / "home"
    home.mkdir()

    async def scenario() -> tuple[str, str, str]:
        async with stdio_client("pillbox", home=home, cwd=home, PILLBOX_HOME=str(tmp_path / "data")) as client:
            before = text_of(await client.call_tool("bottle_list", {}))
            (home / ".pillbox").mkdir(mode=0o700)
            for part in original.iterdir():
                (home / ".pillbox" / part.name).write_bytes(part.read_bytes())
            arrived = text_of(await client.call_tool("bottle_list", {}))
            again = text_of(await client.call_tool("bottle_list", {}))
            return before, arrived, again

    before, arrived, again = run(scenario())
    assert NOTICE not in before and "Notes" not in before
    assert arrived.startswith(NOTICE) and "● Notes [global]" in arrived
    assert NOTICE not in again and "● Notes [global]" in again
