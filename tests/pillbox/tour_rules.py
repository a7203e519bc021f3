"""The tour (test_tools.py) through the rules: what input the tools take and refuse, linking a directory
(bottle_vinculate), and a bottle whose directory is gone."""

from __future__ import annotations

import shutil
import sqlite3

from tests.pillbox.scenario import AUTHOR, Answer, Call, fields, local_db, open_prescription
from tests.pillbox.tour_records import Place


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
