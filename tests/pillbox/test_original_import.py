"""Coming from the original Pillbox: a home and projects it wrote appear whole, the first time they are met.

The fixture builder (original_files.py) writes databases as the original leaves them on disk; the tests play the
person who ran it (HOME pointed at its home) through the SDK's own client over stdio and HTTP, and prove the original's
own tables are byte-for-byte unchanged afterwards. Here: over stdio, as a new user would meet them; the command
and HTTP are in test_original_import_command.py, files that cannot be imported in
test_original_import_refused.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.clients import ROOT, run, stdio_client, text_of
from tests.pillbox.original_checks import (
    NOTICE,
    bottle_lines,
    build,
    check_capsules,
    check_rows,
    check_what_an_agent_sees,
    damage,
    dumps,
    files,
    ids_in,
    index_pills_by_prescription,
    live,
    original_dump,
    our_rows,
    short,
)
from tests.pillbox.scenario import fresh_home

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
            # Where the original's registry no longer finds it, nothing proves the file is the user's (it carries no
            # mark: pillbox.origin): it is read once adopted.
            unread = text_of(await client.call_tool("bottle_list", {}))
            assert NOTICE not in unread and "← this directory" not in unread
            adopted = text_of(await client.call_tool("bottle_vinculate", {}))
            assert adopted.splitlines()[0] == f"{NOTICE}1 bottle, 4 prescriptions, {4 * pills} pills"
            assert "status: already_linked" in adopted and "origin: adopted" in adopted
            first = text_of(await client.call_tool("bottle_list", {}))
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
                                             "or restore it from a backup, then run `pillbox-todos import_original` "
                                             "again. Nothing was imported from it and it was not changed.")
            assert len(ids_in(found)) == len(live(summary, "capsules"))
            listing = text_of(await client.call_tool("bottle_list", {}))
            assert listing.startswith("Bottles (3)") and "● Shop [local]" in listing

    run(scenario())
    assert paths["shop"].read_bytes() == before  # nothing half-written: not even our schema


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
