"""The 22 Pillbox tools end to end, through the SDK's own client, over HTTP (the live server) and over stdio.

One scenario (``tour``) walks every tool and every error code, and runs over both transports: over HTTP as a
staff user whose server has ``PILLBOX_ROOT`` set (so local bottles and bottle_vinculate are allowed), over
stdio as a ``manage.py mcp pillbox`` subprocess working in a project directory under a scratch HOME.
"""

from __future__ import annotations

import shutil
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings

from pillbox.models import Bottle, Capsule, Pill, Prescription
from tests.clients import http_client, run
from tests.pillbox.scenario import (
    AUTHOR,
    PILLBOX_TOOLS,
    Answer,
    Call,
    assert_recent,
    caller_for,
    fields,
    fresh_home,
    full_id,
    hit_ids,
    local_bottles_over_http_fixture,  # noqa: F401 (a fixture)
    local_db,
    millisecond,
    new_bottle,
    open_prescription,
    records,
    row,
    short_id,
    site_fixture,  # noqa: F401 (a fixture)
    stdio_session,
    stdio_sessions,
    store,
)
from tests.pillbox.scenario import http_session as http


@dataclass
class Place:
    """Where a transport's agent works."""

    transport: str
    project: Path  # the working directory: local bottles are created here
    data_dir: Path  # where global bottles live (PILLBOX_HOME)
    scratch: Path  # for extra directories
    home: Path | None = None  # stdio only: the HOME whose .pillbox holds the global database


Opener = Callable[[], AbstractAsyncContextManager[Call]]


# The http case declares its database use up front: pytest-django sets up only the databases that collected
# tests ask for, and this fixture asks for them dynamically.
@pytest.fixture(params=[pytest.param("http", marks=pytest.mark.django_db(transaction=True)), "stdio"])
def agent(request, tmp_path) -> tuple[Opener, Place]:
    project = tmp_path / "home" / "code" / "my-project" if request.param == "stdio" else tmp_path / "my-project"
    if request.param == "http":
        project.mkdir(parents=True)
        operator = request.getfixturevalue("operator")
        request.getfixturevalue("local_bottles_over_http")
        url = request.getfixturevalue("site")
        request.getfixturevalue("settings").PILLBOX_ROOT = project.resolve()
        place = Place("http", project.resolve(), Path(django_settings.PILLBOX_HOME), tmp_path)
        return (lambda: http(url, operator.key)), place
    home = fresh_home(tmp_path)
    project.mkdir(parents=True)
    place = Place("stdio", project.resolve(), (home / ".pillbox").resolve(), tmp_path, home.resolve())
    return (lambda: stdio_session(home, project)), place


def test_tools_every_tool_and_error_over_both_transports(agent):
    open_session, place = agent

    async def scenario() -> None:
        async with open_session() as call:
            await tour(call, place)

    run(scenario())


# ---------------------------------------------------------------- the tour


async def tour(call: Call, place: Place) -> None:
    assert (await call("bottle_list")).ok == "No bottles registered."
    assert (await call("pill_compounds")).ok == "No compounds found."
    assert (await call("pill_search", query="anything")).ok == "No pills found."
    local, shared = await tour_bottles(call, place)
    await tour_pills_and_prescriptions(call, place, local, shared)
    await tour_capsules(call)
    await tour_input_rules(call, place, local)
    await tour_vinculate(call, place, local)
    await tour_unlinked(call, place, local, shared)


async def tour_bottles(call: Call, place: Place) -> tuple[str, str]:
    created = await call("bottle_create", name="my-project", display_name="My Project")
    assert list(created.fields) == ["id", "name", "display_name", "directory", "scope"]
    local = short_id(created.fields["id"])
    assert created.ok == (f"id: {local}\nname: my-project\ndisplay_name: My Project\n"
                          f"directory: {place.project}\nscope: local")
    assert local_db(place.project).is_file()
    assert abs(millisecond(local) - datetime.now(UTC)) < timedelta(minutes=5)

    taken_name = await call("bottle_create", name="my-project", display_name="Again", scope="global")
    assert taken_name.code == "already_exists" and taken_name.error_fields["name"] == "my-project"
    taken_dir = await call("bottle_create", name="second-one", display_name="Second")
    assert taken_dir.code == "already_exists"
    assert "bottle_vinculate" in taken_dir.message and taken_dir.error_fields["bottle_id"] == local

    not_slug = await call("bottle_create", name="My Project!", display_name="x", scope="global")
    assert not_slug.code == "validation_error" and "'my-project'" in not_slug.message
    double_hyphen = await call("bottle_create", name="a--b", display_name="x", scope="global")
    assert double_hyphen.code == "validation_error" and "'a-b'" in double_hyphen.message
    assert (await call("bottle_create", name="x", display_name="x", scope="galactic")).code == "invalid_input"
    # null is the default scope (local): this directory already holds a bottle.
    assert (await call("bottle_create", name="x", display_name="x", scope=None)).code == "already_exists"

    made = await call("bottle_create", name="shared-notes", display_name="Shared Notes", scope="global")
    shared = short_id(made.fields["id"])
    # A global bottle belongs to no project: the data directory it is kept in is not shown as its directory.
    assert made.ok == (f"id: {shared}\nname: shared-notes\ndisplay_name: Shared Notes\n"
                       "directory: (none: a global bottle)\nscope: global")

    # Each bottle's name, which bottle_id takes (its display name is refused).
    listing = (await call("bottle_list")).ok
    assert listing == (f"Bottles (2)\n\n● My Project [local] {local}  ← this directory\n"
                       f"  name: my-project · {place.project}\n\n"
                       f"● Shared Notes [global] {shared}\n  name: shared-notes · (none: a global bottle)")
    assert (await call("bottle_context", bottle_id="shared-notes")).ok == "No prescriptions found."
    assert (await call("bottle_context", bottle_id="Shared Notes")).code == "not_found"
    return local, shared


async def tour_pills_and_prescriptions(call: Call, place: Place, local: str, shared: str) -> None:
    db = local_db(place.project)
    assert (await call("bottle_context", bottle_id=local)).ok == "No prescriptions found."

    # A prescription opened with the bottle's full UUID (with dashes).
    opened = await call("prescription_open", bottle_id=str(full_id(db, "bottle", local)),
                        title="Implement OAuth login", **AUTHOR)
    assert list(opened.fields) == ["id", "title", "started_at"]
    rx = short_id(opened.fields["id"])
    started = opened.fields["started_at"]
    assert_recent(started)
    assert opened.ok == f"id: {rx}\ntitle: Implement OAuth login\nstarted_at: {started}"
    rx_read = f"id: {rx}\ntitle: Implement OAuth login\nstatus: open\nstarted_at: {started}\n" \
              "author: Ada Lovelace <ada@example.com>"
    assert (await call("prescription_read", id=rx.upper())).ok == rx_read
    assert (await call("prescription_read", id=full_id(db, "prescription", rx).hex)).ok == rx_read
    empty_context = f"id: {rx}\n[open] Implement OAuth login  started: {started[:10]}\n\n---\npills: 0"
    assert (await call("prescription_context", prescription_id=rx)).ok == empty_context

    content = "chosen: JWT + refresh tokens stored in SQLite\ndiscarded: server-side sessions"
    stored = await call("pill_store", prescription_id=rx, title="Use stateless JWT", content=content,
                        compound="decision", **AUTHOR)
    jwt = short_id(stored.fields["id"])
    assert stored.ok == f"id: {jwt}\ntitle: Use stateless JWT\ncompound: decision"

    # The only pill so far: its 8-digit prefix is unambiguous.
    read = await call("pill_read", id=jwt[:8])
    created = read.fields["created"]
    assert_recent(created)
    assert abs(millisecond(jwt) - assert_recent(created)) < timedelta(seconds=5)
    assert read.ok == (f"id: {jwt}\nprescription: {rx}\ncreated: {created}\ncompound: decision\n"
                       f"title: Use stateless JWT\nauthor: Ada Lovelace <ada@example.com>\ncontent:\n{content}")
    whole = full_id(db, "pill", jwt)
    for spelling in (str(whole), whole.hex, str(whole).upper(), whole.hex.upper(), jwt.upper(), f"  {jwt}  "):
        assert (await call("pill_read", id=spelling)).ok == read.text, spelling

    long_content = "line one\n" + "x" * 400
    token = await store(call, rx, "Token lifetime", long_content, compound="note")
    flat = ("line one\\n" + "x" * 400)[:300] + "…"
    context = await call("prescription_context", prescription_id=rx)
    assert context.ok == (
        f"id: {rx}\n[open] Implement OAuth login  started: {started[:10]}\n\n"
        f"  id: {token} [note] Token lifetime\n  {flat}\n\n"
        f"  id: {jwt} [decision] Use stateless JWT\n  {content.replace(chr(10), chr(92) + 'n')}\n\n---\npills: 2"
    )
    cut = await call("prescription_context", prescription_id=rx, limit=1)
    assert cut.ok == (f"id: {rx}\n[open] Implement OAuth login  started: {started[:10]}\n\n"
                      f"  id: {token} [note] Token lifetime\n  {flat}\n\n---\npills: 2")

    revised = await call("pill_revise", id=token, title="Token lifetimes", compound="decision")
    assert revised.ok == f"id: {token}\ncompound: decision\ntitle: Token lifetimes"
    revised = await call("pill_revise", id=token, content="Access tokens live 15 minutes.", compound="note")
    assert revised.ok == f"id: {token}\ncompound: note\ntitle: Token lifetimes"
    assert (await call("pill_read", id=token)).ok.endswith("content:\nAccess tokens live 15 minutes.")
    nothing = await call("pill_revise", id=token)
    assert nothing.code == "validation_error"

    # A second prescription: closed-prescription rules, idempotent close and reopen.
    design = await open_prescription(call, local, "Initial design")
    assert design > rx
    bug = await store(call, design, "Login loops on refresh", "The refresh handler re-entered itself.", "bug")
    closed = await call("prescription_close", id=design)
    ended = closed.fields["ended_at"]
    assert_recent(ended)
    assert list(closed.fields) == ["id", "title", "started_at", "ended_at"]
    assert closed.fields["id"] == design and closed.fields["title"] == "Initial design"
    assert (await call("prescription_close", id=design)).ok == closed.text
    design_read = (await call("prescription_read", id=design)).ok
    assert fields(design_read)["status"] == "closed" and fields(design_read)["ended_at"] == ended
    assert list(fields(design_read)) == ["id", "title", "status", "started_at", "ended_at", "author"]

    for refused in (
        await call("pill_store", prescription_id=design, title="t", content="c", compound="k", **AUTHOR),
        await call("pill_revise", id=bug, title="Changed"),
        await call("pill_discard", id=bug),
    ):
        assert refused.code == "prescription_required"
        assert "closed" in refused.message and "prescription_reopen" in refused.message
        assert refused.error_fields["prescription_id"] == design
    assert "Login loops on refresh" in (await call("pill_read", id=bug)).ok

    design_started = closed.fields["started_at"]
    closed_context = await call("prescription_context", prescription_id=design)
    assert closed_context.ok.split("\n")[1] == (
        f"[closed] Initial design  started: {design_started[:10]} → {ended[:10]}"
    )
    index = await call("bottle_context", bottle_id=local)
    assert index.ok == (
        f"id: {design}\n[closed] Initial design  {design_started[:10]} → {ended[:10]}  1 pill\n\n"
        f"id: {rx}\n[open] Implement OAuth login  {started[:10]}  2 pills\n\n---\nprescriptions: 2"
    )
    assert (await call("bottle_context", bottle_id=local, limit=1)).ok == (
        f"id: {design}\n[closed] Initial design  {design_started[:10]} → {ended[:10]}  1 pill\n\n---\nprescriptions: 2"
    )

    reopened = await call("prescription_reopen", id=design)
    assert reopened.ok == (f"id: {design}\ntitle: Initial design\nstatus: open\nstarted_at: {design_started}\n"
                           "author: Ada Lovelace <ada@example.com>")
    assert (await call("prescription_reopen", id=design)).ok == reopened.text
    assert (await call("pill_revise", id=bug, title="Login loops on token refresh")).fields["title"] == \
        "Login loops on token refresh"
    fix = await store(call, design, "Guard the refresh handler", "A flag stops the re-entry.", "bug")

    # Discarding a pill hides it everywhere.
    assert (await call("pill_compounds")).ok == "- bug (2)\n- decision (1)\n- note (1)"
    dropped = await call("pill_discard", id=fix)
    assert list(dropped.fields) == ["id", "deleted_at"] and dropped.fields["id"] == fix
    assert_recent(dropped.fields["deleted_at"])
    # Discarding again is idempotent (as its annotation promises): the same answer, nothing changes.
    assert (await call("pill_discard", id=fix)).ok == dropped.text
    for after in ((await call("pill_read", id=fix)), (await call("pill_revise", id=fix, title="again"))):
        assert after.code == "not_found" and after.error_fields["id"] == fix
    assert fix not in (await call("prescription_context", prescription_id=design)).ok
    assert (await call("prescription_context", prescription_id=design)).ok.endswith("---\npills: 1")
    assert fix not in (await call("pill_search", query="guard flag re-entry handler")).text
    assert (await call("pill_compounds")).ok == "- bug (1)\n- decision (1)\n- note (1)"

    # Pills of the global bottle count too, and bottle_id narrows the compounds and the search.
    notes = await open_prescription(call, shared, "Shared notes")
    shared_pill = await store(call, notes, "Deploy checklist", "Run migrations before the switch.", "decision")
    assert (await call("pill_compounds")).ok == "- decision (2)\n- bug (1)\n- note (1)"
    assert (await call("pill_compounds", bottle_id=shared)).ok == "- decision (1)"
    assert (await call("pill_compounds", bottle_id=local, limit=1)).ok == "- bug (1)"
    found = await call("pill_search", query="stateless JWT")
    assert found.ok == (f"Found 1 pill\nmatch: all words\n\nid: {jwt}\ncompound: decision\n"
                        f"title: Use stateless JWT\nbottle: my-project\nsnippet: {fields(found.text)['snippet']}")
    assert "JWT" in fields(found.text)["snippet"]
    across = await call("pill_search", compound="decision")
    assert hit_ids(across.ok) == [shared_pill, jwt]
    assert [r.get("bottle") for r in records(across.text)[1:]] == ["shared-notes", "my-project"]
    assert hit_ids((await call("pill_search", compound="decision", bottle_id=local)).ok) == [jwt]
    assert (await call("pill_search", query="migrations", bottle_id=local)).ok == "No pills found."

    # Discarding a prescription takes its pills with it, and closes it.
    counts = {}
    for title, pills in (("Three pills", 3), ("One pill", 1), ("No pill", 0)):
        gone = await open_prescription(call, local, title)
        made = [await store(call, gone, f"{title} {n}", f"scratch {n}") for n in range(pills)]
        counts[gone] = (pills, made)
    ambiguous = await _ambiguous_pills(call, [pill for _, made in counts.values() for pill in made])
    for gone, (pills, made) in counts.items():
        noun = "pill" if pills == 1 else "pills"
        assert (await call("prescription_discard", id=gone)).ok == \
            f"Prescription {gone} discarded with its {pills} {noun}."
        assert (await call("prescription_read", id=gone)).code == "not_found"
        assert (await call("prescription_context", prescription_id=gone)).ok == ""
        assert (await call("prescription_discard", id=gone)).ok == \
            f"Prescription {gone} was discarded already; nothing changed."
        refused = await call("pill_store", prescription_id=gone, title="t", content="c", compound="k", **AUTHOR)
        assert refused.code == "prescription_required"
        for pill in made:
            assert (await call("pill_read", id=pill)).code == "not_found"
        stored_row = row(db, "prescription", gone)
        assert stored_row["deleted_at"] is not None and stored_row["ended_at"] is not None
    assert ambiguous  # the scenario did check an ambiguous prefix
    assert (await call("bottle_context", bottle_id=local)).ok.endswith("---\nprescriptions: 2")
    assert "scratch" not in (await call("pill_search", query="scratch")).ok

    # Unknown ids.
    unknown = "0123456789ab"
    assert (await call("prescription_context", prescription_id=unknown)).ok == ""
    for tool, argument in (("pill_read", "id"), ("pill_revise", "id"), ("pill_discard", "id"),
                           ("prescription_read", "id"), ("prescription_close", "id"),
                           ("prescription_reopen", "id"), ("prescription_discard", "id"),
                           ("bottle_context", "bottle_id"), ("capsule_read", "id"), ("capsule_revise", "id"),
                           ("capsule_discard", "id"), ("pill_compounds", "bottle_id")):
        extra = {"title": "x"} if tool.endswith("_revise") else {}
        missing = await call(tool, **{argument: unknown}, **extra)
        assert missing.code == "not_found", tool
        assert missing.error_fields[argument] == unknown, tool
    for tool, args in (("prescription_open", {"title": "t", **AUTHOR}), ("pill_search", {"query": "jwt"})):
        assert (await call(tool, bottle_id=unknown, **args)).code == "not_found", tool
    no_rx = await call("pill_store", prescription_id=unknown, title="t", content="c", compound="k", **AUTHOR)
    assert no_rx.code == "prescription_required" and unknown in no_rx.message
    assert no_rx.error_fields["prescription_id"] == unknown


async def _ambiguous_pills(call: Call, pills: list[str]) -> bool:
    """Pills made within the same ~65 s share their first 8 hex digits: such a prefix is ambiguous."""
    by_prefix: dict[str, list[str]] = {}
    for pill in pills:
        by_prefix.setdefault(pill[:8], []).append(pill)
    prefix, group = max(by_prefix.items(), key=lambda item: len(item[1]))
    assert len(group) >= 2, pills
    answer = await call("pill_read", id=prefix)
    assert answer.code == "ambiguous_id"
    assert answer.error_fields["id"] == prefix
    candidates = answer.error_fields["candidates"].split(", ")
    assert set(group) <= {candidate[:12] for candidate in candidates}
    assert all(candidate.startswith(prefix) and len(candidate) >= 12 for candidate in candidates)
    assert (await call("pill_read", id=prefix.upper())).code == "ambiguous_id"
    return True


async def tour_capsules(call: Call) -> None:
    assert (await call("capsule_compounds")).ok == "No compounds found."
    assert (await call("capsule_search", query="tabs")).ok == "No capsules found."
    stored = await call("capsule_store", title="Use tabs", content="Indent with tabs\nin Makefiles",
                        compound="convention")
    tabs = short_id(stored.fields["id"])
    assert stored.ok == f"id: {tabs}\ntitle: Use tabs\ncompound: convention"
    read = await call("capsule_read", id=tabs[:8])
    created = read.fields["created"]
    assert abs(millisecond(tabs) - assert_recent(created)) < timedelta(seconds=5)
    assert read.ok == f"id: {tabs}\ncreated: {created}\ncompound: convention\ntitle: Use tabs\n" \
                      "content:\nIndent with tabs\nin Makefiles"
    assert (await call("capsule_read", id=tabs.upper())).ok == read.text
    revised = await call("capsule_revise", id=tabs, title="Use tabs in Makefiles")
    assert revised.ok == f"id: {tabs}\ncompound: convention\ntitle: Use tabs in Makefiles"
    assert (await call("capsule_revise", id=tabs)).code == "validation_error"
    too_long = await call("capsule_revise", id=tabs, content="x" * 5003)
    assert too_long.code == "validation_error" and "3 characters" in too_long.message
    assert "trim" in too_long.message

    workflow = short_id((await call("capsule_store", title="Release", content="Tag, then push.",
                                    compound="workflow")).fields["id"])
    spare = short_id((await call("capsule_store", title="Line length", content="120 columns",
                                 compound="convention")).fields["id"])
    assert (await call("capsule_compounds")).ok == "- convention (2)\n- workflow (1)"
    assert (await call("capsule_compounds", limit=1)).ok == "- convention (2)"
    found = await call("capsule_search", query="makefiles")
    assert list(records(found.ok)[1]) == ["id", "compound", "title", "snippet"]
    assert found.ok.startswith("Found 1 capsule\nmatch: all words\n\n") and hit_ids(found.text) == [tabs]
    assert hit_ids((await call("capsule_search", compound="convention")).ok) == [spare, tabs]
    dropped = await call("capsule_discard", id=spare)
    assert dropped.ok == f"id: {spare}\ndeleted_at: {dropped.fields['deleted_at']}"
    assert_recent(dropped.fields["deleted_at"])
    assert (await call("capsule_read", id=spare)).code == "not_found"
    assert (await call("capsule_discard", id=spare)).ok == dropped.text
    assert (await call("capsule_revise", id=spare, title="x")).code == "not_found"
    assert (await call("capsule_compounds")).ok == "- convention (1)\n- workflow (1)"
    assert (await call("capsule_search", query="columns")).ok == "No capsules found."
    assert hit_ids((await call("capsule_search", compound="workflow")).ok) == [workflow]


async def tour_input_rules(call: Call, place: Place, local: str) -> None:
    rx = await open_prescription(call, local, "Limits")

    async def pill(**overrides: object) -> Answer:
        values = {"prescription_id": rx, "title": "A title", "content": "Some content", "compound": "note",
                  **AUTHOR, **overrides}
        return await call("pill_store", **values)

    # At the limits: accepted, and read back whole.
    edge = await pill(title="T" * 255, content="c" * 4999 + "\n", compound="k" * 64)
    read = (await call("pill_read", id=edge.fields["id"])).ok
    assert fields(read)["title"] == "T" * 255 and fields(read)["compound"] == "k" * 64
    assert read.endswith("content:\n" + "c" * 4999 + "\n")
    tabbed = await pill(content="a\tb\nc")
    assert (await call("pill_read", id=tabbed.fields["id"])).ok.endswith("content:\na\tb\nc")
    # Lengths count code points: 255 emoji (astral, two UTF-16 units each) are a valid title, 256 are not.
    emoji = await pill(title="😀" * 255, content="😀" * 5000, compound="😀" * 64)
    assert fields((await call("pill_read", id=emoji.fields["id"])).ok)["title"] == "😀" * 255
    assert (await pill(title="😀" * 256)).error_fields["title"] == "must be 1-255 characters, got 256"
    accented = await pill(title="Café ☕ naïve 日本", content="ünïcödé ✓")
    assert fields((await call("pill_read", id=accented.fields["id"])).ok)["title"] == "Café ☕ naïve 日本"

    over = {
        "title": ("T" * 256, "must be 1-255 characters, got 256"),
        "compound": ("k" * 65, "must be 1-64 characters, got 65"),
    }
    for field, (value, detail) in over.items():
        refused = await pill(**{field: value})
        assert refused.code == "validation_error" and refused.error_fields[field] == detail, field
    content = await pill(content="c" * 5001)
    assert content.code == "validation_error"
    assert "1 character" in content.message and "5000" in content.message and "split" in content.message
    revise = await call("pill_revise", id=edge.fields["id"], content="c" * 5200)
    assert revise.code == "validation_error" and "200 characters" in revise.message and "trim" in revise.message

    for field, high in (("title", 255), ("content", 5000), ("compound", 64), ("author_name", 255),
                        ("author_email", 255)):
        empty = await pill(**{field: ""})
        assert empty.code == "validation_error", field
        assert empty.error_fields[field] == f"must be 1-{high} characters, got 0"
        blank = await pill(**{field: "   "})
        assert blank.code == "validation_error" and field in blank.error_fields, field
    for bad in ("a\x00b", "bell\x07", "two\nlines", "tab\there", "del\x7f", "esc\x1b[0m"):
        refused = await pill(title=bad)
        assert refused.code == "validation_error" and "must not contain" in refused.error_fields["title"], bad
    assert "NUL" in (await pill(title="a\x00b")).error_fields["title"]
    assert (await pill(content="nul\x00here")).code == "validation_error"
    assert (await pill(content="bell\x07")).code == "validation_error"
    assert (await call("bottle_create", name="bell", display_name="Bell\x07", scope="global")).code == \
        "validation_error"

    # Input that cannot be read at all.
    assert (await pill(title=12345)).code == "invalid_input"
    assert (await pill(content=["a", "b"])).code == "invalid_input"
    assert (await pill(compound={"k": 1})).code == "invalid_input"
    missing = await call("pill_store", prescription_id=rx, title="t", compound="k", **AUTHOR)
    assert missing.code == "invalid_input" and missing.error_fields["content"] == "is required"
    assert (await call("pill_read")).code == "invalid_input"
    assert (await call("pill_search", query="x", limit="5")).code == "invalid_input"
    assert (await call("pill_search", query="x", fuzzy="yes")).code == "invalid_input"
    assert (await call("pill_search", query="x", limit=True)).code == "invalid_input"
    assert (await call("bottle_create", name="galaxy", display_name="G", scope="galactic")).code == "invalid_input"
    # null is the same as leaving an optional field out.
    assert (await call("pill_search", query="limits", limit=None, fuzzy=None, bottle_id=None)).is_error is False

    # Ids.
    for tool, field in (("pill_read", "id"), ("prescription_read", "id"), ("capsule_read", "id"),
                        ("prescription_context", "prescription_id")):
        short = await call(tool, **{field: "0123456"})
        assert short.code == "validation_error", tool
        not_hex = await call(tool, **{field: "zzzzzzzz"})
        assert not_hex.code == "validation_error", tool
    # A bottle_id may also be a bottle's name: what is neither is not found, in both readings.
    for neither in ("0123456", "zzzzzzzz"):
        unnamed = await call("bottle_context", bottle_id=neither)
        assert unnamed.code == "not_found" and "name or id" in unnamed.message, neither
    seven = await pill(prescription_id=rx[:7])
    assert seven.code == "validation_error" and "8" in seven.error_fields["prescription_id"]

    # limits of lists.
    for tool, args in (("pill_search", {"query": "x"}), ("capsule_search", {"query": "x"})):
        for limit in (0, 101):
            assert (await call(tool, limit=limit, **args)).code == "validation_error", (tool, limit)
        assert (await call(tool, limit=100, **args)).is_error is False
    for tool, args in (("bottle_context", {"bottle_id": local}), ("prescription_context", {"prescription_id": rx}),
                       ("pill_compounds", {}), ("capsule_compounds", {})):
        for limit in (0, 201):
            assert (await call(tool, limit=limit, **args)).code == "validation_error", (tool, limit)
        assert (await call(tool, limit=200, **args)).is_error is False
    for tool in ("pill_search", "capsule_search"):
        neither = await call(tool)
        assert neither.code == "validation_error" and "query" in neither.error_fields, tool

    assert (await call("prescription_discard", id=rx)).ok == f"Prescription {rx} discarded with its 4 pills."


async def tour_vinculate(call: Call, place: Place, local: str) -> None:
    linked = await call("bottle_vinculate")
    assert linked.ok == (f"status: already_linked\nbottle_id: {local}\nname: my-project\n"
                         f"display_name: My Project\ndb_path: {local_db(place.project)}")
    assert (await call("bottle_vinculate", directory=str(place.project))).ok == linked.text

    empty = place.scratch / "empty-dir"
    empty.mkdir()
    missing = await call("bottle_vinculate", directory=str(empty))
    assert missing.code == "db_not_found" and missing.error_fields["directory"] == str(empty.resolve())
    gone = await call("bottle_vinculate", directory=str(place.scratch / "does-not-exist"))
    assert gone.code == "db_not_found"

    foreign = place.scratch / "plain-sqlite"
    local_db(foreign).parent.mkdir(parents=True)
    with sqlite3.connect(local_db(foreign)) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    plain = await call("bottle_vinculate", directory=str(foreign))
    assert plain.code == "no_bottle_in_db" and plain.error_fields["db_path"] == str(local_db(foreign.resolve()))

    garbage = place.scratch / "not-sqlite"
    local_db(garbage).parent.mkdir(parents=True)
    local_db(garbage).write_bytes(b"this is not a database at all\n" * 100)
    assert (await call("bottle_vinculate", directory=str(garbage))).code == "no_bottle_in_db"

    # A real Pillbox schema with no bottle in it.
    hollow = place.scratch / "hollow"
    local_db(hollow).parent.mkdir(parents=True)
    with sqlite3.connect(local_db(place.project)) as source, sqlite3.connect(local_db(hollow)) as target:
        source.backup(target)
        target.executescript("PRAGMA foreign_keys=OFF; DELETE FROM pillbox_pill; "
                             "DELETE FROM pillbox_prescription; DELETE FROM pillbox_bottle;")
    assert (await call("bottle_vinculate", directory=str(hollow))).code == "no_bottle_in_db"

    if place.home is not None:
        # The directory whose .pillbox/pillbox.db is the global database (HOME), and the data directory itself.
        for directory in (place.home, place.data_dir):
            circular = await call("bottle_vinculate", directory=str(directory))
            assert circular.code == "circular_link", directory
    assert "Bottles (2)" == (await call("bottle_list")).ok.split("\n")[0]


async def tour_unlinked(call: Call, place: Place, local: str, shared: str) -> None:
    shutil.rmtree(place.project / ".pillbox")
    listing = (await call("bottle_list")).ok
    assert listing == (f"Bottles (2)\n\n○ My Project [local] {local} [unlinked]\n  name: my-project · "
                       f"{place.project}\n\n● Shared Notes [global] {shared}\n  name: shared-notes · (none: a "
                       "global bottle)")


# ---------------------------------------------------------------- HTTP: who may touch the file system


@sync_to_async
def full(model: type, short: str) -> str:
    """The whole UUID (with dashes) of a row of the global database."""
    return str(model.objects.get(id__gte=uuid.UUID(short.ljust(32, "0")), id__lte=uuid.UUID(short.ljust(32, "f"))).id)


def test_tools_http_lists_the_22_tools_in_every_client_mode(site, alice):
    async def scenario(mode: str) -> None:
        async with http_client(site + "/pillbox/mcp", key=alice.key, mode=mode) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == PILLBOX_TOOLS
            assert tools["pill_read"].annotations.read_only_hint is True
            assert tools["pill_discard"].annotations.destructive_hint is True
            assert tools["prescription_close"].annotations.idempotent_hint is True
            assert tools["pill_store"].input_schema["properties"]["content"]["maxLength"] == 5000
            assert tools["bottle_create"].input_schema["properties"]["scope"]["enum"] == ["local", "global"]
            call = caller_for(client)
            name = f"mode-{mode.replace('-', '')}"
            created = await call("bottle_create", name=name, display_name=f"Mode {mode}", scope="global")
            assert created.fields["name"] == name and created.fields["scope"] == "global"
            assert f"● Mode {mode} [global] {created.fields['id']}" in (await call("bottle_list")).ok

    for mode in ("auto", "legacy", "2026-07-28"):
        run(scenario(mode))


def test_bottle_create_over_http_refuses_local_bottles_to_non_staff(site, alice, operator, settings,
                                                                    tmp_path, local_bottles_over_http):
    settings.PILLBOX_ROOT = tmp_path.resolve()

    async def scenario() -> None:
        async with http(site, alice.key) as call:
            for args in ({}, {"scope": "local"}):
                refused = await call("bottle_create", name="mine", display_name="Mine", **args)
                assert refused.code == "validation_error" and 'scope: "global"' in refused.message
            link = await call("bottle_vinculate", directory=str(tmp_path))
            assert link.code == "validation_error" and 'scope: "global"' in link.message
            assert (await call("bottle_vinculate")).code == "validation_error"
            made = await call("bottle_create", name="mine", display_name="Mine", scope="global")
            # A remote non-staff agent is never told where the server keeps its data (a global bottle has no
            # directory to show anyone).
            assert made.fields["scope"] == "global" and made.fields["directory"] == "(none: a global bottle)"
            assert str(settings.PILLBOX_HOME) not in made.ok
            rx = await open_prescription(call, made.fields["id"])
            pill = await store(call, rx, "Remote pill", "Stored by a remote agent.")
            assert fields((await call("pill_read", id=pill)).ok)["title"] == "Remote pill"
        assert not (tmp_path / ".pillbox").exists()

        async with http(site, operator.key) as call:
            made = await call("bottle_create", name="on-server", display_name="On server")
            assert made.fields["scope"] == "local" and made.fields["directory"] == str(tmp_path.resolve())
            assert local_db(tmp_path).is_file()

    run(scenario())


def test_bottle_create_over_http_without_pillbox_root_refuses_local_even_to_staff(site, operator, settings):
    settings.PILLBOX_ROOT = None

    async def scenario() -> None:
        async with http(site, operator.key) as call:
            refused = await call("bottle_create", name="nowhere", display_name="Nowhere")
            assert refused.code == "validation_error" and 'scope: "global"' in refused.message
            assert (await call("bottle_vinculate", directory="/tmp")).code == "validation_error"
            assert (await call("bottle_create", name="nowhere", display_name="Nowhere", scope="global")).is_error \
                is False

    run(scenario())


def test_tools_http_two_users_see_nothing_of_each_other(site, alice, bob):
    async def scenario() -> None:
        async with http(site, alice.key) as a, http(site, bob.key) as b:
            bottle = await new_bottle(a, "secret-project")
            rx = await open_prescription(a, bottle, "Alice's session")
            pill = await store(a, rx, "Alice's password policy", "Rotate every 90 days.", "security")
            capsule = short_id((await a("capsule_store", title="Alice's editor", content="Vim with tabs",
                                        compound="environment")).fields["id"])
            before = {
                "rx": (await a("prescription_read", id=rx)).ok, "pill": (await a("pill_read", id=pill)).ok,
                "capsule": (await a("capsule_read", id=capsule)).ok,
            }
            full_ids = {"bottle": await full(Bottle, bottle), "rx": await full(Prescription, rx),
                        "pill": await full(Pill, pill), "capsule": await full(Capsule, capsule)}

            assert (await b("bottle_list")).ok == "No bottles registered."
            assert (await b("pill_compounds")).ok == "No compounds found."
            assert (await b("capsule_compounds")).ok == "No compounds found."
            for query in ("password", "policy rotate", "alice", "90"):
                assert (await b("pill_search", query=query)).ok == "No pills found."
                assert (await b("pill_search", query=query, fuzzy=True)).ok == "No pills found."
            assert (await b("pill_search", compound="security")).ok == "No pills found."
            assert (await b("capsule_search", query="editor vim")).ok == "No capsules found."
            assert (await b("capsule_search", compound="environment")).ok == "No capsules found."

            spellings = (lambda s, f: s, lambda s, f: s[:8], lambda s, f: f, lambda s, f: f.replace("-", "").upper())
            for spelling in spellings:
                bid, rid = spelling(bottle, full_ids["bottle"]), spelling(rx, full_ids["rx"])
                pid, cid = spelling(pill, full_ids["pill"]), spelling(capsule, full_ids["capsule"])
                for tool, args in (
                    ("bottle_context", {"bottle_id": bid}), ("pill_compounds", {"bottle_id": bid}),
                    ("pill_search", {"bottle_id": bid, "query": "password"}),
                    ("prescription_open", {"bottle_id": bid, "title": "Intrusion", **AUTHOR}),
                    ("prescription_read", {"id": rid}), ("prescription_close", {"id": rid}),
                    ("prescription_reopen", {"id": rid}), ("prescription_discard", {"id": rid}),
                    ("pill_read", {"id": pid}), ("pill_revise", {"id": pid, "title": "Owned"}),
                    ("pill_discard", {"id": pid}),
                    ("capsule_read", {"id": cid}), ("capsule_revise", {"id": cid, "title": "Owned"}),
                    ("capsule_discard", {"id": cid}),
                ):
                    assert (await b(tool, **args)).code == "not_found", (tool, args)
                assert (await b("prescription_context", prescription_id=rid)).ok == ""
                intrusion = await b("pill_store", prescription_id=rid, title="Injected", content="x",
                                    compound="security", **AUTHOR)
                assert intrusion.code in ("prescription_required", "not_found")

            # Bob may use the same bottle name: names are unique per user.
            assert (await b("bottle_create", name="secret-project", display_name="Bob's", scope="global")).fields[
                "name"] == "secret-project"
            assert (await b("bottle_vinculate")).code == "validation_error"

            assert (await a("prescription_read", id=rx)).ok == before["rx"]
            assert (await a("pill_read", id=pill)).ok == before["pill"]
            assert (await a("capsule_read", id=capsule)).ok == before["capsule"]
            assert hit_ids((await a("pill_search", query="password")).ok) == [pill]
            assert (await a("bottle_list")).ok.startswith("Bottles (1)")

    run(scenario())


def test_tools_http_local_bottle_reachable_only_through_the_registry(site, operator, settings, tmp_path,
                                                                    local_bottles_over_http):
    """Over HTTP nothing is registered implicitly: a second staff user working in the same PILLBOX_ROOT
    reaches the bottle there only after bottle_vinculate."""
    from tests.conftest import make_person

    other = make_person("root2", staff=True)
    project = (tmp_path / "project").resolve()
    project.mkdir()
    settings.PILLBOX_ROOT = project

    async def scenario() -> None:
        async with http(site, operator.key) as a, http(site, other.key) as b:
            bottle = await new_bottle(a, "server-project", scope="local")
            rx = await open_prescription(a, bottle)
            pill = await store(a, rx, "Server-side fact", "The cache lives in Redis.", "fact")
            assert (await b("bottle_list")).ok == "No bottles registered."
            assert (await b("bottle_context", bottle_id=bottle)).code == "not_found"
            assert (await b("pill_read", id=pill)).code == "not_found"
            assert (await b("pill_search", query="redis")).ok == "No pills found."
            again = await b("bottle_create", name="other-name", display_name="Other")
            assert again.code == "already_exists"
            linked = await b("bottle_vinculate")
            assert linked.ok == (f"status: linked\nbottle_id: {bottle}\nname: server-project\n"
                                 f"display_name: Server Project\ndb_path: {local_db(project)}")
            assert (await b("bottle_vinculate", directory=str(project))).fields["status"] == "already_linked"
            assert hit_ids((await b("pill_search", query="redis")).ok) == [pill]
            assert fields((await b("pill_read", id=pill)).ok)["title"] == "Server-side fact"

    run(scenario())


# ---------------------------------------------------------------- stdio: several OS users of one machine


def test_tools_stdio_other_users_of_the_machine_reach_the_bottle(tmp_path):
    home = fresh_home(tmp_path)
    project = (home / "code" / "shared").resolve()
    below = project / "src" / "pkg"
    below.mkdir(parents=True)

    async def scenario() -> None:
        async with stdio_sessions(home, (project, "alice"), (below, "bob"), (home, "erin")) as (alice, bob, erin):
            assert (await erin("bottle_list")).ok == "No bottles registered."
            bottle = await new_bottle(alice, "shared", scope="local")
            rx = await open_prescription(alice, bottle, "Alice's work")
            pill = await store(alice, rx, "Build with make", "Run make all before pushing.", "workflow")
            listed = f"Bottles (1)\n\n● Shared [local] {bottle}\n  name: shared · {project}"

            # bob works below the project: the database is found walking up, like git, and registered for him.
            # ... and marked as the bottle of his directory, though he is in a sub-folder.
            assert (await bob("bottle_list")).ok == listed.replace(bottle, f"{bottle}  ← this directory")
            assert (await bob("bottle_vinculate")).code == "db_not_found"
            assert (await bob("bottle_vinculate", directory=str(project))).fields["status"] == "already_linked"
            assert (await bob("prescription_context", prescription_id=rx)).ok.endswith("---\npills: 1")
            assert short_id((await bob("pill_store", prescription_id=rx, title="Bob was here", content="Hello.",
                                       compound="note", **AUTHOR)).fields["id"])

            # erin works elsewhere (her home): nothing until she links the directory.
            assert (await erin("bottle_list")).ok == "No bottles registered."
            assert (await erin("bottle_context", bottle_id=bottle)).code == "not_found"
            assert (await erin("pill_read", id=pill)).code == "not_found"
            assert (await erin("pill_search", query="make")).ok == "No pills found."
            refused = await erin("bottle_create", name="home", display_name="Home")
            assert refused.code == "validation_error" and "home directory" in refused.message
            linked = await erin("bottle_vinculate", directory=str(project))
            assert linked.ok == (f"status: linked\nbottle_id: {bottle}\nname: shared\ndisplay_name: Shared\n"
                                 f"db_path: {local_db(project)}")
            again = await erin("bottle_vinculate", directory=str(project))
            assert again.ok == linked.text.replace("status: linked", "status: already_linked")
            assert (await erin("bottle_list")).ok == listed
            assert (await erin("bottle_context", bottle_id=bottle)).ok.startswith(
                f"id: {rx}\n[open] Alice's work  ")
            found = await erin("pill_search", query="make")
            assert hit_ids(found.ok) == [pill] and records(found.text)[1]["bottle"] == "shared"

            shutil.rmtree(project / ".pillbox")
            assert (await erin("bottle_list")).ok == \
                f"Bottles (1)\n\n○ Shared [local] {bottle} [unlinked]\n  name: shared · {project}"
            assert (await erin("pill_search", query="make")).ok == "No pills found."

    run(scenario())


# ---------------------------------------------------------------- id prefixes across databases


def test_tools_prefix_matching_rows_in_two_databases_is_ambiguous(site, operator, settings, tmp_path,
                                                                 local_bottles_over_http):
    """Ids are monotonic within one database only: a local bottle and a global one made in the same ~65 s share
    their first 8 hex digits. Asking for the global one by that prefix must not silently answer the local one."""
    settings.PILLBOX_ROOT = tmp_path.resolve()

    async def scenario() -> None:
        async with http(site, operator.key) as call:
            # Made back to back, a 65 s window boundary falls before the local bottle or after it, not both.
            before = await new_bottle(call, "there-before")
            local = await new_bottle(call, "here", scope="local")
            after = await new_bottle(call, "there-after")
            far = before if before[:8] == local[:8] else after
            assert far[:8] == local[:8]
            rx = await open_prescription(call, far, "Global work")
            answer = await call("bottle_context", bottle_id=far[:8])
            assert answer.is_error, f"asked for {far}, got the context of another bottle:\n{answer.text}"
            assert answer.code == "ambiguous_id"
            assert {local, far} <= {c[:12] for c in answer.error_fields["candidates"].split(", ")}
            assert rx  # the global bottle does have a prescription the answer above should have led to

    run(scenario())


def test_bottle_vinculate_keeps_names_unique_among_reachable_bottles(site, operator, settings, tmp_path,
                                                                   local_bottles_over_http):
    from tests.conftest import make_person

    other = make_person("root2", staff=True)
    theirs_dir = (tmp_path / "theirs").resolve()
    theirs_dir.mkdir()
    settings.PILLBOX_ROOT = theirs_dir

    async def scenario() -> None:
        async with http(site, operator.key) as mine, http(site, other.key) as theirs:
            local = await new_bottle(theirs, "shared", scope="local")
            await store(theirs, await open_prescription(theirs, local), "Cache in their project", "Local cache")
            own = await new_bottle(mine, "shared")
            await store(mine, await open_prescription(mine, own), "Cache in my global bottle", "Global cache")
            linked = await mine("bottle_vinculate", directory=str(theirs_dir))
            if linked.is_error:
                assert linked.code == "already_exists" and "shared" in linked.message
                return
            found = await mine("pill_search", query="cache")
            names = [record["bottle"] for record in records(found.ok)[1:]]
            assert len(names) == 2 and len(set(names)) == 2, found.text

    run(scenario())
