"""Coming from the original Pillbox on purpose: ``manage.py import_original`` (and ``up``) bring a home and its
projects across, once, and over HTTP the memory reads as over stdio; after the import, the pages restore what
the original discarded and more projects can be named."""

from __future__ import annotations

import io
import sqlite3
from contextlib import closing
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from pillbox.models import Bottle, Capsule, OriginalImport, Pill, Prescription, Registration
from tests.clients import http_client, run, text_of
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
    fixture_home_fixture,  # noqa: F401 (a fixture)
    ids_in,
    index_pills_by_prescription,
    live,
    make_newer,
    moment,
    original_dump,
    original_rows,
    our_rows,
    our_tables,
    short,
    title_words,
)
from tests.pillbox.scenario import (
    http_session,
    local_bottles_over_http_fixture,  # noqa: F401 (a fixture)
    site_fixture,  # noqa: F401 (a fixture)
)

# ---------------------------------------------------------------- the command, and over HTTP


def command(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_original", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


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


# ---------------------------------------------------------------- after the import: pages, linking, more files


def rx_of(summary: dict[str, Any]) -> dict[str, str]:
    return {pill: rx for rx, pills in summary["_pills_by_rx"].items() for pill in pills}



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
