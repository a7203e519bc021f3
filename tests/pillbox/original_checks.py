"""Shared by the tests of the import from the original Pillbox: building its files (original_files.py), reading
them and ours back, and checking what an agent sees of the memory brought across."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.clients import text_of
from tests.pillbox.original_files import write_original

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


@pytest.fixture(name="fixture_home")
def fixture_home_fixture(tmp_path) -> Iterator[dict[str, Any]]:
    summary = build(tmp_path / "fixture", seed=11, pills=4)
    index_pills_by_prescription(summary)
    yield summary


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


def our_tables(path: Path) -> set[str]:
    with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master") if name.startswith("pillbox_")}


def title_words(row: dict[str, Any]) -> str:
    return row["title"].split(" (")[0]
