"""Where the data lives: local files, their schema, git, the home directory."""

from __future__ import annotations

import re
import sqlite3
import subprocess

from tests.clients import run, stdio_client, text_of
from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 (a fixture)


def _bottle(home, project, name="proj"):
    async def scenario():
        async with stdio_client("pillbox", home=home, cwd=project) as client:
            return text_of(await client.call_tool("bottle_create", {"name": name, "display_name": name.title()}))

    return run(scenario())


def _call(home, cwd, tool, args=None):
    async def scenario():
        async with stdio_client("pillbox", home=home, cwd=cwd) as client:
            result = await client.call_tool(tool, args or {})
            return result.is_error, text_of(result)

    return run(scenario())


def test_a_local_bottle_in_a_git_work_tree_is_excluded_from_commits(tmp_path):
    home, project = tmp_path / "home", tmp_path / "repo"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    _bottle(home, project)
    exclude = (project / ".git" / "info" / "exclude").read_text()
    assert "/.pillbox/" in exclude.splitlines()
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".pillbox" not in status


def test_a_subdirectory_finds_the_projects_database(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    (project / "src" / "deep").mkdir(parents=True)
    created = _bottle(home, project)
    bottle = re.search(r"^id: (\w+)$", created, re.M).group(1)
    failed, text = _call(home, project / "src" / "deep", "bottle_context", {"bottle_id": bottle})
    assert not failed and text == "No prescriptions found."


def test_a_local_bottle_in_the_home_directory_itself_is_refused(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    failed, text = _call(home, home, "bottle_create", {"name": "home", "display_name": "Home"})
    assert failed and text.startswith("error: validation_error")
    assert not (home / ".pillbox").exists()


def test_the_global_database_is_never_taken_for_a_local_one(tmp_path):
    home = tmp_path / "home"
    home.mkdir()

    # PILLBOX_HOME = HOME/.pillbox makes the global file look exactly like a project's local database.
    async def scenario():
        async with stdio_client("pillbox", home=home, cwd=home, PILLBOX_HOME=str(home / ".pillbox")) as client:
            return text_of(
                await client.call_tool("bottle_create", {"name": "g", "display_name": "G", "scope": "global"})
            )

    created = run(scenario())
    assert "scope: global" in created
    assert "directory: (none: a global bottle)" in created  # kept in the data directory, of no project


def test_a_database_written_by_a_newer_schema_is_refused(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    _bottle(home, project)
    db = project / ".pillbox" / "pillbox.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO django_migrations (app, name, applied) VALUES ('pillbox', '9999_future', '2030-01-01')"
        )
        before = conn.execute("SELECT COUNT(*) FROM pillbox_bottle").fetchone()[0]
    # The tools that only use the global database keep working; one that looks for a record says why it cannot.
    listed, _ = _call(home, project, "bottle_list")
    assert not listed
    failed, text = _call(home, project, "bottle_context", {"bottle_id": "01234567"})
    assert failed and text.startswith("error: incompatible_db")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM pillbox_bottle").fetchone()[0] == before


def test_an_older_database_is_migrated_forward_without_losing_data(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    _bottle(home, project)
    db = project / ".pillbox" / "pillbox.db"
    with sqlite3.connect(db) as conn:
        # Forget the full-text migration, as a file made before it existed would.
        conn.execute("DELETE FROM django_migrations WHERE app = 'pillbox' AND name >= '0002'")
        conn.execute("DROP TABLE pillbox_pill_fts")
        conn.execute("DROP TABLE pillbox_originalimport")  # made by a later migration, forgotten with it
        conn.execute("DROP TABLE pillbox_pill_vector")  # from 0004_semantic, later still
        conn.execute("DROP TABLE pillbox_filemark")  # from 0009_file_origin, later still
    with sqlite3.connect(home / "pillbox.db") as conn:
        # ... and registered before marks existed: the user's own, by the upgrade's rule.
        conn.execute("UPDATE pillbox_ownedfile SET token = '', origin = 'upgraded'")
    failed, text = _call(home, project, "bottle_list")
    assert not failed and "● Proj [local]" in text
    with sqlite3.connect(db) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM django_migrations WHERE app = 'pillbox'")}
        assert "0002_fulltext" in names
        assert conn.execute("SELECT COUNT(*) FROM pillbox_bottle").fetchone()[0] == 1


def _triggers(db) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name"))


def test_a_project_file_migrated_back_before_superseding_keeps_its_triggers(tmp_path, local_bottles_over_http):
    """SQLite drops the superseded_by column by making the table again: the triggers naming it (full-text index,
    change log, vectors' log) are made again on the new table, so the way back and forth loses no search."""
    from django.core.management import call_command
    from django.db import connections

    from pillbox.databases import forget_local_aliases, open_local

    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    bottle = re.search(r"^id: (\w+)", _bottle(home, project), re.M)[1]
    db = project / ".pillbox" / "pillbox.db"
    author = {"author_name": "A", "author_email": "a@example.com"}
    failed, text = _call(home, project, "prescription_open", {"bottle_id": bottle, "title": "Session", **author})
    assert not failed, text
    note = {"prescription_id": re.search(r"^id: (\w+)", text, re.M)[1], "compound": "decision", **author}
    assert not _call(home, project, "pill_store", {**note, "title": "Nightly dumps", "content": "pg_dump at 2am."})[0]
    before = _triggers(db)
    alias = open_local(db)
    try:
        call_command("migrate", "pillbox", "0011_change_log", database=alias, verbosity=0)
        back = _triggers(db)
        assert set(back) == set(before) and not any("superseded_by" in sql for sql in back.values())
    finally:
        connections[alias].close()
        forget_local_aliases()
    # A server of this version takes the file forward again; what is stored then is searched by its words.
    assert not _call(home, project, "pill_store", {**note, "title": "Weekly restores", "content": "Tested."})[0]
    assert _triggers(db) == before
    for query, title in (("nightly dumps", "Nightly dumps"), ("weekly restores", "Weekly restores")):
        failed, text = _call(home, project, "pill_search", {"query": query})
        assert not failed and text.startswith("Found 1 pill") and title in text, text
