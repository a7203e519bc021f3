"""Every statement on a project database stops at its deadline, and the session-start hook gives up at its own,
saying so; files registered before marks existed stay their users' own."""

from __future__ import annotations

import time
from importlib import import_module
from io import StringIO
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import OperationalError, connections

from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller
from pillbox import selectors
from pillbox.databases import db_file, open_local
from pillbox.models import OwnedFile, Registration
from pillbox.origin import Ledger
from pillbox.tools import TOOLSET
from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 (a fixture)

ENDLESS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n"


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    home, project = tmp_path / "home", tmp_path / "home" / "code" / "shop"
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    return project


def with_a_bottle(person, project: Path) -> Caller:
    """The caller of ``person`` in ``project``, where a bottle of theirs now is."""
    caller = Caller(user=person.user, transport="stdio", workdir=project)
    made = run_tool(TOOLSET, TOOLSET.by_name["bottle_create"], caller, {"name": "shop", "display_name": "Shop"})
    assert not made.is_error, made.text
    return caller


def test_a_statement_on_a_project_database_stops_at_the_deadline(project, settings, local_bottles_over_http):
    settings.PILLBOX_READ_SECONDS = 0.3
    alias = open_local(db_file(project), create=True)
    started = time.monotonic()
    with pytest.raises(OperationalError, match="interrupted"), connections[alias].cursor() as cursor:
        cursor.execute(ENDLESS)
    assert time.monotonic() - started < 3
    with connections[alias].cursor() as cursor:  # the next statement has a deadline of its own
        cursor.execute("SELECT COUNT(*) FROM pillbox_pill")
        assert cursor.fetchone() == (0,)


def test_the_hook_gives_up_at_its_own_deadline_and_says_so(project, alice, settings, monkeypatch,
                                                           local_bottles_over_http):
    settings.PILLBOX_RECALL_SECONDS = 0.5
    with_a_bottle(alice, project)

    def never_ends(*, reach, alias, **kwargs):  # a read that slipped past every check and would not end
        with connections[alias].cursor() as cursor:
            cursor.execute(ENDLESS)

    monkeypatch.setattr(selectors, "session_memory", never_ends)
    out = StringIO()
    started = time.monotonic()
    call_command("recall", "--user", "alice", stdout=out)
    assert time.monotonic() - started < 5
    assert out.getvalue().strip() == ("Pillbox: gave up reading the memory of this directory after 0.5 s "
                                      "(PILLBOX_RECALL_SECONDS); nothing of it is shown. Look at its "
                                      ".pillbox/pillbox.db.")


def test_files_registered_before_the_upgrade_stay_their_users_own(project, alice, bob, local_bottles_over_http):
    path = db_file(project)
    open_local(path, create=True)  # a file with no mark, as every file made before marks existed
    Registration.objects.create(user=alice.user, bottle_id="0" * 32, name="shop", display_name="Shop",
                                scope="local", directory=str(project), db_path=str(path))
    migration = import_module("pillbox.migrations.0009_file_origin")
    migration.own_the_registered_files(apps, SimpleNamespace(connection=SimpleNamespace(alias="default")))
    assert OwnedFile.objects.get(user=alice.user).origin == OwnedFile.UPGRADED
    assert Ledger(alice.user).owned(path) is not None
    assert Ledger(bob.user).owned(path) is None  # bob never had it


def test_a_tool_call_whose_read_passes_the_deadline_answers_in_words(project, alice, settings, monkeypatch,
                                                                     local_bottles_over_http):
    settings.PILLBOX_READ_SECONDS = 0.3
    caller = with_a_bottle(alice, project)

    def never_ends(*, reach, bottle_id, limit):
        with connections[reach.current].cursor() as cursor:
            cursor.execute(ENDLESS)

    monkeypatch.setattr(selectors, "pill_compounds", never_ends)
    started = time.monotonic()
    reply = run_tool(TOOLSET, TOOLSET.by_name["pill_compounds"], caller, {})
    assert time.monotonic() - started < 3
    assert reply.is_error and reply.text.startswith("error: incompatible_db\nmessage: Reading a project database took "
                                                    "longer than 0.3 s (PILLBOX_READ_SECONDS) and was stopped")
