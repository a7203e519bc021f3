"""pill_duplicates, pill_tidy and pill_tidy_undo end to end through the SDK's own client: a plan, applied, undone
(the searches answer byte for byte as before), over HTTP between two users and over stdio on a project's own file;
bad input and stale plans change nothing."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

from asgiref.sync import sync_to_async

from pillbox.models import Pill, Registration, Tidy, TidyPlan
from tests.clients import run
from tests.pillbox.scenario import (
    Call,
    fields,
    fresh_home,
    local_db,
    new_bottle,
    open_prescription,
    site_fixture,  # noqa: F401 (a fixture)
    stdio_session,
    store,
)
from tests.pillbox.scenario import http_session as http

LESSON = ("Run migrations before deploy", "Always run the database migrations before deploying the web app.")
SAME_LESSON = [
    LESSON,
    ("run migrations before deploy", "always run the database migrations, before deploying the web app"),
    ("Run migrations before deploy", "Always run the database migations before deploying the web app."),
]
LOOK_ALIKES = [("HTTP timeout", "Set the HTTP client timeout to 30s for the payments API."),
               ("HTTP timeout", "Set the HTTP client timeout to 60s for the payments API.")]
OTHER = [("Where logs go", "Application logs are shipped to Loki through the Promtail sidecar."),
         ("Where logs go.", "Application logs are shipped to Loki through the Promtail sidecar")]
QUERIES = [{"query": "migrations deploy"}, {"query": "timeout"}, {"query": "logs Loki"}, {"compound": "note"},
           {"query": "database migrations", "limit": 100}]


async def fill(call: Call, name: str) -> tuple[str, list[str]]:
    """A bottle holding one lesson stored three times, two look-alikes and another lesson twice; its pills' ids in
    that order."""
    bottle = await new_bottle(call, name)
    rx = await open_prescription(call, bottle)
    pills = [await store(call, rx, title, content) for title, content in [*SAME_LESSON, *LOOK_ALIKES, *OTHER]]
    return bottle, pills


def plan_of(text: str) -> tuple[dict[str, str], list[list[str]]]:
    """The plan's header fields and its groups, each as [keeper id, other ids...]."""
    blocks = text.split("\n\n")
    groups = []
    for block in blocks[1:]:
        rows = block.split("\n")
        if rows[0].startswith("group: "):
            groups.append([row.split(": ", 1)[1].split(" · ")[0] for row in rows[1:]])
    return fields(blocks[0]), groups


async def searches(call: Call) -> list[str]:
    return [(await call("pill_search", **query)).ok for query in QUERIES]


@sync_to_async
def superseded_by(short_ids: list[str]) -> list[str | None]:
    marks = []
    for short in short_ids:
        pill = Pill.objects.get(id__gte=uuid.UUID(short.ljust(32, "0")), id__lte=uuid.UUID(short.ljust(32, "f")))
        marks.append(pill.superseded_by_id.hex[:12] if pill.superseded_by_id else None)
    return marks


@sync_to_async
def counts() -> tuple[int, int]:
    return TidyPlan.objects.count(), Tidy.objects.filter(undone_at__isnull=True).count()


def test_tidy_plan_apply_undo_between_two_users(site, alice, bob):
    async def scenario() -> None:
        async with http(site, alice.key) as call, http(site, bob.key) as other:
            bottle, pills = await fill(call, "alice-notes")
            bob_bottle, bob_pills = await fill(other, "bob-notes")
            before = await searches(call)
            bob_before = await searches(other)

            answer = (await call("pill_duplicates", bottle_id=bottle)).ok
            header, groups = plan_of(answer)
            assert header["looked_at"] == "7 pills (by text)" and header["groups"] == "2"
            # The newest copy of each lesson is kept; the look-alikes (30s, 60s) are never grouped.
            assert groups == [[pills[2], pills[1], pills[0]], [pills[6], pills[5]]]
            assert "keep: " + pills[2] in answer and "the newest" in answer
            assert "near-identical text" in answer and "the same text (case, spacing and punctuation aside)" in answer
            plan = header["plan"]
            # Asking again about an unchanged bottle answers the same plan; nothing changed meanwhile.
            assert plan_of((await call("pill_duplicates", bottle_id=bottle)).ok)[0]["plan"] == plan
            assert await superseded_by(pills) == [None] * 7

            # Another user's bottle, plan and pills are never offered, applied or undone.
            assert (await other("pill_duplicates", bottle_id=bottle)).code == "not_found"
            assert (await other("pill_tidy", plan_id=plan)).code == "not_found"
            bob_plan = plan_of((await other("pill_duplicates", bottle_id=bob_bottle)).ok)[0]["plan"]
            assert bob_plan != plan
            assert (await call("pill_tidy", plan_id=bob_plan)).code == "not_found"

            # Bad input changes nothing.
            wrong = await call("pill_tidy", plan_id=plan, groups=[1, 3])
            assert wrong.code == "validation_error" and "there is no group 3" in wrong.message
            assert (await call("pill_tidy", plan_id=plan, groups=[])).code == "validation_error"
            unknown = await call("pill_tidy", plan_id="0123456789ab")
            assert unknown.code == "not_found" and "pill_duplicates makes one" in unknown.message
            assert (await call("pill_tidy", plan_id="nonsense")).code == "validation_error"
            assert (await call("pill_tidy_undo", tidy_id="0123456789ab")).code == "not_found"
            assert (await call("pill_duplicates", bottle_id=bottle, surprise=True)).code == "invalid_input"
            assert await superseded_by(pills) == [None] * 7

            # Group 2 alone, then the rest: one transaction each, the keeper superseding the others.
            second = fields((await call("pill_tidy", plan_id=plan, groups=[2])).ok)
            assert second["groups"] == "2" and second["superseded"].startswith("1 pill,")
            assert await superseded_by(pills) == [None] * 5 + [pills[6], None]
            again = await call("pill_tidy", plan_id=plan, groups=[2])
            assert again.code == "validation_error" and f"applied already by the tidy {second['tidy']}" in again.message
            first = fields((await call("pill_tidy", plan_id=plan, groups=[1.0])).ok)
            assert await superseded_by(pills) == [pills[2], pills[2], None, None, None, pills[6], None]
            assert (await call("pill_tidy", plan_id=plan)).code == "validation_error"
            # The superseded copies leave pill_search; the keeper stays.
            after = (await call("pill_search", query="migrations deploy")).ok
            assert pills[2] in after and pills[0] not in after and pills[1] not in after
            assert await searches(call) != before
            # Superseded pills are no longer offered: only the look-alikes and the keepers remain, apart.
            assert "No duplicates found" in (await call("pill_duplicates", bottle_id=bottle)).ok
            assert (await other("pill_tidy_undo", tidy_id=first["tidy"])).code == "not_found"

            for tidy in (first["tidy"], second["tidy"]):
                done = fields((await call("pill_tidy_undo", tidy_id=tidy)).ok)
                assert done["status"] == "undone"
            assert await superseded_by(pills) == [None] * 7
            assert await searches(call) == before  # byte for byte
            twice = await call("pill_tidy_undo", tidy_id=first["tidy"])
            assert twice.code == "validation_error" and "undone already" in twice.message

            # Bob's pills were never touched, and his searches answer as before.
            assert await superseded_by(bob_pills) == [None] * 7
            assert await searches(other) == bob_before
    run(scenario())


def test_tidy_refuses_a_stale_plan_and_an_undo_over_a_later_change(site, alice):
    async def scenario() -> None:
        async with http(site, alice.key) as call:
            bottle, pills = await fill(call, "stale-notes")
            plan = plan_of((await call("pill_duplicates", bottle_id=bottle)).ok)[0]["plan"]
            await call("pill_revise", id=pills[1], content="Always run the database migrations first.")
            stale = await call("pill_tidy", plan_id=plan)
            assert stale.code == "validation_error" and "stale" in stale.message and pills[1] in stale.message
            assert await superseded_by(pills) == [None] * 7
            # Its other group is still as planned and may be applied alone.
            tidy = fields((await call("pill_tidy", plan_id=plan, groups=[2])).ok)["tidy"]

            await call("pill_discard", id=pills[0])
            assert pills[0] not in (await call("pill_duplicates", bottle_id=bottle)).ok  # discarded: never offered

            # A later decision about a tidied pill is not overwritten by the undo.
            await sync_to_async(set_superseded_by)(pills[5], pills[3])
            later = await call("pill_tidy_undo", tidy_id=tidy)
            assert later.code == "validation_error" and "superseded otherwise" in later.message
            assert await superseded_by([pills[5]]) == [pills[3]]
    run(scenario())


def set_superseded_by(short: str, newer: str) -> None:
    def pill(prefix: str) -> Pill:
        return Pill.objects.get(id__gte=uuid.UUID(prefix.ljust(32, "0")), id__lte=uuid.UUID(prefix.ljust(32, "f")))

    Pill.objects.filter(pk=pill(short).pk).update(superseded_by=pill(newer).pk)


def test_tidy_refuses_a_plan_of_a_bottle_no_longer_reached(site, alice):
    async def scenario() -> None:
        async with http(site, alice.key) as call:
            bottle, pills = await fill(call, "gone-notes")
            plan = plan_of((await call("pill_duplicates", bottle_id=bottle)).ok)[0]["plan"]
            await sync_to_async(lambda: Registration.objects.filter(user__username="alice").delete())()
            refused = await call("pill_tidy", plan_id=plan)
            assert refused.code == "not_found" and "not one you can reach now" in refused.message
            assert await counts() == (1, 0)
    run(scenario())


def read_marks(db: Path) -> dict[str, str | None]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return {row[0][:12]: row[1][:12] if row[1] else None
                for row in conn.execute("SELECT id, superseded_by_id FROM pillbox_pill")}


def test_tidy_of_a_projects_own_file_over_stdio(tmp_path):
    home = fresh_home(tmp_path)
    project = tmp_path / "home" / "code" / "shop"
    project.mkdir(parents=True)

    async def scenario() -> None:
        async with stdio_session(home, project) as call:
            bottle = fields((await call("bottle_create", name="shop", display_name="Shop")).ok)["id"]
            rx = await open_prescription(call, bottle)
            pills = [await store(call, rx, title, content) for title, content in [*SAME_LESSON, *LOOK_ALIKES]]
            before = await searches(call)
            header, groups = plan_of((await call("pill_duplicates", bottle_id="shop", by_meaning=False)).ok)
            assert groups == [[pills[2], pills[1], pills[0]]]
            tidy = fields((await call("pill_tidy", plan_id=header["plan"])).ok)["tidy"]
            assert read_marks(local_db(project)) == {pills[0]: pills[2], pills[1]: pills[2], pills[2]: None,
                                                    pills[3]: None, pills[4]: None}
            assert fields((await call("pill_tidy_undo", tidy_id=tidy)).ok)["status"] == "undone"
            assert set(read_marks(local_db(project)).values()) == {None}
            assert await searches(call) == before
    run(scenario())
