"""The tour (test_tools.py) through the records: bottles, prescriptions and their pills, capsules; and the
``Place`` the touring agent works in. Each step asserts every answer and error code of its tools."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.pillbox.scenario import (
    AUTHOR,
    Call,
    assert_recent,
    fields,
    full_id,
    hit_ids,
    local_db,
    millisecond,
    open_prescription,
    records,
    row,
    short_id,
    store,
)


@dataclass
class Place:
    """Where a transport's agent works."""

    transport: str
    project: Path  # the working directory: local bottles are created here
    data_dir: Path  # where global bottles live (PILLBOX_HOME)
    scratch: Path  # for extra directories
    home: Path | None = None  # stdio only: the HOME whose .pillbox holds the global database


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
    assert found.ok == (f"Found 1 pill\nmatch: all words\nconfidence: medium\n\nid: {jwt}\ncompound: decision\n"
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
    assert found.ok.startswith("Found 1 capsule\nmatch: all words\nconfidence: medium\n\n")
    assert hit_ids(found.text) == [tabs]
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
