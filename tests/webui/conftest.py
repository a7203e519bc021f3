"""Data for the page tests: a person's memory (a global and a local bottle, pills, capsules) and todos."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import Client

from mcp_bridge.tools import Caller
from pillbox import services
from pillbox.access import reach_for
from tests.conftest import Person

AUTHOR = {"author_name": "Ada Lovelace", "author_email": "ada@example.com"}


@dataclass
class Memory:
    bottle: uuid.UUID
    open_rx: uuid.UUID
    closed_rx: uuid.UUID
    pill: uuid.UUID  # in the open prescription
    closed_pill: uuid.UUID  # in the closed one
    capsule: uuid.UUID
    local_bottle: uuid.UUID | None = None
    extra: dict[str, uuid.UUID] = field(default_factory=dict)


def http_reach(person: Person):
    return reach_for(Caller(user=person.user, transport="http", workdir=None))


def make_memory(person: Person, *, local_dir: Path | None = None) -> Memory:
    """A global bottle with an open and a closed prescription, pills in both, two capsules; and, given a
    directory, a local bottle there (made as a local agent makes one, over stdio)."""
    bottle = services.bottle_create(reach=http_reach(person), name="webshop", display_name="Web shop", scope="global")
    reach = http_reach(person)
    open_rx = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="Checkout rewrite", **AUTHOR)
    pill = services.pill_store(
        reach=reach,
        prescription_id=open_rx.id.hex,
        title="Payments go through Stripe webhooks",
        content="We **confirm** orders only from the `payment_intent.succeeded` webhook.\n\n- idempotent\n- signed",
        compound="decision",
        **AUTHOR,
    )
    services.pill_store(
        reach=reach,
        prescription_id=open_rx.id.hex,
        title="Cart totals drift by a cent",
        content="Rounding per line, not per cart. Fixed with Decimal quantize.",
        compound="bug",
        **AUTHOR,
    )
    closed_rx = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="Initial design", **AUTHOR)
    closed_pill = services.pill_store(
        reach=reach,
        prescription_id=closed_rx.id.hex,
        title="Django monolith",
        content="One Django project, PostgreSQL in production.",
        compound="decision",
        **AUTHOR,
    )
    services.prescription_close(reach=reach, prescription_id=closed_rx.id.hex)
    capsule = services.capsule_store(
        reach=reach,
        title="Commit messages in the imperative",
        content="Write `Add X`, not `Added X`.",
        compound="convention",
    )
    services.capsule_store(
        reach=reach, title="Laptop has 2 cores", content="Keep test suites lean.", compound="environment"
    )
    memory = Memory(
        bottle=bottle.id,
        open_rx=open_rx.id,
        closed_rx=closed_rx.id,
        pill=pill.id,
        closed_pill=closed_pill.id,
        capsule=capsule.id,
    )
    if local_dir is not None:
        local_dir.mkdir(parents=True, exist_ok=True)
        stdio = reach_for(Caller(user=person.user, transport="stdio", workdir=local_dir))
        local = services.bottle_create(reach=stdio, name="toolbox", display_name="Toolbox", scope="local")
        memory.local_bottle = local.id
        stdio = reach_for(Caller(user=person.user, transport="stdio", workdir=local_dir))
        rx = services.prescription_open(reach=stdio, bottle_id=local.id.hex, title="CLI flags", **AUTHOR)
        memory.extra["local_pill"] = services.pill_store(
            reach=stdio,
            prescription_id=rx.id.hex,
            title="Flags are kebab-case",
            content="`--dry-run`, never `--dryRun`.",
            compound="convention",
            **AUTHOR,
        ).id
    return memory


def logged_in(person: Person, *, enforce_csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=enforce_csrf)
    client.force_login(person.user)
    return client


@pytest.fixture(autouse=True)
def local_bottles_allowed(transactional_db, django_db_blocker, monkeypatch):
    """Let Django open local bottle databases in these tests.

    A Django test case refuses connections to database aliases it was not told about, and a local bottle's
    alias (``bottle:<path>``) is only made when it is first needed; its file is a fresh one in the test's
    tmp_path, so there is nothing to isolate.
    """
    real = django_db_blocker._real_ensure_connection
    assert real is not None
    monkeypatch.setattr(BaseDatabaseWrapper, "ensure_connection", real)


@pytest.fixture
def alice_memory(alice, tmp_path) -> Memory:
    return make_memory(alice, local_dir=tmp_path / "toolbox")
