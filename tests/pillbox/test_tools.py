"""The 25 Pillbox tools end to end, through the SDK's own client, over HTTP (the live server) and over stdio.

One scenario (``tour``) walks every tool and every error code, and runs over both transports: over HTTP as a
staff user whose server has ``PILLBOX_ROOT`` set (so local bottles and bottle_vinculate are allowed), over
stdio as a ``manage.py mcp pillbox`` subprocess working in a project directory under a scratch HOME.
stdio as a ``manage.py mcp pillbox`` subprocess working in a project directory under a scratch HOME. Its steps
are in tour_records.py and tour_rules.py; who may reach what over HTTP is in test_tools_http.py.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from tests.clients import run
from tests.pillbox.scenario import (
    AUTHOR,
    Call,
    fresh_home,
    hit_ids,
    local_bottles_over_http_fixture,  # noqa: F401 (a fixture)
    local_db,
    new_bottle,
    open_prescription,
    records,
    short_id,
    site_fixture,  # noqa: F401 (a fixture)
    stdio_session,
    stdio_sessions,
    store,
)
from tests.pillbox.scenario import http_session as http
from tests.pillbox.tour_records import Place, tour_bottles, tour_capsules, tour_pills_and_prescriptions
from tests.pillbox.tour_rules import tour_input_rules, tour_unlinked, tour_vinculate

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

            # bob works below the project: the database is found walking up, like git, but his Pillbox did not make
            # it, so it is foreign to him (pillbox.origin) until he adopts it: then it is registered for him ...
            assert (await bob("bottle_list")).ok == "No bottles registered."
            assert (await bob("bottle_vinculate")).code == "db_not_found"
            adopted = await bob("bottle_vinculate", directory=str(project))
            assert adopted.fields["status"] == "linked" and adopted.fields["origin"].startswith("adopted")
            # ... and marked as the bottle of his directory, though he is in a sub-folder.
            assert (await bob("bottle_list")).ok == listed.replace(bottle, f"{bottle}  ← this directory")
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
                                 f"db_path: {local_db(project)}\norigin: adopted (not made by your Pillbox here; "
                                 f"its bottle named {project})")
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
