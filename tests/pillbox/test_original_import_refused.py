"""Files of the original Pillbox that cannot be imported (unreadable, newer, unversioned): each is named with
what to do, left as it was, and the other files still come across, by the command and over stdio."""

from __future__ import annotations

import io
import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from pillbox.models import Capsule, OriginalImport, Pill
from tests.clients import run, stdio_client, text_of
from tests.pillbox.original_checks import (
    NOTICE,
    bottle_lines,
    build,
    files,
    fixture_home_fixture,  # noqa: F401 (a fixture)
    ids_in,
    live,
    make_newer,
    our_rows,
    our_tables,
    short,
    title_words,
)
from tests.pillbox.scenario import (
    local_bottles_over_http_fixture,  # noqa: F401 (a fixture)
)

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
               "run `pillbox-todos import_original` again. Nothing was imported from it and it was not changed.")
NEWER = ("was written by a newer version of the original Pillbox (its schema version 2; this Pillbox imports version "
         "1); upgrade Pillbox to import it. Nothing was imported from it and it was not changed.")
UNVERSIONED = ("records no schema version this Pillbox knows (0); open it once with the original Pillbox so it "
               "finishes its own migrations, then run `pillbox-todos import_original` again. "
               "Nothing was imported from it.")


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
