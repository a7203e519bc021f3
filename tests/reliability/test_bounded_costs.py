"""Closed doors, round three (issue 23), holes 1, 2 and 5: what one search may cost, and what a file of the
original Pillbox planted in a cloned project may make the agent's process do.

Search is proved through the SDK's client over HTTP (the live server) and stdio, and the REST API through Django's
client; the original's files are built here with sqlite3 and the original's schema written out inline (the columns
``pillbox.original`` reads), never taken from outside the repository.
"""

from __future__ import annotations

import io
import random
import re
import sqlite3
import uuid
from contextlib import closing
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from mcp_bridge.limits import give_back, take_slot
from pillbox.models import Capsule, OriginalImport
from tests.clients import run, stdio_client
from tests.pillbox.scenario import (
    caller_for,
    fresh_home,
    http_session,
    new_bottle,
    open_prescription,
    site_fixture,  # noqa: F401 (a fixture)
    stdio_session,
    store,
)

# ---------------------------------------------------------------- hole 1: one search, bounded


def _words(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(7)) for _ in range(count)]


def test_a_long_query_searches_its_first_32_words_and_says_so_over_http_and_stdio(site, alice, tmp_path):
    words = _words(40, seed=23)
    home = fresh_home(tmp_path)

    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            rx = await open_prescription(call, await new_bottle(call, "flood"))
            early = await store(call, rx, "Early words", " ".join(words[:3]))
            late = await store(call, rx, "Late words", words[39])
            answer = (await call("pill_search", query=" ".join(words), limit=100)).ok
            assert "ignored_terms: 8 (only the first 32 distinct words of a query are searched)" in answer
            # A word past the cap finds nothing; the words within it still do.
            assert early in answer and late not in answer
            assert "ignored_terms" not in (await call("pill_search", query=words[39])).ok
        async with stdio_session(home, tmp_path) as call:
            rx = await open_prescription(call, await new_bottle(call, "local-flood"))
            await store(call, rx, "Words", " ".join(words))
            answer = (await call("pill_search", query=" ".join(words + words[:80]), limit=100, fuzzy=True)).ok
            assert "ignored_terms: 8" in answer and "Found 1 pill" in answer

    run(scenario())


def test_a_search_past_its_time_budget_answers_what_it_has_and_says_so(site, alice, settings):
    settings.SEARCH_TIME_BUDGET_MS = 1e-6  # spent at the first look: everything optional is skipped

    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            rx = await open_prescription(call, await new_bottle(call, "budget"))
            stored = await store(call, rx, "Budget", "alpha beta gamma " * 250)
            answer = (await call("pill_search", query="gamma beta", limit=100)).ok
            assert "partial: true (the search reached its time budget" in answer
            assert stored in answer  # the best row is always kept, shown by its beginning
            assert "snippet: alpha beta gamma" in answer

    run(scenario())


def test_rest_requests_share_the_users_in_flight_slots_with_mcp(client: Client, alice, bob, settings):
    settings.MCP_USER_CONCURRENCY = 2
    search = "/api/pillbox/search/?q=anything&kind=capsules"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {alice.key}"}
    assert client.get(search, **auth).status_code == 200
    # Two of alice's requests are in flight (over MCP, say): a third, over REST, waits its turn.
    assert take_slot(alice.user.pk) is None and take_slot(alice.user.pk) is None
    try:
        refused = client.get(search, **auth)
        assert refused.status_code == 429 and refused["Retry-After"] == "1"
        assert refused.json() == {
            "error": "rate_limited",
            "message": "Too many requests (MCP and REST API together) at once: at most 2 in flight per user; wait "
                       "for one to finish.",
        }
        # Bob is not alice.
        assert client.get(search, HTTP_AUTHORIZATION=f"Bearer {bob.key}").status_code == 200
    finally:
        give_back(alice.user.pk)
        give_back(alice.user.pk)
    # Every answered request gave its slot back: both are free again.
    assert client.get(search, **auth).status_code == 200
    assert take_slot(alice.user.pk) is None and take_slot(alice.user.pk) is None
    give_back(alice.user.pk)
    give_back(alice.user.pk)


# ---------------------------------------------------------------- the original's files, built here

BOTTLE_ID = uuid.UUID("019b0000-0000-7000-8000-00000000b071")
RX_ID = uuid.UUID("019b0000-0001-7000-8000-0000000000a1")
STAMP = "2025-12-01T10:00:00Z"
ORIGINAL_SCHEMA = """
CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE bottles (id TEXT PRIMARY KEY, name TEXT NOT NULL, display_name TEXT, directory TEXT, scope TEXT,
                      created_at TEXT NOT NULL, views INTEGER DEFAULT 0);
CREATE TABLE prescriptions (id TEXT PRIMARY KEY, bottle_id TEXT NOT NULL, title TEXT, author_name TEXT,
                            author_email TEXT, started_at TEXT NOT NULL, ended_at TEXT, deleted_at TEXT,
                            views INTEGER DEFAULT 0);
CREATE TABLE pills (id TEXT PRIMARY KEY, prescription_id TEXT NOT NULL, compound TEXT, title TEXT,
                    {content}, author_name TEXT, author_email TEXT, created_at TEXT NOT NULL, updated_at TEXT,
                    deleted_at TEXT, views INTEGER DEFAULT 0);
"""
PLAIN = "content TEXT"


def pill_id(index: int) -> uuid.UUID:
    return uuid.UUID(f"019b0000-{index + 2:04x}-7000-8000-{index:012x}")


def original_project(project: Path, *, content: str = PLAIN, titles: list[str], texts: list[str] | None = None,
                     directory: str = "/root", extra: str = "") -> Path:
    """A project whose ``.pillbox/pillbox.db`` the original Pillbox (schema version 1) might have written: one
    bottle claiming ``directory``, one prescription, a pill per title."""
    path = project / ".pillbox" / "pillbox.db"
    path.parent.mkdir(parents=True, mode=0o700)
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(ORIGINAL_SCHEMA.format(content=content))
        conn.execute("INSERT INTO schema_migrations VALUES (1, 'initial')")
        conn.execute("INSERT INTO bottles VALUES (?, 'cloned', 'Cloned', ?, 'local', ?, 0)",
                     (str(BOTTLE_ID), directory, STAMP))
        conn.execute("INSERT INTO prescriptions VALUES (?, ?, 'Session', 'Eve', 'eve@example.com', ?, NULL, NULL, 0)",
                     (str(RX_ID), str(BOTTLE_ID), STAMP))
        for index, title in enumerate(titles):
            columns = "id, prescription_id, compound, title, created_at" + (", content" if texts else "")
            values = [str(pill_id(index)), str(RX_ID), "note", title, STAMP] + ([texts[index]] if texts else [])
            conn.execute(f"INSERT INTO pills ({columns}) VALUES ({', '.join('?' * len(values))})", values)
        conn.commit()
        conn.executescript(extra)
    path.chmod(0o600)
    return path


def _short(value: uuid.UUID) -> str:
    return value.hex[:12]


# ---------------------------------------------------------------- hole 2: hostile files refused, nothing written

GENERATED = "content TEXT GENERATED ALWAYS AS (printf('%.*c', 2000000, 'x')) VIRTUAL"


@pytest.mark.parametrize(
    ("shape", "why"),
    [
        ({"content": GENERATED}, "the column content of its pills table is generated or hidden"),
        ({"extra": "CREATE TRIGGER grow AFTER INSERT ON schema_migrations BEGIN SELECT 1; END;"},
         "it holds a trigger the original does not make (grow on schema_migrations)"),
        ({"extra": "ALTER TABLE pills RENAME TO stored; CREATE VIEW pills AS SELECT * FROM stored;"},
         "its pills is a view, not a table"),
    ],
    ids=["generated-column", "trigger", "view"],
)
def test_a_hostile_original_file_in_a_cloned_project_is_refused_by_name_and_left_unwritten(tmp_path, shape, why):
    project = tmp_path / "cloned"
    path = original_project(project, titles=["One", "Two", "Three"], **shape)
    before = path.read_bytes()
    home = fresh_home(tmp_path)

    async def scenario() -> None:
        async with stdio_session(home, project) as call:
            refused = await call("pill_read", id=_short(pill_id(0)))
            assert refused.code == "incompatible_db"
            assert refused.message.startswith(f"{path} cannot be imported safely: {why}.")
            assert refused.message.endswith("Nothing was imported from it and it was not changed.")
            # The tools work on without it.
            assert (await call("bottle_list")).ok

    run(scenario())
    assert path.read_bytes() == before  # not even our schema
    assert sorted(p.name for p in path.parent.iterdir() if not p.name.startswith("pillbox.db-")) == ["pillbox.db"]


def test_an_original_file_with_more_pills_than_the_users_quota_is_refused(tmp_path):
    project = tmp_path / "cloned"
    path = original_project(project, titles=[f"Pill {n}" for n in range(5)])
    before = path.read_bytes()

    home = fresh_home(tmp_path)

    async def scenario() -> None:
        async with stdio_client("pillbox", home=home, cwd=project, PILLBOX_HOME=str(home / ".pillbox"),
                                PILLBOX_MAX_PILLS="4") as client:
            # A clone's file is read once adopted (pillbox.origin): adopting it imports it, here refused.
            refused = await caller_for(client)("bottle_vinculate")
            assert refused.code == "incompatible_db"
            assert "its pills table holds 5 rows, over the 4 pills a user may have" in refused.message

    run(scenario())
    assert path.read_bytes() == before


GLOBAL_SCHEMA = """
CREATE TABLE capsules (id TEXT PRIMARY KEY, compound TEXT, title TEXT, content TEXT, created_at TEXT NOT NULL,
                       updated_at TEXT, deleted_at TEXT, views INTEGER DEFAULT 0);
CREATE TABLE registered_bottles (id INTEGER PRIMARY KEY, bottle_id TEXT NOT NULL, name TEXT, display_name TEXT,
                                 db_path TEXT);
"""


def test_a_global_original_file_that_would_pass_the_users_quota_writes_nothing(alice, settings, tmp_path):
    settings.PILLBOX_QUOTAS = {**settings.PILLBOX_QUOTAS, "capsules": 3}
    home = tmp_path / "home"
    path = original_project(home, titles=["Global pill"])
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(GLOBAL_SCHEMA)
        conn.executemany("INSERT INTO capsules VALUES (?, 'note', ?, 'text', ?, NULL, NULL, 0)",
                         [(str(pill_id(100 + n)), f"Capsule {n}", STAMP) for n in range(2)])
        conn.commit()
    Capsule.objects.bulk_create([Capsule(id=pill_id(200 + n), seq=n + 1, owner=alice.user, compound="note",
                                         title=f"Mine {n}", content="mine", created_at=timezone.now(),
                                         updated_at=timezone.now()) for n in range(2)])
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_original", "--home", str(home), "--user", "alice", stdout=err, stderr=err)
    assert (f"{path} cannot be imported safely: importing it would give alice 4 capsules, over the 3 a user may "
            "have (PILLBOX_QUOTAS)") in err.getvalue()
    assert Capsule.objects.count() == 2 and not OriginalImport.objects.exists()


# ---------------------------------------------------------------- hole 5: what an imported file may show

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_an_imported_file_shows_no_terminal_controls_its_real_directory_and_texts_within_the_tools_limits(tmp_path):
    project = tmp_path / "cloned"
    titles = ["Clear \x1b[2Jscreen", "Clipboard \x1b]52;c;cm0gLXJmIH4=\x07write", "Nul\x00 and back\x08\x08space",
              "Bell\x07 and C1 \x9b31m colour"]
    texts = ["line one\nline two\twith a tab \x1b[31mred\x1b[0m", "huge " * 200_000, "ok", "ok"]
    path = original_project(project, titles=titles, texts=texts, directory="/root")
    size = path.stat().st_size
    home = fresh_home(tmp_path)

    async def scenario() -> None:
        async with stdio_session(home, project) as call:
            # A clone's file is read once adopted (pillbox.origin): adopting it imports it.
            adopted = (await call("bottle_vinculate")).ok
            assert "imported from the original Pillbox: 1 bottle, 1 prescription, 4 pills" in adopted
            listing = (await call("bottle_list")).ok
            # The bottle is where its file really is, not where the file says.
            assert str(project.resolve()) in listing and "/root" not in listing, listing
            found = (await call("pill_search", query="screen clipboard nul bell", limit=10)).ok
            # Escape sequences go whole (the clipboard write's payload with its OSC), control characters alone.
            # (a title is printed on one line: runs of white space as one space)
            for title in ("Clear screen", "Clipboard write", "Nul and backspace", "Bell and C1 colour"):
                assert f"title: {title}" in found, found
            for index in range(4):
                text = (await call("pill_read", id=_short(pill_id(index)))).ok
                assert not CONTROL.search(text), repr(text)
            first = (await call("pill_read", id=_short(pill_id(0)))).ok
            assert first.endswith("content:\nline one\nline two\twith a tab red")
            huge = (await call("pill_read", id=_short(pill_id(1)))).ok
            assert len(huge.split("content:\n", 1)[1]) == 5000  # the tools' own limit on content

    run(scenario())
    assert path.stat().st_size < size + 512 * 1024  # the cut text was copied, not a million characters
