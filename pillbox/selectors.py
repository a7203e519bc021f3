"""Reads, always limited to what the caller can reach, fetching everything the formatters print."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from django.db.models import Count, Q

from pillbox.access import Reach, locate, match_prefix, registration_alias
from pillbox.databases import GLOBAL
from pillbox.exceptions import NotFound
from pillbox.models import Bottle, Capsule, Pill, Prescription, Registration


@dataclass(frozen=True)
class BottleContext:
    bottle: Bottle
    prescriptions: list[Prescription]  # each annotated with live_pills
    total: int


@dataclass(frozen=True)
class PrescriptionContext:
    prescription: Prescription
    pills: list[Pill]
    total: int


@dataclass(frozen=True)
class ListedBottle:
    registration: Registration
    linked: bool


def bottle_context(*, reach: Reach, bottle_id: str, limit: int) -> BottleContext:
    bottle, alias = locate(reach, Bottle, bottle_id, noun="bottle", field="bottle_id",
                           hint="; bottle_list lists yours")
    alive = Prescription.objects.using(alias).alive().filter(bottle=bottle)
    rows = list(
        alive.annotate(live_pills=Count("pills", filter=Q(pills__deleted_at__isnull=True))).order_by("-id")[:limit]
    )
    return BottleContext(bottle=bottle, prescriptions=rows, total=alive.count())


def prescription_context(*, reach: Reach, prescription_id: str, limit: int) -> PrescriptionContext | None:
    try:
        prescription, alias = locate(reach, Prescription, prescription_id, noun="prescription",
                                     field="prescription_id")
    except NotFound:
        return None
    alive = Pill.objects.using(alias).alive().filter(prescription=prescription)
    return PrescriptionContext(prescription=prescription, pills=list(alive.order_by("-id")[:limit]),
                               total=alive.count())


def prescription_get(*, reach: Reach, prescription_id: str) -> tuple[Prescription, str]:
    return locate(reach, Prescription, prescription_id, noun="prescription")


def pill_get(*, reach: Reach, pill_id: str) -> tuple[Pill, str]:
    return locate(reach, Pill, pill_id, noun="pill", hint="; pill_search finds pills")


def capsule_get(*, reach: Reach, capsule_id: str) -> Capsule:
    found = match_prefix(Capsule.objects.alive().filter(owner=reach.user), capsule_id, noun="capsule")
    if found is None:
        raise NotFound(f"No capsule has the id {capsule_id.strip()}; capsule_search finds capsules.",
                       id=capsule_id.strip())
    return found


def bottle_list(*, reach: Reach) -> list[ListedBottle]:
    listed = []
    for registration in reach.registrations:
        linked = registration.scope == Bottle.SCOPE_GLOBAL or Path(registration.db_path).is_file()
        listed.append(ListedBottle(registration=registration, linked=linked))
    return sorted(listed, key=lambda item: (item.registration.name, str(item.registration.bottle_id)))


def narrowed_dbs(reach: Reach, bottle_id: str | None) -> dict[str, set]:
    """The databases and bottles a listing covers: every reachable one, or the one bottle asked for."""
    if bottle_id is None:
        return {alias: bottles for alias, bottles in reach.dbs.items() if bottles}
    bottle, alias = locate(reach, Bottle, bottle_id, noun="bottle", field="bottle_id",
                           hint="; bottle_list lists yours")
    return {alias: {bottle.id}}


def pill_compounds(*, reach: Reach, bottle_id: str | None, limit: int) -> list[tuple[str, int]]:
    counts: Counter[str] = Counter()
    for alias, bottles in narrowed_dbs(reach, bottle_id).items():
        rows = (
            Pill.objects.using(alias).alive().filter(prescription__bottle_id__in=bottles,
                                                     prescription__deleted_at__isnull=True)
            .values_list("compound").annotate(n=Count("id"))
        )
        counts.update(dict(rows))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]


def capsule_compounds(*, reach: Reach, limit: int) -> list[tuple[str, int]]:
    rows = Capsule.objects.alive().filter(owner=reach.user).values_list("compound").annotate(n=Count("id"))
    return sorted(rows, key=lambda item: (-item[1], item[0]))[:limit]


def bottle_names(reach: Reach) -> dict:
    """Bottle id -> name, for search results."""
    return {registration.bottle_id: registration.name for registration in reach.registrations}


__all__ = [
    "GLOBAL", "BottleContext", "PrescriptionContext", "ListedBottle", "bottle_context", "prescription_context",
    "prescription_get", "pill_get", "capsule_get", "bottle_list", "pill_compounds", "capsule_compounds",
    "narrowed_dbs", "bottle_names", "registration_alias",
]
