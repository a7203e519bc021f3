"""What a caller reaches is read again whenever the registry or the project's file changed, by this process or by
another one: a server keeps the rows it read between tool calls (the registry, the project's bottles), never
past a change."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.db import connections

from mcp_bridge.tools import Caller
from pillbox.access import reach_for
from pillbox.global_db import GLOBAL
from pillbox.models import Registration
from pillbox.tools import TOOLSET
from tests.clients import run, stdio_client, text_of
from tests.conftest import Person


def caller(person: Person) -> Caller:
    assert isinstance(person.user, AbstractBaseUser)
    return Caller(user=person.user, transport="http")


def create(person: Person, name: str) -> None:
    TOOLSET.by_name["bottle_create"].handler(caller(person), {"name": name, "display_name": name, "scope": "global"})


def in_another_thread(work: object) -> None:
    """``work`` on a connection of its own (Django's connections are per thread), as another process would."""
    def target() -> None:
        try:
            work()  # type: ignore[operator]
        finally:
            connections.close_all()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()


@pytest.mark.django_db(transaction=True)
def test_a_registration_removed_on_another_connection_is_no_longer_reached(alice: Person) -> None:
    create(alice, "notes")
    create(alice, "ideas")
    assert {r.name for r in reach_for(caller(alice)).registrations} == {"notes", "ideas"}
    in_another_thread(lambda: Registration.objects.filter(name="notes").delete())
    reach = reach_for(caller(alice))
    assert [r.name for r in reach.registrations] == ["ideas"]
    assert len(reach.bottles_in(GLOBAL)) == 1


@pytest.mark.django_db(transaction=True)
def test_a_registration_written_on_this_connection_is_reached_at_once(alice: Person, bob: Person) -> None:
    create(alice, "notes")
    assert [r.name for r in reach_for(caller(alice)).registrations] == ["notes"]
    create(alice, "ideas")
    assert [r.name for r in reach_for(caller(alice)).registrations] == ["ideas", "notes"]
    assert reach_for(caller(bob)).registrations == []


@pytest.mark.django_db(transaction=True)
def test_every_call_gets_registrations_of_its_own(alice: Person) -> None:
    create(alice, "notes")
    first = reach_for(caller(alice)).registrations[0]
    first.display_name = "changed in memory, never saved"
    again = reach_for(caller(alice)).registrations[0]
    assert again is not first and again.display_name == "notes"
    assert again.pk == first.pk and again._state.db == GLOBAL and not again._state.adding


def test_a_long_lived_server_sees_what_another_process_wrote_and_removed(tmp_path) -> None:
    """Our global file is where the original Pillbox keeps its own by default (``~/.pillbox/pillbox.db``), so the
    first call checks it for an import: that check must leave this server's view of the file live."""
    home, here, there = tmp_path / "home", tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()

    async def scenario() -> tuple[str, ...]:
        async with stdio_client("pillbox", home=home, cwd=here, PILLBOX_HOME=str(home / ".pillbox")) as server:
            before = text_of(await server.call_tool("bottle_list", {}))
            async with stdio_client("pillbox", home=home, cwd=there, PILLBOX_HOME=str(home / ".pillbox")) as other:
                await other.call_tool("bottle_create", {"name": "shared", "display_name": "Shared",
                                                        "scope": "global"})
                await other.call_tool("capsule_store", {"title": "Zeppelin hangar", "content": "Written elsewhere",
                                                        "compound": "convention"})
            added = text_of(await server.call_tool("bottle_list", {}))
            found = text_of(await server.call_tool("capsule_search", {"query": "zeppelin"}))
            with sqlite3.connect(home / ".pillbox" / "pillbox.db") as db:
                db.execute("DELETE FROM pillbox_registration WHERE name = 'shared'")
            removed = text_of(await server.call_tool("bottle_list", {}))
            return before, added, found, removed

    before, added, found, removed = run(scenario())
    assert "Shared" not in before
    assert "Shared" in added
    assert "Zeppelin hangar" in found
    assert "Shared" not in removed
