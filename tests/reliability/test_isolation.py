"""Isolation sweep: user B tries user A's objects through every tool of both MCP servers, by full id, short id
and prefix. Zero leaks (nothing of A's in any answer B gets), zero writes (A's rows, view counters included,
unchanged after every call).

The sweep is driven by the registries (``TOOLSET.tools``): a tool added without an entry in ``SWEEP`` fails
``test_every_tool_is_in_the_sweep``. Each surface (today the two MCP endpoints over HTTP) is one entry of
``SURFACES``; the REST API and the pages join as further entries with their own table and ``send``. A's world,
and what the sweep checks against it, is built in isolation_world.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.test import Client

from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 - a fixture
from tests.reliability.helpers import TOOLSETS, Reply, call_tool, pillbox_code
from tests.reliability.isolation_world import (
    MARK,
    SECRET,
    World,
    assert_no_leak,
    is_bare_prefix,
    snapshot,
    variants,
    world_fixture,  # noqa: F401 - a fixture
)

# ---------------------------------------------------------------- the sweep's table


@dataclass(frozen=True)
class Entry:
    """How to probe one tool: which arguments name a record (argument -> kind of record), the other arguments a
    call needs, and what B may be answered when naming A's record."""

    ids: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    # For tools without id arguments: calls made with A's words and names, each of which must leak nothing.
    probes: tuple[dict[str, Any], ...] = ({},)


TEXT = {"title": "bob title", "content": "bob content", "compound": "note"}
SWEEP: dict[str, dict[str, Entry]] = {
    "pillbox": {
        "pill_store": Entry(
            {"prescription_id": "prescription"}, {**TEXT, "author_name": "Bob", "author_email": "b@b.b"}
        ),
        "pill_read": Entry({"id": "pill"}),
        "pill_revise": Entry({"id": "pill"}, {"title": "bob was here"}),
        "pill_discard": Entry({"id": "pill"}),
        "pill_search": Entry(
            {"bottle_id": "bottle"},
            {"query": MARK},
            probes=(
                {"query": MARK},
                {"query": MARK, "fuzzy": True},
                {"query": MARK[:-1] + "x"},
                {"compound": SECRET},
                {"query": "secret session"},
            ),
        ),
        "pill_compounds": Entry({"bottle_id": "bottle"}, probes=({}, {"limit": 200})),
        # A's bottle, plan and tidy: B is offered none of A's pills, applies none of A's plans, undoes no tidy.
        "pill_duplicates": Entry({"bottle_id": "bottle"}, {"by_meaning": True}, probes=()),
        "pill_tidy": Entry({"plan_id": "plan"}, probes=()),
        "pill_tidy_undo": Entry({"tidy_id": "tidy"}, probes=()),
        "capsule_store": Entry(extra=TEXT, probes=(TEXT,)),
        "capsule_read": Entry({"id": "capsule"}),
        "capsule_revise": Entry({"id": "capsule"}, {"title": "bob was here"}),
        "capsule_discard": Entry({"id": "capsule"}),
        "capsule_search": Entry(probes=({"query": MARK}, {"query": MARK, "fuzzy": True}, {"compound": SECRET})),
        "capsule_compounds": Entry(probes=({},)),
        "prescription_open": Entry(
            {"bottle_id": "bottle"}, {"title": "bob session", "author_name": "Bob", "author_email": "b@b.b"}
        ),
        "prescription_close": Entry({"id": "prescription"}),
        "prescription_reopen": Entry({"id": "prescription"}),
        "prescription_read": Entry({"id": "prescription"}),
        "prescription_context": Entry({"prescription_id": "prescription"}),
        "prescription_discard": Entry({"id": "prescription"}),
        # B may take A's bottle name (names are unique per user), never A's bottle.
        "bottle_create": Entry(
            probes=(
                {"name": f"{MARK}-global", "display_name": "Bob's", "scope": "global"},
                {"name": "bob-local", "display_name": "Bob's local"},
            )
        ),
        "bottle_context": Entry({"bottle_id": "bottle"}),
        "bottle_list": Entry(probes=({},)),
        # A's project directory, by absolute path and by traversal from wherever B stands.
        "bottle_vinculate": Entry(
            probes=({"directory": "{alice_project}"}, {"directory": "../" * 12 + "{alice_project}"}, {})
        ),
    },
    "todos": {
        "get_list_usage": Entry(probes=({},)),
        "get_list_url": Entry(probes=({},)),
        # A request never names another user's todo into existence: B's put makes B's own todo.
        # Nor waits on another user's todo: A's ids in blockedBy are ids B does not have.
        "put_todo": Entry(
            probes=(
                {"id": f"{MARK}-todo", "name": "bob's", "description": "bob's"},
                {"id": "bob-waits", "name": "bob's", "description": "", "blockedBy": [f"{MARK}-todo"]},
                {"id": "bob-waits", "name": "bob's", "description": "", "blockedBy": [f"{MARK}-done"]},
            )
        ),
        # `under` names a todo: A's, in every spelling, is a todo B does not have.
        "list_todos": Entry(
            {"under": "todo"},
            probes=(
                {"includeCompleted": True, "includeDeleted": True},
                {"includeCompleted": True, "includeDeleted": True, "view": "compact"},
                {"includeCompleted": True, "includeDeleted": True, "view": "tree", "tag": MARK},
            ),
        ),
        "search_todos": Entry(
            {"under": "todo"},
            {"query": MARK},
            probes=(
                {"query": MARK, "includeCompleted": True},
                {"query": "secret plan"},
                {"query": MARK, "includeCompleted": True, "view": "compact", "tag": MARK},
            ),
        ),
        "next_todos": Entry(
            {"under": "todo"},
            probes=({}, {"view": "compact", "limit": 200}, {"view": "tree", "tag": MARK},
                    {"includeClaimed": True, "view": "compact"}, {"by": f"{MARK}-secret"}),
        ),
        # force ends a claim of one's own user only: on A's todo it finds nothing.
        "complete_todo": Entry({"id": "todo"}, {"force": True}),
        "get_todo": Entry({"id": "todo"}),
        "delete_todo": Entry({"id": "todo"}, {"force": True}),
        "reopen_todo": Entry({"id": "todo"}, {"force": True}),
        # A's claim is A's agents' business: B can neither take it, hand it back, nor see who holds it.
        "update_todo": Entry({"id": "todo"}, {"name": "bob's", "deadlineAt": None, "force": True}),
        "claim_todo": Entry({"id": "todo"}, {"by": "bob-agent"}),
        "release_todo": Entry({"id": "todo"}, {"by": "bob-agent", "leaseToken": "lease_guessed"}),
        # claim_next takes only B's own todos: never one of A's, whatever the filter names.
        "claim_next": Entry({"under": "todo"}, {"by": "bob-agent"},
                            probes=({"by": "bob-agent", "tag": MARK}, {"by": f"{MARK}-secret", "priority": "high"})),
    },
}


def test_every_tool_is_in_the_sweep():
    for server, toolset in TOOLSETS.items():
        registered = {tool.name for tool in toolset.tools}
        missing = registered - set(SWEEP[server])
        assert not missing, (
            f"add {sorted(missing)} to the isolation sweep's table (tests/reliability/test_isolation.py)"
        )
        assert set(SWEEP[server]) <= registered, "the sweep names tools that no longer exist"
        for name, entry in SWEEP[server].items():
            properties = toolset.by_name[name].input_schema.get("properties", {})
            id_like = {arg for arg in properties if arg in ("id", "under") or arg.endswith("_id")}
            if server == "todos" and name == "put_todo":
                id_like.discard("id")  # the caller's own new id, probed with A's
            assert id_like <= set(entry.ids), f"{server}.{name}: id arguments {id_like - set(entry.ids)} not swept"


# ---------------------------------------------------------------- surfaces


@dataclass(frozen=True)
class Surface:
    """One interface B can reach A's records through; ``send(world, server, tool, arguments)`` is B's call."""

    name: str
    send: Callable[[World, str, str, dict[str, Any]], Reply]
    refused: Callable[[str, str, Reply], None]


def _mcp_send(world: World, server: str, tool: str, arguments: dict[str, Any]) -> Reply:
    return call_tool(Client(), server, world.bob.key, tool, arguments)


def _mcp_refused(server: str, tool: str, reply: Reply) -> None:
    """What B is answered when naming A's record: not found (the record does not exist for B)."""
    if server == "todos":
        assert reply.is_error and reply.text == "Todo not found", reply.text
    elif tool == "prescription_context":
        assert not reply.is_error and reply.text == "", reply.text  # an unknown id gives an empty answer
    else:
        assert reply.is_error, reply.text
        assert pillbox_code(reply.text) in {"not_found", "prescription_required"}, reply.text


SURFACES = [Surface("mcp-http", _mcp_send, _mcp_refused)]


@pytest.mark.parametrize("surface", SURFACES, ids=lambda surface: surface.name)
@pytest.mark.parametrize("root", ["none", "alice-project"])
def test_isolation_sweep(world, surface, root, settings):
    # Worst case on a shared server: PILLBOX_ROOT is the very directory that holds A's local bottle.
    settings.PILLBOX_ROOT = world.project if root == "alice-project" else None
    settings.MCP_USER_RATE_LIMIT = (0, 60)  # the sweep is hundreds of calls a minute (the limit has tests of its own)
    before = snapshot(world)
    calls = 0
    # A's records by id first, then the calls without ids (some of which give B records named like A's).
    for server, table in SWEEP.items():
        for tool, entry in table.items():
            for argument, kind in entry.ids.items():
                for record in world.records[kind]:
                    for asked in variants(record):
                        reply = surface.send(world, server, tool, {**entry.extra, argument: asked})
                        calls += 1
                        assert_no_leak(world, reply, asked)
                        if not is_bare_prefix(asked):
                            surface.refused(server, tool, reply)
                        assert snapshot(world) == before, f"{server}.{tool}({argument}={asked!r}) wrote A's data"
    for server, table in SWEEP.items():
        for tool, entry in table.items():
            for probe in entry.probes:
                arguments = {
                    name: value.format(alice_project=world.project) if isinstance(value, str) else value
                    for name, value in probe.items()
                }
                reply = surface.send(world, server, tool, arguments)
                calls += 1
                assert_no_leak(world, reply, *arguments.values())
                assert snapshot(world) == before, f"{server}.{tool}({arguments}) wrote A's data"
    assert calls > 400
