"""User A's world for the isolation sweep (test_isolation.py): A's bottles, prescriptions, pills, capsules and todos
in both databases (global over HTTP, local over stdio, some discarded, closed or claimed), a few records of B's
own, and what the sweep checks against them: a snapshot of every row of A's, the ways to name a record, and the
secrets no answer to B may hold."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.forms.models import model_to_dict

from accounts.models import Account, ApiKey
from mcp_bridge.tools import Caller
from pillbox.databases import db_file, open_local
from pillbox.global_db import GLOBAL
from pillbox.models import Bottle, Capsule, Pill, Prescription, Registration, Tidy, TidyPlan
from tests.reliability.helpers import Reply, run_ok, short_id
from todos.models import Todo

MARK = "zqxalice"  # in every name of A's (B may choose the same names: they are unique per user)
SECRET = f"{MARK} secret"  # in every text of A's; never in anything B may see
AUTHOR = {"author_name": f"{SECRET} Ada", "author_email": f"{MARK}-secret@example.com"}


@dataclass
class World:
    alice: Any
    bob: Any
    project: Path  # A's local bottle's directory
    records: dict[str, list[uuid.UUID | str]]  # kind -> A's records (todos by their key)
    local_alias: str


def _line(text: str, key: str) -> str:
    """The short id an answer's ``key:`` line names (pill_duplicates' plan, pill_tidy's tidy)."""
    match = re.search(rf"^{key}: ([0-9a-f]{{12}})$", text, re.M)
    assert match, text
    return match.group(1)


def _full(model: type, alias: str, short: str) -> uuid.UUID:
    low, high = uuid.UUID(short.ljust(32, "0")), uuid.UUID(short.ljust(32, "f"))
    return model._default_manager.using(alias).get(id__gte=low, id__lte=high).id


@pytest.fixture(name="world")
def world_fixture(alice, bob, tmp_path, monkeypatch, local_bottles_over_http) -> World:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    project = tmp_path / "alice-project"
    project.mkdir()
    remote = Caller(user=alice.user, transport="http")
    local = Caller(user=alice.user, transport="stdio", workdir=project)

    records: dict[str, list[uuid.UUID | str]] = {kind: [] for kind in ("bottle", "prescription", "pill", "capsule",
                                                                        "plan", "tidy")}
    for caller, scope, alias in ((remote, "global", GLOBAL), (local, "local", None)):
        bottle = short_id(run_ok(caller, "pillbox", "bottle_create", name=f"{MARK}-{scope}",
                                 display_name=f"{SECRET} {scope}", scope=scope))
        alias = alias or open_local(db_file(project))
        rx_open, rx_closed = (
            short_id(run_ok(caller, "pillbox", "prescription_open", bottle_id=bottle, title=title, **AUTHOR))
            for title in (f"{SECRET} session", f"{SECRET} closed session")
        )
        pills = [
            short_id(run_ok(caller, "pillbox", "pill_store", prescription_id=rx, title=f"{SECRET} plan {n}",
                            content=f"{SECRET} content {n}", compound=SECRET, **AUTHOR))
            for n, rx in enumerate((rx_open, rx_open, rx_closed))
        ]
        run_ok(caller, "pillbox", "pill_discard", id=pills[1])
        run_ok(caller, "pillbox", "prescription_close", id=rx_closed)
        records["bottle"].append(_full(Bottle, alias, bottle))
        records["prescription"] += [_full(Prescription, alias, rx) for rx in (rx_open, rx_closed)]
        records["pill"] += [_full(Pill, alias, pill) for pill in pills]
        # A lesson stored twice, a tidy-up plan of it (pill_duplicates), and one applied (pill_tidy): plan and
        # tidy ids of A's that B must not apply nor undo.
        twice = [short_id(run_ok(caller, "pillbox", "pill_store", prescription_id=rx_open, title=f"{SECRET} lesson",
                                 content=f"{SECRET} stored twice.", compound=SECRET, **AUTHOR)) for _ in range(2)]
        records["pill"] += [_full(Pill, alias, pill) for pill in twice]
        plan = _line(run_ok(caller, "pillbox", "pill_duplicates", bottle_id=bottle), "plan")
        tidy = _line(run_ok(caller, "pillbox", "pill_tidy", plan_id=plan), "tidy")
        records["plan"].append(_full(TidyPlan, GLOBAL, plan))
        records["tidy"].append(_full(Tidy, GLOBAL, tidy))
    capsules = [
        short_id(run_ok(remote, "pillbox", "capsule_store", title=f"{SECRET} capsule {n}",
                        content=f"{SECRET} capsule", compound=SECRET))
        for n in range(2)
    ]
    run_ok(remote, "pillbox", "capsule_discard", id=capsules[1])
    records["capsule"] = [_full(Capsule, GLOBAL, capsule) for capsule in capsules]
    for key in ("todo", "done", "gone"):
        run_ok(remote, "todos", "put_todo", id=f"{MARK}-{key}", name=f"{SECRET} plan {key}",
               description=f"{SECRET} description", priority="high", tags=[f"{MARK}-secret"])
    run_ok(remote, "todos", "put_todo", id=f"{MARK}-waits", name=f"{SECRET} plan waits", description="",
           links=[f"{MARK}-todo"], blockedBy=[f"{MARK}-todo"])
    run_ok(remote, "todos", "complete_todo", id=f"{MARK}-done")
    run_ok(remote, "todos", "claim_todo", id=f"{MARK}-todo", by=f"{MARK}-secret", minutes=600)
    run_ok(remote, "todos", "delete_todo", id=f"{MARK}-gone")
    records["todo"] = [f"{MARK}-todo", f"{MARK}-done", f"{MARK}-gone", f"{MARK}-waits"]

    # B has a world of his own, so that every tool has something to answer with.
    bob_caller = Caller(user=bob.user, transport="http")
    bottle = short_id(run_ok(bob_caller, "pillbox", "bottle_create", name="bob-bottle", display_name="Bob",
                             scope="global"))
    rx = short_id(run_ok(bob_caller, "pillbox", "prescription_open", bottle_id=bottle, title="bob session",
                         author_name="Bob", author_email="b@b.b"))
    run_ok(bob_caller, "pillbox", "pill_store", prescription_id=rx, title="secret plan of bob", content="bob",
           compound="note", author_name="Bob", author_email="b@b.b")
    run_ok(bob_caller, "pillbox", "capsule_store", title="bob capsule", content="bob", compound="note")
    run_ok(bob_caller, "todos", "put_todo", id="bob-todo", name="secret plan of bob", description="")
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
    rows["plan"] = list(TidyPlan.objects.filter(user=user).order_by("id").values())
    rows["tidy"] = list(Tidy.objects.filter(user=user).order_by("id").values())
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

