"""UUID v7 ids whose millisecond is strictly increasing per table and database.

The first 48 bits of a UUID v7 are its creation millisecond, which is what agents see as the short id
(12 hex digits). Choosing the millisecond inside the write transaction, later than every existing row's,
makes short ids unique within a database even when many agents write at the same moment.
"""

from __future__ import annotations

import re
import secrets
import time
import uuid

from django.db import connections, models

from pillbox.exceptions import ValidationFailed

SHORT_LEN = 12
MIN_PREFIX = 8
HEX = re.compile(r"[0-9a-f]+")


def uuid7_at(ms: int) -> uuid.UUID:
    rand_a = secrets.randbits(12)
    rand_b = secrets.randbits(62)
    return uuid.UUID(int=(ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b)


def millisecond_of(value: uuid.UUID) -> int:
    return value.int >> 80


def next_id(model: type[models.Model], using: str) -> tuple[uuid.UUID, int]:
    """A new id for ``model`` in database ``using``; call inside the write transaction."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        # SQLite's BEGIN IMMEDIATE already runs one writer at a time; PostgreSQL runs them side by side, and two
        # transactions (on one server or several) would read the same last id and pick the same millisecond. The
        # lock is per table and held until commit, so only id choosing waits.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [model._meta.db_table])
    last = model._default_manager.using(using).order_by("-id").values_list("id", flat=True).first()
    ms = time.time_ns() // 1_000_000
    if last is not None:
        ms = max(ms, millisecond_of(last) + 1)
    return uuid7_at(ms), ms


def short(value: uuid.UUID) -> str:
    return value.hex[:SHORT_LEN]


def normalise(raw: str, field: str = "id") -> str:
    """The hex digits of an id or prefix as typed by an agent, or a validation error."""
    digits = raw.strip().replace("-", "").lower()
    if not HEX.fullmatch(digits or "-") or len(digits) > 32:
        raise ValidationFailed(
            f"{field} must be a UUID or a prefix of at least {MIN_PREFIX} hex digits.", **{field: raw[:80]}
        )
    if len(digits) < MIN_PREFIX:
        raise ValidationFailed(
            f"{field} is too short: give at least {MIN_PREFIX} hex digits of the id.",
            **{field: f"must be at least {MIN_PREFIX} hex digits, got {len(digits)}"},
        )
    return digits


def distinguishing(ids: list[uuid.UUID]) -> list[str]:
    """The ids cut to the fewest digits (at least 12) that tell them all apart."""
    hexes = sorted(value.hex for value in ids)
    width = SHORT_LEN
    while width < 32 and len({h[:width] for h in hexes}) < len(hexes):
        width += 1
    return [h[:width] for h in hexes]
