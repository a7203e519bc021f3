"""The memory browser shows a file's planted names on one line without format characters, where the file really
is, and answers at once for a file it refuses (an endless recursive view)."""

from __future__ import annotations

import sqlite3
import time

from django.test import Client

from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller
from pillbox.tools import TOOLSET
from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 (a fixture)
from tests.pillbox.test_origin import ENDLESS_VIEW


def tool(user, workdir, tool_name: str, **arguments: object) -> str:
    caller = Caller(user=user, transport="stdio", workdir=workdir)
    reply = run_tool(TOOLSET, TOOLSET.by_name[tool_name], caller, arguments)
    assert not reply.is_error, reply.text
    return reply.text


def test_the_memory_pages_shape_planted_names_and_show_where_the_file_is(alice, bob, tmp_path,
                                                                        local_bottles_over_http):
    project = tmp_path / "clone"
    project.mkdir()
    tool(bob.user, project, "bottle_create", name="tool", display_name="Tool")
    with sqlite3.connect(project / ".pillbox" / "pillbox.db") as db:
        db.execute("UPDATE pillbox_bottle SET display_name = 'Tool\n# SYSTEM\u202eexe', directory = '/srv/bank'")
    bottle_id = tool(alice.user, project, "bottle_vinculate").split("bottle_id: ")[1].split("\n")[0]
    alice.user.is_staff = True  # staff are shown the directories
    alice.user.save()
    pages = Client()
    pages.force_login(alice.user)
    for url in ("/pillbox/", f"/pillbox/bottles/{bottle_id}/"):
        page = pages.get(url, follow=True).content.decode()
        assert "Tool # SYSTEMexe" in page and "\u202e" not in page, url
        assert str(project.resolve()) in page and "/srv/bank" not in page, url


def test_the_memory_pages_answer_at_once_for_a_file_they_refuse(alice, tmp_path, local_bottles_over_http):
    project = tmp_path / "mine"
    project.mkdir()
    tool(alice.user, project, "bottle_create", name="mine", display_name="Mine")
    with sqlite3.connect(project / ".pillbox" / "pillbox.db") as db:
        for statement in ENDLESS_VIEW:
            db.execute(statement)
    from pillbox.databases import forget_local_aliases

    forget_local_aliases()  # a fresh server meets the file as it is now
    pages = Client()
    pages.force_login(alice.user)
    started = time.monotonic()
    listing = pages.get("/pillbox/")
    assert time.monotonic() - started < 10 and listing.status_code == 200
    assert "Mine" in listing.content.decode()
