"""Which pill replaced which: a pill (or capsule) ``superseded_by`` a newer one of the same bottle (or owner) is left
out of searches, contexts and the session start until that pill no longer names it. Nothing is deleted; the old
row keeps its text, its id and its place.

The API (for the tools, the REST API, the memory browser and the tidy-up):

- ``pill_supersede(reach=, pill_id=, supersedes=)`` / ``capsule_supersede(reach=, capsule_id=, supersedes=)``: the
  set of rows the newer one supersedes becomes exactly ``supersedes`` (raw ids or prefixes, as agents type them;
  ``[]`` brings every one back). One transaction; returns the newer row and an ``Outcome``.
- ``check_pills`` / ``check_capsules``: the validation alone, turning raw ids into rows (for a caller that writes
  other things in the same transaction, such as ``services.pill_store``), then ``put`` writes them.
- ``put(alias, model, newer, rows)``: the write alone, no checks; call it inside a transaction on ``alias``.
- ``restore(alias, model, before)``: puts back ``superseded_by`` exactly as a mapping (row id -> newer id or None)
  says, as a tidy-up's undo needs.
- ``pill_bring_back`` / ``capsule_bring_back``: one row superseded no more (the memory browser's button).

Every write is an UPDATE of ``superseded_by_id``, which the change log notes (migration 0012), so the search
caches (vocabulary, vectors) follow it in this process and any other.

The rules, each a clear error that changes nothing: every id names a live row the caller reaches (another user's
pill is "not found", as it is everywhere else); a pill supersedes pills of its own bottle only; a row never
supersedes itself, nor a row that (through others) supersedes it. A superseded row may sit in a closed
prescription (old sessions are what newer pills replace); the newer pill's own prescription must be open when an
agent writes it (``pill_store``, ``pill_revise``). A row already superseded by another is moved to the new one.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from django.db import transaction

from pillbox import ids
from pillbox.access import Reach, locate, locate_capsule
from pillbox.exceptions import ValidationFailed
from pillbox.global_db import GLOBAL
from pillbox.models import Capsule, Pill, Prescription

FIELD = "supersedes"
MOST = 100  # ids one call may name

Row = TypeVar("Row", Pill, Capsule)


@dataclass(frozen=True)
class Outcome:
    """What a supersede changed: the rows newly superseded, and the rows it brought back."""

    superseded: list[uuid.UUID] = field(default_factory=list)
    restored: list[uuid.UUID] = field(default_factory=list)
    now: list[uuid.UUID] = field(default_factory=list)  # every row the newer one supersedes after the write


def _too_many(raw_ids: Sequence[str]) -> None:
    if len(raw_ids) > MOST:
        raise ValidationFailed(f"{FIELD} takes at most {MOST} ids; give fewer.",
                               **{FIELD: f"{len(raw_ids)} ids, at most {MOST}"})


def _not_itself(newer: Row, rows: list[Row]) -> None:
    if any(row.pk == newer.pk for row in rows):
        raise ValidationFailed(f"{ids.short(newer.pk)} cannot supersede itself.",
                               **{FIELD: f"{ids.short(newer.pk)} is the pill or capsule being written"})


def _no_cycle(alias: str, model: type[Row], newer: Row, rows: list[Row]) -> None:
    """Refuses a row that already supersedes ``newer`` (directly or through others): both would be hidden."""
    named = {row.pk for row in rows}
    seen: set[uuid.UUID] = set()
    above = newer.superseded_by_id
    while above is not None and above not in seen:
        if above in named:
            raise ValidationFailed(
                f"{ids.short(above)} supersedes {ids.short(newer.pk)} (directly or through others); superseding it "
                f"back would hide both. Revise {ids.short(above)} first.",
                **{FIELD: f"{ids.short(above)} already supersedes {ids.short(newer.pk)}"})
        seen.add(above)
        above = model._default_manager.using(alias).filter(pk=above).values_list("superseded_by_id", flat=True).first()


def _unique(rows: list[Row]) -> list[Row]:
    return list({row.pk: row for row in rows}.values())


def check_pills(*, reach: Reach, pill: Pill, alias: str, supersedes: Sequence[str]) -> list[Pill]:
    """The live pills ``supersedes`` names, once each, after every rule above; ValidationFailed or NotFound
    otherwise."""
    _too_many(supersedes)
    bottle_id = Prescription.objects.using(alias).values_list("bottle_id", flat=True).get(pk=pill.prescription_id)
    rows = []
    for raw in supersedes:
        row, where = locate(reach, Pill, raw, noun="pill", field=FIELD, hint="; pill_search finds pills")
        other = Prescription.objects.using(where).values_list("bottle_id", flat=True).get(pk=row.prescription_id)
        if where != alias or other != bottle_id:
            raise ValidationFailed(
                f"{ids.short(row.pk)} is in another bottle; a pill supersedes only pills of its own bottle.",
                **{FIELD: f"{ids.short(row.pk)} is not in the bottle of {ids.short(pill.pk)}"})
        rows.append(row)
    rows = _unique(rows)
    _not_itself(pill, rows)
    _no_cycle(alias, Pill, pill, rows)
    return rows


def check_capsules(*, reach: Reach, capsule: Capsule, supersedes: Sequence[str]) -> list[Capsule]:
    _too_many(supersedes)
    rows = _unique([locate_capsule(reach, raw, hint="; capsule_search finds capsules") for raw in supersedes])
    _not_itself(capsule, rows)
    _no_cycle(GLOBAL, Capsule, capsule, rows)
    return rows


def put(alias: str, model: type[Row], newer: Row, rows: list[Row]) -> Outcome:
    """``newer`` supersedes exactly ``rows`` from now on; only the rows whose mark changes are written."""
    manager = model._default_manager.using(alias)
    wanted = {row.pk for row in rows}
    before = set(manager.filter(superseded_by=newer.pk).values_list("pk", flat=True))
    gone = sorted(before - wanted)
    came = sorted(row.pk for row in rows if row.superseded_by_id != newer.pk)
    if gone:
        manager.filter(pk__in=gone, superseded_by=newer.pk).update(superseded_by=None)
    if came:
        manager.filter(pk__in=came).update(superseded_by=newer.pk)
    for row in rows:
        row.superseded_by_id = newer.pk
    return Outcome(superseded=came, restored=gone, now=sorted(wanted))


def restore(alias: str, model: type[Row], before: Mapping[uuid.UUID, uuid.UUID | None]) -> None:
    """``superseded_by`` put back as ``before`` says, row by row (a tidy-up's undo); inside a transaction."""
    manager = model._default_manager.using(alias)
    by_value: dict[uuid.UUID | None, list[uuid.UUID]] = {}
    for pk, value in before.items():
        by_value.setdefault(value, []).append(pk)
    for value, pks in by_value.items():
        rows = manager.filter(pk__in=pks)
        if value is None:
            rows.filter(superseded_by__isnull=False).update(superseded_by=None)
        else:
            rows.exclude(superseded_by=value).update(superseded_by=value)


def pill_bring_back(*, reach: Reach, pill_id: str) -> Pill:
    """The pill is superseded no more (the newer one keeps the others it supersedes): for people, who see a
    superseded pill in the memory browser."""
    pill, alias = locate(reach, Pill, pill_id, noun="pill", hint="; pill_search finds pills")
    restore(alias, Pill, {pill.pk: None})
    pill.superseded_by_id = None
    return pill


def capsule_bring_back(*, reach: Reach, capsule_id: str) -> Capsule:
    capsule = locate_capsule(reach, capsule_id, hint="; capsule_search finds capsules")
    restore(GLOBAL, Capsule, {capsule.pk: None})
    capsule.superseded_by_id = None
    return capsule


def pill_supersede(*, reach: Reach, pill_id: str, supersedes: Sequence[str]) -> tuple[Pill, Outcome]:
    pill, alias = locate(reach, Pill, pill_id, noun="pill", hint="; pill_search finds pills")
    with transaction.atomic(using=alias):
        rows = check_pills(reach=reach, pill=pill, alias=alias, supersedes=supersedes)
        return pill, put(alias, Pill, pill, rows)


def capsule_supersede(*, reach: Reach, capsule_id: str, supersedes: Sequence[str]) -> tuple[Capsule, Outcome]:
    capsule = locate_capsule(reach, capsule_id, hint="; capsule_search finds capsules")
    with transaction.atomic(using=GLOBAL):
        rows = check_capsules(reach=reach, capsule=capsule, supersedes=supersedes)
        return capsule, put(GLOBAL, Capsule, capsule, rows)
