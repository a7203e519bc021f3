"""Isolation sweep: user B tries user A's objects through every tool of both MCP servers, by full id, short id
and prefix. Zero leaks (nothing of A's in any answer B gets), zero writes (A's rows, view counters included,
unchanged after every call).

The sweep is driven by the registries (``TOOLSET.tools``): a tool added without an entry in ``SWEEP`` fails
``test_every_tool_is_in_the_sweep``. Each surface (today the two MCP endpoints over HTTP) is one entry of
``SURFACES``; the REST API and the pages join as further entries with their own table and ``send``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.forms.models import model_to_dict
from django.test import Client

import pillbox.tools
import todos.tools
from accounts.models import Account, ApiKey
from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller, ToolSet
from pillbox.databases import GLOBAL, db_file, open_local
from pillbox.models import Bottle, Capsule, Pill, Prescription, Registration
from tests.pillbox.scenario import local_bottles_over_http_fixture  # noqa: F401 - a fixture
from tests.reliability.helpers import Reply, call_tool, pillbox_code
from todos.models import Todo

MARK = "zqxalice"  # in every name of A's (B may choose the same names: they are unique per user)
SECRET = f"{MARK} secret"  # in every text of A's; never in anything B may see
AUTHOR = {"author_name": f"{SECRET} Ada", "author_email": f"{MARK}-secret@example.com"}


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
        "complete_todo": Entry({"id": "todo"}),
        "get_todo": Entry({"id": "todo"}),
        "delete_todo": Entry({"id": "todo"}),
        "reopen_todo": Entry({"id": "todo"}),
        # A's claim is A's agents' business: B can neither take it, hand it back, nor see who holds it.
        "update_todo": Entry({"id": "todo"}, {"name": "bob's", "deadlineAt": None}),
        "claim_todo": Entry({"id": "todo"}, {"by": "bob-agent"}),
        "release_todo": Entry({"id": "todo"}, {"by": "bob-agent"}),
    },
}
TOOLSETS: dict[str, ToolSet] = {"pillbox": pillbox.tools.TOOLSET, "todos": todos.tools.TOOLSET}


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


# ---------------------------------------------------------------- A's world


@dataclass
class World:
    alice: Any
    bob: Any
    project: Path  # A's local bottle's directory
    records: dict[str, list[uuid.UUID | str]]  # kind -> A's records (todos by their key)
    local_alias: str


def _id(text: str) -> str:
    match = re.search(r"^id: ([0-9a-f]{12})$", text, re.M)
    assert match, text
    return match.group(1)


def _full(model: type, alias: str, short: str) -> uuid.UUID:
    low, high = uuid.UUID(short.ljust(32, "0")), uuid.UUID(short.ljust(32, "f"))
    return model._default_manager.using(alias).get(id__gte=low, id__lte=high).id


@pytest.fixture
def world(alice, bob, tmp_path, monkeypatch, local_bottles_over_http) -> World:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    project = tmp_path / "alice-project"
    project.mkdir()
    remote = Caller(user=alice.user, transport="http")
    local = Caller(user=alice.user, transport="stdio", workdir=project)

    def as_alice(caller: Caller, server: str, tool: str, **arguments: Any) -> str:
        reply = run_tool(TOOLSETS[server], TOOLSETS[server].by_name[tool], caller, arguments)
        assert not reply.is_error, reply.text
        return reply.text

    records: dict[str, list[uuid.UUID | str]] = {kind: [] for kind in ("bottle", "prescription", "pill", "capsule")}
    for caller, scope, alias in ((remote, "global", GLOBAL), (local, "local", None)):
        bottle = _id(
            as_alice(
                caller,
                "pillbox",
                "bottle_create",
                name=f"{MARK}-{scope}",
                display_name=f"{SECRET} {scope}",
                scope=scope,
            )
        )
        alias = alias or open_local(db_file(project))
        rx_open = _id(
            as_alice(caller, "pillbox", "prescription_open", bottle_id=bottle, title=f"{SECRET} session", **AUTHOR)
        )
        rx_closed = _id(
            as_alice(
                caller, "pillbox", "prescription_open", bottle_id=bottle, title=f"{SECRET} closed session", **AUTHOR
            )
        )
        pills = [
            _id(
                as_alice(
                    caller,
                    "pillbox",
                    "pill_store",
                    prescription_id=rx,
                    title=f"{SECRET} plan {n}",
                    content=f"{SECRET} content {n}",
                    compound=SECRET,
                    **AUTHOR,
                )
            )
            for n, rx in enumerate((rx_open, rx_open, rx_closed))
        ]
        as_alice(caller, "pillbox", "pill_discard", id=pills[1])
        as_alice(caller, "pillbox", "prescription_close", id=rx_closed)
        records["bottle"].append(_full(Bottle, alias, bottle))
        records["prescription"] += [_full(Prescription, alias, rx) for rx in (rx_open, rx_closed)]
        records["pill"] += [_full(Pill, alias, pill) for pill in pills]
    capsules = [
        _id(
            as_alice(
                remote,
                "pillbox",
                "capsule_store",
                title=f"{SECRET} capsule {n}",
                content=f"{SECRET} capsule",
                compound=SECRET,
            )
        )
        for n in range(2)
    ]
    as_alice(remote, "pillbox", "capsule_discard", id=capsules[1])
    records["capsule"] = [_full(Capsule, GLOBAL, capsule) for capsule in capsules]
    for key in ("todo", "done", "gone"):
        as_alice(
            remote,
            "todos",
            "put_todo",
            id=f"{MARK}-{key}",
            name=f"{SECRET} plan {key}",
            description=f"{SECRET} description",
            priority="high",
            tags=[f"{MARK}-secret"],
        )
    as_alice(
        remote,
        "todos",
        "put_todo",
        id=f"{MARK}-waits",
        name=f"{SECRET} plan waits",
        description="",
        links=[f"{MARK}-todo"],
        blockedBy=[f"{MARK}-todo"],
    )
    as_alice(remote, "todos", "complete_todo", id=f"{MARK}-done")
    as_alice(remote, "todos", "claim_todo", id=f"{MARK}-todo", by=f"{MARK}-secret", minutes=600)
    as_alice(remote, "todos", "delete_todo", id=f"{MARK}-gone")
    records["todo"] = [f"{MARK}-todo", f"{MARK}-done", f"{MARK}-gone", f"{MARK}-waits"]

    # B has a world of his own, so that every tool has something to answer with.
    bob_caller = Caller(user=bob.user, transport="http")
    bottle = _id(
        as_alice(bob_caller, "pillbox", "bottle_create", name="bob-bottle", display_name="Bob", scope="global")
    )
    rx = _id(
        as_alice(
            bob_caller,
            "pillbox",
            "prescription_open",
            bottle_id=bottle,
            title="bob session",
            author_name="Bob",
            author_email="b@b.b",
        )
    )
    as_alice(
        bob_caller,
        "pillbox",
        "pill_store",
        prescription_id=rx,
        title="secret plan of bob",
        content="bob",
        compound="note",
        author_name="Bob",
        author_email="b@b.b",
    )
    as_alice(bob_caller, "pillbox", "capsule_store", title="bob capsule", content="bob", compound="note")
    as_alice(bob_caller, "todos", "put_todo", id="bob-todo", name="secret plan of bob", description="")
    return World(alice, bob, project, records, open_local(db_file(project)))


def snapshot(world: World) -> dict[str, list[dict[str, Any]]]:
    """Every row of A's, in both databases, with every column (view counters too)."""
    user = world.alice.user
    rows: dict[str, list[dict[str, Any]]] = {}
    for alias in (GLOBAL, world.local_alias):
        bottles = Bottle.objects.using(alias).filter(id__in=world.records["bottle"])
        rows[f"{alias}:bottle"] = [model_to_dict(row) | {"views": row.views} for row in bottles.order_by("id")]
        rows[f"{alias}:prescription"] = list(
            Prescription.objects.using(alias).filter(bottle__in=bottles).order_by("id").values()
        )
        rows[f"{alias}:pill"] = list(
            Pill.objects.using(alias).filter(prescription__bottle__in=bottles).order_by("id").values()
        )
    rows["capsule"] = list(Capsule.objects.filter(owner=user).order_by("id").values())
    rows["todo"] = list(Todo.objects.filter(owner=user).order_by("key").values())
    rows["registration"] = list(Registration.objects.filter(user=user).order_by("id").values())
    rows["account"] = list(Account.objects.filter(user=user).values())
    rows["keys"] = list(ApiKey.objects.filter(user=user).values("id", "revoked_at"))
    return rows


def variants(record: uuid.UUID | str) -> Iterator[str]:
    """The ways an agent may name a record: full id with and without dashes, upper case, short id, prefix."""
    if isinstance(record, str):
        yield from (record, record.upper(), record[:-1])  # todo ids are exact strings, no whitespace
        return
    yield from (str(record), record.hex, str(record).upper(), record.hex[:12], record.hex[:8], f" {record.hex[:12]} ")


def is_bare_prefix(asked: str) -> bool:
    """An 8-digit prefix spans about a minute of ids, so it may name one of B's own records made in the same
    minute: B may then be answered about that record (leaks and writes are still checked)."""
    digits = asked.strip().replace("-", "")
    return bool(re.fullmatch(r"[0-9a-fA-F]+", digits)) and len(digits) < 12


def secrets_of(world: World) -> list[str]:
    ids = [r for kind, found in world.records.items() if kind != "todo" for r in found]
    return [SECRET, f"{MARK}-secret", *(value.hex[:12] for value in ids), *(str(value) for value in ids)]


def assert_no_leak(world: World, reply: Reply, *asked: object) -> None:
    text = reply.text.lower()
    for echo in asked:
        if isinstance(echo, str) and echo.strip():
            text = text.replace(echo.strip().lower(), "")  # an answer may repeat what B sent
    for secret in secrets_of(world):
        assert secret.lower() not in text, f"leaked {secret!r}: {reply.text[:1000]}"


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
