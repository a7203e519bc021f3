"""Recall by time end to end, through the SDK's client: a labelled set of pills with known creation times across
fifteen months (placed relative to the real now), every time phrase and since/until, and the rows in each window
exactly (all of them, none outside), over HTTP (the global database) and over stdio (a project's own file)."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from pillbox.embeddings import backfill
from pillbox.global_db import GLOBAL
from pillbox.models import Capsule, Pill
from tests.clients import run
from tests.pillbox.scenario import (
    Call,
    fields,
    fresh_home,
    hit_ids,
    http_session,
    local_db,
    new_bottle,
    open_prescription,
    site_fixture,  # noqa: F401 (a fixture)
    stdio_session,
    store,
)
from tests.pillbox.search.recall import in_db
from tests.pillbox.search.timeline import cases, inside, labelled

Place = Callable[[dict[str, datetime]], Awaitable[None]]  # sets each titled pill's creation time


async def windows_are_exact(call: Call, place: Place, *, scope: str) -> None:
    now = datetime.now(UTC)
    times = labelled(now)
    bottle = await new_bottle(call, f"timeline-{scope}", scope=scope)
    rx = await open_prescription(call, bottle)
    ids = {title: await store(call, rx, title, f"What we deployed: {title.lower()}.") for title in times}
    await place(times)
    titles = {short: title for title, short in ids.items()}
    for at in range(len(cases(now))):
        # The windows as they were when the call began and when it ended: a day may turn in between.
        began = cases(datetime.now(UTC))[at]
        arguments = {"limit": 100, **began[0]}
        answer = await call("pill_search", **arguments)
        ended = cases(datetime.now(UTC))[at]
        found = [titles[short] for short in hit_ids(answer.ok)]
        _, start, end, line = began if sorted(found) == sorted(inside(times, *began[1:3])) else ended
        expected = inside(times, start, end)
        assert sorted(found) == sorted(expected), (arguments, answer.text)
        timeline = next(text for text in answer.text.split("\n") if text.startswith("time: "))
        assert timeline.startswith(line), (arguments, timeline)
        if expected:
            assert answer.text.startswith(f"Found {len(expected)} pill"), (arguments, answer.text)
        else:
            assert answer.text.startswith("No pills found.\ntime: "), (arguments, answer.text)
        if not arguments.get("query") or arguments["query"] in ("what did we do yesterday?", "today", "last week"):
            assert found == expected, arguments  # a window alone is listed newest first


def test_search_time_windows_are_exact_over_http(site, alice, bob):
    async def place(times: dict[str, datetime]) -> None:
        def update() -> None:
            for title, moment in times.items():
                assert Pill.objects.using(GLOBAL).filter(title=title).update(created_at=moment) == 2
        await in_db(update)

    async def scenario() -> None:
        # Bob's pills have the same titles and times: none of them is ever among Alice's.
        async with http_session(site, bob.key) as call:
            bottle = await new_bottle(call, "bobs-timeline")
            rx = await open_prescription(call, bottle)
            for title in labelled(datetime.now(UTC)):
                await store(call, rx, title, f"What we deployed: {title.lower()}.")
        async with http_session(site, alice.key) as call:
            await windows_are_exact(call, place, scope="global")

    run(scenario())


def test_search_time_windows_are_exact_over_stdio_in_a_projects_file(tmp_path):
    home = fresh_home(tmp_path)
    project = (home / "code" / "app").resolve()
    project.mkdir(parents=True)

    async def place(times: dict[str, datetime]) -> None:
        # As the ORM writes the column in SQLite: naive UTC text.
        with sqlite3.connect(local_db(project)) as db:
            for title, moment in times.items():
                db.execute("UPDATE pillbox_pill SET created_at = ? WHERE title = ?",
                           [str(moment.replace(tzinfo=None)), title])

    async def scenario() -> None:
        async with stdio_session(home, project) as call:
            await windows_are_exact(call, place, scope="local")

    run(scenario())


def test_search_time_reads_days_in_the_clients_time_zone(site, alice):
    """At UTC+14 the day begins ten to fourteen hours before UTC's: 'today' there is another window."""
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            bottle = await new_bottle(call, "zones")
            rx = await open_prescription(call, bottle)
            first = await store(call, rx, "Kiribati morning", "Deploy at dawn.")
            zone = ZoneInfo("Pacific/Kiritimati")
            local_today = datetime.now(zone).date()
            start = datetime.combine(local_today, time(), tzinfo=zone)

            def update() -> None:
                moment = start + timedelta(minutes=1)
                Pill.objects.using(GLOBAL).filter(title="Kiribati morning").update(created_at=moment)
            await in_db(update)
            answer = await call("pill_search", query="deploy today", time_zone="Pacific/Kiritimati")
            assert hit_ids(answer.ok) == [first]
            day = f"{local_today} → {local_today + timedelta(1)}"
            assert f'time: {day} Pacific/Kiritimati (from "today")' in answer.text
            before = await call("pill_search", query="deploy", until=str(local_today - timedelta(1)),
                                time_zone="Pacific/Kiritimati")
            assert before.ok.startswith("No pills found.\ntime: before ")

    run(scenario())


def test_search_time_refuses_a_time_it_cannot_read(site, alice):
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            bottle = await new_bottle(call, "refusals")
            await store(call, await open_prescription(call, bottle), "Deploy", "Deployed.")
            after = await call("pill_search", query="deploy", since="2026-11-05", until="2026-11-01")
            assert after.code == "validation_error"
            assert after.message == ("since (2026-11-05) is not before until (2026-11-01): the window would hold "
                                     "nothing. Swap them, or widen the window.")
            assert after.error_fields["since"] == "must be before until"
            unreadable = await call("capsule_search", query="deploy", until="next tuesday")
            assert unreadable.code == "validation_error" and unreadable.message.startswith(
                "until cannot be read as a time: 'next tuesday'. Give an ISO date (2026-11-01)")
            zone = await call("pill_search", query="deploy", time_zone="Mars/Olympus")
            assert zone.code == "validation_error" and "time_zone" in zone.error_fields
            nothing = await call("pill_search", query="the")  # without time words, as before
            assert not nothing.is_error
            assert (await call("pill_search")).code == "validation_error"  # still something to look for
            # A refused search changed nothing: the pill is found as before.
            assert len(hit_ids((await call("pill_search", query="deploy")).ok)) == 1

    run(scenario())


def test_capsule_search_keeps_to_its_window(site, alice, bob):
    async def scenario() -> None:
        now = datetime.now(UTC)
        made = {"Old habit": now - timedelta(days=40), "Recent habit": now - timedelta(days=3)}
        async with http_session(site, bob.key) as call:
            await call("capsule_store", title="Recent habit", content="Bob's commit habit.", compound="habit")
        async with http_session(site, alice.key) as call:
            ids = {title: fields((await call("capsule_store", title=title, content="Commit habit.",
                                              compound="habit")).ok)["id"] for title in made}

            def update() -> None:
                for title, moment in made.items():
                    Capsule.objects.using(GLOBAL).filter(title=title).update(created_at=moment)
            await in_db(update)
            assert hit_ids((await call("capsule_search", query="commit habit", since="1w")).ok) == [ids["Recent habit"]]
            assert hit_ids((await call("capsule_search", query="commit habit", until="1w")).ok) == [ids["Old habit"]]
            listed = await call("capsule_search", query="what did we do in the last 2 months?")
            assert hit_ids(listed.ok) == [ids["Recent habit"], ids["Old habit"]]
            assert "\ntime: since " in listed.text and '(from "in the last 2 months")' in listed.text
            assert hit_ids((await call("capsule_search", compound="habit", since="10d")).ok) == [ids["Recent habit"]]

    run(scenario())


@pytest.mark.usefixtures("meaning")
def test_search_time_keeps_meaning_to_the_window(site, alice):
    """The closest row in meaning, outside the window, is never ranked; one inside it is found by meaning."""
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            bottle = await new_bottle(call, "meanings")
            rx = await open_prescription(call, bottle)
            old = await store(call, rx, "Database password rotation", "We rotate the Postgres credentials "
                              "every ninety days with the vault script.")
            new = await store(call, rx, "Secrets policy", "Service passwords change each quarter; the vault "
                              "issues new ones.")
            await store(call, rx, "Frontend build", "Vite bundles the assets.")
            await in_db(backfill.wait_for_backfills)
            now = datetime.now(UTC)

            def update() -> None:
                Pill.objects.using(GLOBAL).filter(title="Database password rotation").update(
                    created_at=now - timedelta(days=60))
            await in_db(update)
            question = "how often do we change the database passwords"
            assert old in hit_ids((await call("pill_search", query=question)).ok)
            recent = await call("pill_search", query=f"{question} in the last 30 days")
            assert old not in hit_ids(recent.ok) and hit_ids(recent.ok)[0] == new, recent.text
            assert (await call("pill_search", query=question, until="30d")).ok.split("\n\n")[1].startswith(
                f"id: {old}")

    run(scenario())


def test_search_time_corrects_typos_only_for_words_the_memory_lacks(site, alice):
    """A window holding none of the typed words is not a typo: the answer is what the window holds, as a search
    without a window finds only the word as typed; a misspelt word is still corrected inside the window."""
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            bottle = await new_bottle(call, "typos-in-time")
            rx = await open_prescription(call, bottle)
            old = await store(call, rx, "Kubernetes rollout", "Blue-green rollout of the cluster.")
            misspelt = await store(call, rx, "Kubernetis notes", "Node pools resized.")
            now = datetime.now(UTC)

            def update() -> None:
                Pill.objects.using(GLOBAL).filter(title="Kubernetes rollout").update(created_at=now - timedelta(40))
            await in_db(update)
            assert hit_ids((await call("pill_search", query="kubernetes")).ok) == [old]
            assert (await call("pill_search", query="kubernetes", since="7d")).ok.startswith("No pills found.\ntime: ")
            corrected = await call("pill_search", query="nodde pools in the last 7 days")
            assert hit_ids(corrected.ok) == [misspelt] and "corrected: nodde → node" in corrected.text

    run(scenario())


def test_search_time_words_naming_a_time_nothing_was_written_in_search_every_time_as_words(site, alice):
    """'in March 2023' in a memory written today speaks of when something happened (a date in the text), not of
    when it was written: the window holds no pill, so every time is searched with the query as typed, and the time
    line says so. A window that holds pills keeps to them, even when none matches."""
    async def scenario() -> None:
        async with http_session(site, alice.key) as call:
            bottle = await new_bottle(call, "dated")
            rx = await open_prescription(call, bottle)
            billing = await store(call, rx, "Billing move", "We moved the billing service to Stripe in March 2023.")
            await store(call, rx, "Login", "Sessions live in Redis.")
            answer = await call("pill_search", query="what did we move in March 2023?")
            assert hit_ids(answer.ok)[0] == billing, answer.text
            assert '(from "in March 2023"; nothing was written then, so every time was searched' in answer.text
            # Today holds pills: the window is kept, and a word none of them has finds nothing.
            kept = await call("pill_search", query="kubernetes today")
            assert kept.ok.startswith("No pills found.\ntime: ") and "nothing was written" not in kept.text
            # since/until are kept as asked, even when they hold nothing.
            asked = await call("pill_search", query="billing", until="2023-04-01")
            assert asked.ok == "No pills found.\ntime: before 2023-04-02 UTC (from until)"  # a date: that whole day

    run(scenario())
