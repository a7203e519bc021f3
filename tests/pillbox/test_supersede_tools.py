"""Superseding through the tools, end to end with the SDK's own client: a pill (or capsule) that a newer one
supersedes leaves the searches, the contexts and the session-start hook, pill_read says what replaced it,
include_superseded shows it marked, and revising the newer one with supersedes: [] brings it back. Bad ids are
refused and change nothing; another user's pills are never offered nor superseded."""

from __future__ import annotations

from pathlib import Path

from tests.clients import run
from tests.pillbox.scenario import (
    AUTHOR,
    Call,
    fresh_home,
    hit_ids,
    new_bottle,
    open_prescription,
    records,
    site_fixture,  # noqa: F401 (a fixture)
    stdio_session,
    store,
)
from tests.pillbox.scenario import http_session as http
from tests.pillbox.test_origin import hook

OLD = ("Deploys go through Fabric", "We deploy with fab deploy from a laptop.")
NEW = ("Deploys go through the pipeline", "We deploy from CI: merging to main runs the deploy job.")
OTHER = ("Logs are kept for 30 days", "The log store keeps 30 days of logs.")


def titles(text: str) -> list[str]:
    return [record["title"] for record in records(text) if "title" in record]


async def shown_everywhere(call: Call, bottle: str, rx: str, old: str) -> bool:
    """Whether the old pill is in each view an agent has (all agreeing, or the test fails)."""
    searched = old in hit_ids((await call("pill_search", query="deploy")).ok)
    listed = old in hit_ids((await call("pill_search", compound="decision")).ok)
    context = f"id: {old}" in (await call("prescription_context", prescription_id=rx)).ok
    assert searched == listed == context, (searched, listed, context)
    return searched


async def pills(call: Call, home: Path, project: Path) -> None:
    bottle = await new_bottle(call, "shop", scope="local")
    rx = await open_prescription(call, bottle)
    old = await store(call, rx, *OLD, compound="decision")
    other = await store(call, rx, *OTHER, compound="decision")
    assert await shown_everywhere(call, bottle, rx, old)

    stored = (await call("pill_store", prescription_id=rx, title=NEW[0], content=NEW[1], compound="decision",
                         supersedes=[old], **AUTHOR)).ok
    new = records(stored)[0]["id"]
    assert f"supersedes: {old} (left out of searches and contexts" in stored
    assert not await shown_everywhere(call, bottle, rx, old)
    assert (await call("pill_compounds")).ok == "- decision (2)"  # the superseded one is not counted
    assert hit_ids((await call("pill_search", query="deploy")).ok) == [new]
    marked = (await call("pill_search", query="deploy", include_superseded=True)).ok
    assert set(hit_ids(marked)) == {old, new} and f"{OLD[0]} (superseded by {new})" in titles(marked)
    assert NEW[0] in titles(marked)  # the newer one is not marked
    assert f"superseded by: {new}\n" in (await call("pill_read", id=old)).ok
    assert f"supersedes: {old}\n" in (await call("pill_read", id=new)).ok
    context = (await call("bottle_context", bottle_id=bottle)).ok
    assert "2 pills" in context and "(1 superseded pill hidden; pill_search with include_superseded" in context
    assert "(1 superseded pill hidden" in (await call("prescription_context", prescription_id=rx)).ok
    said, _ = hook(home, project, PILLBOX_HOME=str(home / ".pillbox"))
    assert NEW[0] in said and OTHER[0] in said and OLD[0] not in said and "1 superseded pill hidden" in said

    # A revise without supersedes leaves them as they are; with [] it brings them back.
    assert "supersedes" not in (await call("pill_revise", id=new, title=NEW[0] + " (CI)")).ok
    assert not await shown_everywhere(call, bottle, rx, old)
    undone = (await call("pill_revise", id=new, supersedes=[])).ok
    assert "supersedes: none (every row it superseded is back" in undone
    assert await shown_everywhere(call, bottle, rx, old)
    assert "superseded by" not in (await call("pill_read", id=old)).ok
    assert "superseded" not in (await call("bottle_context", bottle_id=bottle)).ok
    said, _ = hook(home, project, PILLBOX_HOME=str(home / ".pillbox"))
    assert OLD[0] in said and "superseded" not in said

    # Superseding again, then discarding the newer pill: the old one comes back.
    await call("pill_revise", id=new, supersedes=[old, other])
    assert hit_ids((await call("pill_search", compound="decision")).ok) == [new]
    await call("pill_discard", id=new)
    assert set(hit_ids((await call("pill_search", compound="decision")).ok)) == {old, other}

    await refusals(call, rx, old, other)


async def refusals(call: Call, rx: str, old: str, other: str) -> None:
    """Each bad supersede is refused with a clear error, and nothing changes."""
    newer = await store(call, rx, "Deploy checklist", "Run the smoke tests after every deploy.", "decision")
    await call("pill_revise", id=newer, supersedes=[old])
    elsewhere = await open_prescription(call, await new_bottle(call, "elsewhere"))
    foreign = await store(call, elsewhere, "Another bottle's pill", "Kept apart.", "decision")
    cases = [
        (dict(supersedes=["0123456789ab"]), "not_found", "No pill has the id 0123456789ab"),
        (dict(supersedes=[foreign]), "validation_error", "is in another bottle"),
        (dict(supersedes=[newer]), "validation_error", "cannot supersede itself"),
        (dict(supersedes=[old, "not-an-id!"]), "validation_error", "at least 8 hex digits"),
    ]
    for arguments, code, words in cases:
        refused = await call("pill_revise", id=newer, title="Changed", **arguments)
        assert refused.code == code and words in refused.text, refused.text
        if words == "cannot supersede itself":
            continue  # a pill being stored has no id to give
        stored = await call("pill_store", prescription_id=rx, title="Not stored", content="x", compound="decision",
                            **AUTHOR, **arguments)
        assert stored.code == code, stored.text
    cycle = await call("pill_revise", id=old, supersedes=[newer])
    assert cycle.code == "validation_error" and f"{newer} supersedes {old}" in cycle.message
    assert hit_ids((await call("pill_search", compound="decision", bottle_id="shop")).ok) == [newer, other]
    assert "Not stored" not in (await call("pill_search", query="stored", include_superseded=True)).ok
    assert "title: Deploy checklist\n" in (await call("pill_read", id=newer)).ok
    assert hit_ids((await call("pill_search", compound="decision", bottle_id="elsewhere")).ok) == [foreign]


async def capsules(call: Call, home: Path, project: Path) -> None:
    old = records((await call("capsule_store", title="Use tabs", content="Indent with tabs.",
                              compound="style")).ok)[0]["id"]
    stored = (await call("capsule_store", title="Use four spaces", content="Indent with four spaces.",
                         compound="style", supersedes=[old])).ok
    new = records(stored)[0]["id"]
    assert f"supersedes: {old}" in stored
    assert hit_ids((await call("capsule_search", query="indent")).ok) == [new]
    assert hit_ids((await call("capsule_search", compound="style")).ok) == [new]
    marked = (await call("capsule_search", query="indent", include_superseded=True)).ok
    assert f"Use tabs (superseded by {new})" in titles(marked)
    assert f"superseded by: {new}\n" in (await call("capsule_read", id=old)).ok
    said, _ = hook(home, project, PILLBOX_HOME=str(home / ".pillbox"))
    assert "Use four spaces" in said and "Use tabs" not in said and "1 superseded capsule hidden" in said
    assert (await call("capsule_revise", id=new, supersedes=[new])).code == "validation_error"
    assert (await call("capsule_revise", id=new, supersedes=[])).ok
    assert set(hit_ids((await call("capsule_search", query="indent")).ok)) == {old, new}


def test_supersede_and_undo_through_every_view_over_stdio(tmp_path):
    home = fresh_home(tmp_path)
    project = home / "code" / "shop"
    project.mkdir(parents=True)

    async def scenario() -> None:
        async with stdio_session(home, project) as call:
            await pills(call, home, project)
            await capsules(call, home, project)

    run(scenario())


def test_another_users_pills_are_never_offered_nor_superseded(site, alice, bob):
    async def scenario() -> None:
        async with http(site, alice.key) as mine, http(site, bob.key) as theirs:
            rx = await open_prescription(mine, await new_bottle(mine, "ops"))
            kept = await store(mine, rx, *OLD, compound="decision")
            their_rx = await open_prescription(theirs, await new_bottle(theirs, "ops"))
            newer = await store(theirs, their_rx, *NEW, compound="decision")
            refused = await theirs("pill_revise", id=newer, supersedes=[kept])
            assert refused.code == "not_found" and kept in refused.message
            assert (await theirs("pill_store", prescription_id=their_rx, title="x", content="y", compound="z",
                                 supersedes=[kept], **AUTHOR)).code == "not_found"
            capsule = records((await mine("capsule_store", title="Mine", content="Kept.", compound="c")).ok)[0]["id"]
            assert (await theirs("capsule_store", title="Theirs", content="Replaces?", compound="c",
                                 supersedes=[capsule])).code == "not_found"
            # Bob's own supersede never reaches Alice's rows, and his searches never offer them.
            await theirs("pill_revise", id=newer, supersedes=[])
            assert hit_ids((await theirs("pill_search", query="deploy", include_superseded=True)).ok) == [newer]
            assert hit_ids((await mine("pill_search", query="deploy")).ok) == [kept]
            assert "superseded" not in (await mine("pill_read", id=kept)).ok
            assert hit_ids((await mine("capsule_search", query="kept")).ok) == [capsule]

    run(scenario())
