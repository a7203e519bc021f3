"""A tidy-up that can be undone: a plan of one bottle's duplicates (``duplicates_plan``, read-only but for the
plan's record), applied as supersedes — each group's keeper supersedes the others — in one transaction
(``tidy_apply``), and undone exactly (``tidy_undo``). Nothing here runs by itself: a person or an agent asks.

A plan records the state of every pill it names (its last edit and what supersedes it); a tidy applies nothing
when one of them changed since, and says which. A tidy records each touched pill's previous ``superseded_by``;
its undo puts those back, and refuses when a pill was superseded otherwise since (the undo would overwrite a
later decision). Plans and tidies live in the global database, each the caller's own: another user's is "not
found", like an unknown id.

Where two databases are involved (a project's file holds the pills, the global one the records), the write whose
loss would be harmless commits first: a tidy's record before its pills (an undo of nothing restores what is
there), an undo's pills before its record (an undo that cannot be marked is refused next time by its check).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import transaction
from django.utils import timezone

from pillbox import duplicates, ids, superseding
from pillbox.access import Reach, locate, prefix_range
from pillbox.duplicates import Note
from pillbox.exceptions import AmbiguousId, NotFound, ValidationFailed
from pillbox.global_db import GLOBAL
from pillbox.models import Bottle, Pill, PillVector, Tidy, TidyPlan

PLAN_KEEP = timedelta(days=30)  # a plan never applied is forgotten after this
MODEL_WAIT = 30.0  # seconds a plan by meaning waits for a model that is still loading
_FIELDS = ("id", "title", "content", "created_at", "updated_at", "views")


@dataclass(frozen=True)
class Member:
    id: uuid.UUID
    title: str
    created_at: datetime
    views: int
    why: str  # for the keeper, why it is kept; for the others, how each matched it


@dataclass(frozen=True)
class PlanGroup:
    number: int
    keeper: Member
    others: list[Member]


@dataclass(frozen=True)
class Plan:
    bottle: Bottle
    looked_at: int  # live pills, not superseded, that were compared
    by_meaning: bool
    meaning_note: str | None  # why meaning could not be used, when it was asked for
    groups: list[PlanGroup]
    record: TidyPlan | None  # None when there is nothing to tidy


# ---------------------------------------------------------------- the plan


def _live(alias: str, bottle_id: uuid.UUID) -> Any:
    """The bottle's pills a tidy may touch: live, in a live prescription, superseded by none."""
    return Pill.objects.using(alias).filter(prescription__bottle_id=bottle_id, prescription__deleted_at__isnull=True,
                                            deleted_at__isnull=True, superseded_by__isnull=True)


def fingerprint(updated_at: datetime, superseded_by: uuid.UUID | None) -> str:
    return f"{updated_at.isoformat()}|{superseded_by.hex if superseded_by else '-'}"


def _vectors(alias: str, pill_ids: list[uuid.UUID]) -> tuple[dict[uuid.UUID, Any], str | None]:
    """The pills' vectors of the current model (the missing ones embedded now), or why there are none."""
    import numpy as np

    from pillbox.embeddings import backfill, loader, storage

    model = loader.embedder(wait=MODEL_WAIT)
    if model is None:
        return {}, "the embedding model is not available; grouped by text only"
    stored = PillVector.objects.using(alias).filter(pill_id__in=pill_ids, model=model.key)
    missing = set(pill_ids) - set(stored.values_list("pill_id", flat=True))
    if missing:
        backfill.backfill(alias, "pill", rows=sorted(missing, key=str))
    found = {}
    for pill_id, blob in PillVector.objects.using(alias).filter(pill_id__in=pill_ids, model=model.key).values_list(
            "pill_id", "vector"):
        found[pill_id] = np.frombuffer(bytes(blob), dtype=storage.VECTOR_DTYPE).astype(np.float32)
    return found, None


def duplicates_plan(*, reach: Reach, bottle_id: str, by_meaning: bool = False) -> Plan:
    bottle, alias = locate(reach, Bottle, bottle_id, noun="bottle", field="bottle_id",
                           hint="; bottle_list lists yours")
    rows = list(_live(alias, bottle.id).order_by("seq").values(*_FIELDS))
    vectors: dict[uuid.UUID, Any] = {}
    note = None
    if by_meaning and len(rows) > 1:
        vectors, note = _vectors(alias, [row["id"] for row in rows])
    notes = [Note(id=row["id"].hex, title=row["title"], content=row["content"], created_at=row["created_at"],
                  views=row["views"], vector=vectors.get(row["id"])) for row in rows]
    modes = duplicates.MODES if by_meaning and note is None else (duplicates.EXACT, duplicates.NEAR)
    found = duplicates.groups(notes, modes=modes)
    plan_groups = [_plan_group(number, group) for number, group in enumerate(found, 1)]
    record = _record(reach, bottle, by_meaning, plan_groups, {row["id"].hex: row["updated_at"] for row in rows})
    return Plan(bottle=bottle, looked_at=len(rows), by_meaning=by_meaning, meaning_note=note, groups=plan_groups,
                record=record)


def _plan_group(number: int, group: duplicates.Group) -> PlanGroup:
    def member(note: Note, why: str) -> Member:
        return Member(id=uuid.UUID(note.id), title=note.title, created_at=note.created_at, views=note.views, why=why)

    return PlanGroup(number=number, keeper=member(group.keeper, group.keeper_reason),
                     others=[member(other, duplicates.describe(group.links[other.id])) for other in group.others])


def _record(reach: Reach, bottle: Bottle, by_meaning: bool, groups: list[PlanGroup],
            edited: dict[str, datetime]) -> TidyPlan | None:
    """The plan stored under an id made from what it says, so an unchanged bottle gives the same plan again."""
    if not groups:
        return None
    stored = [{"keeper": group.keeper.id.hex, "keeper_why": group.keeper.why,
               "others": [other.id.hex for other in group.others], "why": [other.why for other in group.others]}
              for group in groups]
    state = {member.id.hex: fingerprint(edited[member.id.hex], None)
             for group in groups for member in [group.keeper, *group.others]}
    digest = hashlib.sha256(json.dumps([reach.user.pk, bottle.id.hex, by_meaning, stored, state],
                                       sort_keys=True).encode()).digest()
    plan_id = uuid.UUID(bytes=digest[:16])
    now = timezone.now()
    with transaction.atomic(using=GLOBAL):
        TidyPlan.objects.filter(user=reach.user, created_at__lt=now - PLAN_KEEP, tidies__isnull=True).delete()
        plan, _ = TidyPlan.objects.get_or_create(
            id=plan_id, defaults={"user": reach.user, "bottle_id": bottle.id, "by_meaning": by_meaning,
                                  "created_at": now, "groups": stored, "state": state})
    return plan


# ---------------------------------------------------------------- applying and undoing


Own = TypeVar("Own", TidyPlan, Tidy)


def _own(model: type[Own], reach: Reach, raw_id: str, *, noun: str, field: str, hint: str) -> Own:
    """One of the caller's own plans or tidies by id or prefix; another user's is not found, as an unknown id."""
    digits = ids.normalise(raw_id, field)
    low, high = prefix_range(digits)
    found = list(model._default_manager.filter(user=reach.user, id__gte=low, id__lte=high).order_by("id")[:10])
    if len(found) > 1:
        raise AmbiguousId(f"The id prefix {digits} matches several {noun}s; give more digits.",
                          **{field: raw_id.strip(), "candidates": ", ".join(ids.distinguishing([f.pk for f in found]))})
    if not found:
        raise NotFound(f"No {noun} has the id {raw_id.strip()}{hint}.", **{field: raw_id.strip()})
    return found[0]


def _bottle_alias(reach: Reach, bottle_id: uuid.UUID, field: str) -> str:
    alias = next((alias for alias, bottles in reach.dbs.items() if bottle_id in bottles), None)
    if alias is None:
        raise NotFound(f"The bottle {ids.short(bottle_id)} of this {field.split('_')[0]} is not one you can reach "
                       "now (unregistered, unlinked or not read); nothing was changed.",
                       **{field: ids.short(bottle_id)})
    return alias


def _chosen(plan: TidyPlan, numbers: Sequence[int] | None) -> list[int]:
    count = len(plan.groups)
    if numbers is None:
        return list(range(1, count + 1))
    wrong = sorted({number for number in numbers if not 1 <= number <= count})
    if wrong:
        raise ValidationFailed(f"The plan {ids.short(plan.id)} has groups 1-{count}; there is no group "
                               f"{', '.join(map(str, wrong))}. Nothing was changed.",
                               groups=f"must be numbers from 1 to {count}")
    if not numbers:
        raise ValidationFailed("groups is empty: name at least one group, or leave it out to apply them all.",
                               groups="give at least one group number")
    return sorted(set(numbers))


def _refuse_stale(plan: TidyPlan, alias: str, numbers: list[int]) -> None:
    named = [uuid.UUID(hex_id) for number in numbers for hex_id in _members(plan.groups[number - 1])]
    now = {row["id"].hex: row for row in Pill.objects.using(alias).filter(
        pk__in=named, prescription__bottle_id=plan.bottle_id).select_for_update().values(
        "id", "updated_at", "superseded_by", "deleted_at", "prescription__deleted_at")}
    for number in numbers:
        for hex_id in _members(plan.groups[number - 1]):
            row = now.get(hex_id)
            if row is not None and row["deleted_at"] is None and row["prescription__deleted_at"] is None and \
                    fingerprint(row["updated_at"], row["superseded_by"]) == plan.state[hex_id]:
                continue
            applied = next((tidy for tidy in Tidy.objects.filter(plan=plan, undone_at__isnull=True).order_by("id")
                            if number in tidy.group_numbers), None)
            if applied is not None:
                raise ValidationFailed(
                    f"Group {number} of the plan {ids.short(plan.id)} was applied already by the tidy "
                    f"{ids.short(applied.id)} (pill_tidy_undo undoes it). Nothing was changed.",
                    plan_id=ids.short(plan.id), tidy_id=ids.short(applied.id))
            what = "discarded" if row is None or row["deleted_at"] or row["prescription__deleted_at"] else \
                "revised or superseded"
            raise ValidationFailed(
                f"The plan {ids.short(plan.id)} is stale: the pill {hex_id[:12]} (group {number}) was {what} since "
                "it was made. Nothing was changed; call pill_duplicates again for a fresh plan.",
                plan_id=ids.short(plan.id), pill=hex_id[:12])


def _members(group: dict[str, Any]) -> list[str]:
    return [group["keeper"], *group["others"]]


def tidy_apply(*, reach: Reach, plan_id: str, groups: Sequence[int] | None = None) -> Tidy:
    plan = _own(TidyPlan, reach, plan_id, noun="tidy plan", field="plan_id", hint="; pill_duplicates makes one")
    numbers = _chosen(plan, groups)
    alias = _bottle_alias(reach, plan.bottle_id, "plan_id")
    with transaction.atomic(using=alias):
        _refuse_stale(plan, alias, numbers)
        manager = Pill.objects.using(alias)
        before: dict[str, str | None] = {}
        after: dict[str, str] = {}
        for number in numbers:
            group = plan.groups[number - 1]
            manager.filter(pk__in=[uuid.UUID(other) for other in group["others"]]).update(
                superseded_by=uuid.UUID(group["keeper"]))
            # What each was superseded by before: none, as the plan's state says and _refuse_stale just checked.
            before.update({other: None for other in group["others"]})
            after.update({other: group["keeper"] for other in group["others"]})
        with transaction.atomic(using=GLOBAL):
            tidy_id, _ = ids.next_id(Tidy, GLOBAL)
            return Tidy.objects.create(id=tidy_id, plan=plan, user=reach.user, bottle_id=plan.bottle_id,
                                       group_numbers=numbers, before=before, after=after, applied_at=timezone.now())


def tidy_undo(*, reach: Reach, tidy_id: str) -> Tidy:
    found = _own(Tidy, reach, tidy_id, noun="tidy", field="tidy_id", hint="; pill_tidy answers one")
    alias = _bottle_alias(reach, found.bottle_id, "tidy_id")
    with transaction.atomic(using=GLOBAL):
        # Read again under the write lock: of two undos at once, the second is told it was undone already.
        tidy = Tidy.objects.select_for_update().get(pk=found.pk)
        if tidy.undone_at is not None:
            raise ValidationFailed(f"The tidy {ids.short(tidy.id)} was undone already "
                                   f"({tidy.undone_at:%Y-%m-%d %H:%M} UTC); nothing was changed.",
                                   tidy_id=ids.short(tidy.id))
        with transaction.atomic(using=alias):
            touched = [uuid.UUID(hex_id) for hex_id in tidy.after]
            now = dict(Pill.objects.using(alias).filter(pk__in=touched).select_for_update().values_list(
                "id", "superseded_by"))
            changed = sorted(hex_id for hex_id, keeper in tidy.after.items()
                             if (now.get(uuid.UUID(hex_id)) or uuid.UUID(int=0)).hex != keeper)
            if changed:
                raise ValidationFailed(
                    f"The pill {changed[0][:12]} was superseded otherwise since the tidy {ids.short(tidy.id)}; "
                    "undoing it would overwrite that. Nothing was changed.",
                    tidy_id=ids.short(tidy.id), pills=", ".join(hex_id[:12] for hex_id in changed[:10]))
            superseding.restore(alias, Pill, {uuid.UUID(hex_id): uuid.UUID(value) if value else None
                                              for hex_id, value in tidy.before.items()})
        tidy.undone_at = timezone.now()
        tidy.save(update_fields=["undone_at"])
    return tidy


def tidy_list(*, reach: Reach, bottle_id: uuid.UUID, limit: int = 20) -> list[Tidy]:
    """The caller's latest tidies of one bottle, newest first (for people, who undo them from the browser)."""
    return list(Tidy.objects.filter(user=reach.user, bottle_id=bottle_id).order_by("-id")[:limit])
