"""`manage.py recall` (the SessionStart hook) starts a session with the whole bottle's memory, not only the last
prescription's: every recent session, lasting pills before chatter, the user's capsules, and what was left out."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller
from pillbox.session_start import weight
from pillbox.tools import TOOLSET
from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 (a fixture)

AUTHOR = {"author_name": "Ada", "author_email": "ada@example.com"}


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    home, project = tmp_path / "home", tmp_path / "home" / "code" / "shop"
    project.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PILLBOX_HOME", raising=False)
    monkeypatch.chdir(project)
    return project


def recall(*args: str) -> str:
    out = StringIO()
    call_command("recall", "--user", "alice", *args, stdout=out)
    return out.getvalue().rstrip("\n")


def tools_for(user, project: Path):
    caller = Caller(user=user, transport="stdio", workdir=project)

    def tool(name: str, /, **arguments: object) -> str:
        reply = run_tool(TOOLSET, TOOLSET.by_name[name], caller, arguments)
        assert not reply.is_error, reply.text
        return reply.text

    return tool


def first_id(text: str) -> str:
    return text.split("\n")[0].removeprefix("id: ")


def three_sessions(tool) -> dict[str, list[str]]:
    """A first session of 14 decisions, a second of 30 progress notes, a last one with a single pill."""
    tool("bottle_create", name="shop", display_name="Shop")
    titles: dict[str, list[str]] = {}
    plan = [("Checkout design", 14, "decision"), ("Refund grind", 30, "progress"), ("Quick fix", 1, "bugfix")]
    for session, count, compound in plan:
        rx = first_id(tool("prescription_open", bottle_id="shop", title=session, **AUTHOR))
        titles[session] = []
        for n in range(count):
            title = f"{session} {compound} {n}"
            tool("pill_store", prescription_id=rx, title=title, compound=compound,
                 content=f"{title}: " + "details of what was done and why " * 6, **AUTHOR)
            titles[session].append(title)
        if session != "Quick fix":
            tool("prescription_close", id=rx)
    return titles


@pytest.mark.django_db(transaction=True)
def test_session_start_shows_each_session_and_the_capsules_within_the_budget(project, alice, local_bottles_over_http):
    tool = tools_for(alice.user, project)
    titles = three_sessions(tool)
    tool("capsule_store", title="Prefer small pull requests", content="One change a PR.", compound="preference")
    tool("capsule_store", title="Write tests first", content="Red, green, refactor.", compound="preference")

    memory = recall()
    assert memory.startswith("Pillbox memory of this directory: bottle shop (") and str(project) in memory
    assert len(memory) <= 6000
    for session in titles:
        assert re.search(rf"prescription \w+ \[(open|closed)\] {session}\n", memory), session
    # The first session's decisions are not pushed out by the later sessions' notes.
    decisions = [title for title in titles["Checkout design"] if title + "\n" in memory]
    notes = [title for title in titles["Refund grind"] if title + "\n" in memory]
    assert len(decisions) >= 10 and len(decisions) > len(notes)
    assert "Quick fix bugfix 0" in memory
    capsules = memory.split("# Capsules (your memory shared by every project, newest first)\n")[1]
    assert capsules.index("Write tests first") < capsules.index("Prefer small pull requests")  # newest first
    assert "Red, green, refactor." in capsules and "One change a PR." in capsules
    shown = memory.count("\n  id: ")
    left = int(re.search(r"Not shown: (\d+) more pills \(pill_search finds them", memory).group(1))
    assert shown - 2 + left == 45  # every pill is shown or counted

    short = recall("--budget", "1500")
    assert len(short) <= 1500
    assert "Write tests first" in short and "Prefer small pull requests" in short  # titles at least
    assert "Quick fix bugfix 0" in short and "Checkout design decision" in short


@pytest.mark.django_db(transaction=True)
def test_session_start_without_a_bottle_still_shows_the_capsules(project, alice, local_bottles_over_http):
    tools_for(alice.user, project)("capsule_store", title="Use UTC everywhere", content="Store times in UTC.",
                                   compound="convention")
    memory = recall()
    assert memory.startswith("Pillbox: no bottle for this directory yet.")
    assert "Use UTC everywhere" in memory and "Store times in UTC." in memory


@pytest.mark.django_db(transaction=True)
def test_session_start_prints_no_terminal_control_characters(project, alice, local_bottles_over_http):
    tool = tools_for(alice.user, project)
    tool("bottle_create", name="shop", display_name="Shop")
    rx = first_id(tool("prescription_open", bottle_id="shop", title="Session", **AUTHOR))
    from pillbox.models import Pill

    tool("pill_store", prescription_id=rx, title="Plain title", content="plain", compound="note", **AUTHOR)
    # Text that reached the file by another way than the tools (an imported or hand-edited file).
    from pillbox.access import find_local_db, open_local

    alias = open_local(find_local_db(project))
    Pill.objects.using(alias).update(title="Clear\x1b[2J screen \x1b]52;c;ZXZpbA==\x07", content="a\x00b\x08c\x9b")
    memory = recall()
    assert "Clear[2J screen ]52;c;ZXZpbA==" in memory
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", memory)


def test_session_start_weighs_lasting_compounds_above_chatter():
    assert weight("decision") == weight("Architecture-Decision") == weight("gotcha") == 2
    assert weight("note") == weight("progress log") == 0
    assert weight("feature") == weight("change") == 1
