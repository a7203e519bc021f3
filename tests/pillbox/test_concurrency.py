"""Several agents' processes writing the same SQLite files at once: nothing lost, nothing locked."""

from __future__ import annotations

import asyncio
import re
import sqlite3

from tests.clients import run, stdio_client, text_of

WORKERS = 8
PILLS_EACH = 64
CAPSULES_EACH = 8


def _id(text: str) -> str:
    match = re.search(r"^id: ([0-9a-f]{12})$", text, re.M)
    assert match, text
    return match.group(1)


def test_eight_stdio_servers_write_one_local_database_at_once(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()

    async def setup() -> str:
        async with stdio_client("pillbox", home=home, cwd=project) as client:
            bottle = _id(text_of(await client.call_tool("bottle_create", {"name": "race", "display_name": "Race"})))
            opened = await client.call_tool("prescription_open", {"bottle_id": bottle, "title": "Many hands",
                                                                  "author_name": "Ada", "author_email": "a@b.c"})
            return _id(text_of(opened))

    prescription = run(setup())

    async def worker(n: int) -> tuple[list[str], list[str]]:
        pills, errors = [], []
        async with stdio_client("pillbox", home=home, cwd=project, user=f"agent{n}") as client:
            # Another user's memory is read once adopted (pillbox.origin).
            assert "origin: adopted" in text_of(await client.call_tool("bottle_vinculate", {}))
            for i in range(PILLS_EACH):
                result = await client.call_tool("pill_store", {
                    "prescription_id": prescription, "title": f"worker {n} pill {i}", "content": f"body {n}-{i}",
                    "compound": "race", "author_name": "Ada", "author_email": "a@b.c"})
                (errors if result.is_error else pills).append(text_of(result))
                if i % (PILLS_EACH // CAPSULES_EACH) == 0:
                    capsule = await client.call_tool("capsule_store", {"title": f"c{n}-{i}", "content": "x",
                                                                       "compound": "race"})
                    if capsule.is_error:
                        errors.append(text_of(capsule))
        return [_id(text) for text in pills], errors

    async def everyone():
        return await asyncio.gather(*(worker(n) for n in range(WORKERS)))

    outcomes = run(everyone())
    errors = [error for _, errs in outcomes for error in errs]
    acknowledged = [pill for pills, _ in outcomes for pill in pills]
    assert errors == []
    assert len(acknowledged) == WORKERS * PILLS_EACH
    assert len(set(acknowledged)) == len(acknowledged), "two pills share a short id"

    with sqlite3.connect(project / ".pillbox" / "pillbox.db") as db:
        stored = {row[0][:12] for row in db.execute("SELECT id FROM pillbox_pill")}
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert set(acknowledged) <= stored
    with sqlite3.connect(home / "pillbox.db") as db:
        assert db.execute("SELECT COUNT(*) FROM pillbox_capsule").fetchone()[0] == WORKERS * CAPSULES_EACH


def test_eight_stdio_servers_start_together_on_a_fresh_data_directory(tmp_path):
    home, project = tmp_path / "fresh-home", tmp_path / "project"
    project.mkdir()

    async def one(n: int) -> str:
        async with stdio_client("pillbox", home=home, cwd=project, user=f"agent{n}") as client:
            return text_of(await client.call_tool("bottle_list", {}))

    async def everyone():
        return await asyncio.gather(*(one(n) for n in range(WORKERS)))

    assert run(everyone()) == ["No bottles registered."] * WORKERS
