"""Reads, always limited to what the caller can reach, fetching everything the formatters print."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate

from pillbox.access import Reach, locate, locate_capsule
from pillbox.exceptions import NotFound, WrongKind
from pillbox.models import Bottle, Capsule, Pill, Prescription, Registration
from pillbox.routers import LOCAL_ALIAS_PREFIX, is_local_alias

if TYPE_CHECKING:
    from typing import TypeAlias, TypedDict

    from django_stubs_ext import WithAnnotations

    class _LivePills(TypedDict):
        live_pills: int

    # A prescription counted with its live pills (``.annotate(live_pills=…)``).
    CountedPrescription: TypeAlias = WithAnnotations[Prescription, _LivePills]


@dataclass(frozen=True)
class BottleContext:
    bottle: Bottle
    prescriptions: list[CountedPrescription]  # their pills counted without the superseded ones
    total: int
    superseded: int = 0  # the bottle's live pills a newer pill supersedes, left out


@dataclass(frozen=True)
class PrescriptionContext:
    prescription: Prescription
    pills: list[Pill]
    total: int
    superseded: int = 0  # the prescription's live pills a newer pill supersedes, left out


@dataclass(frozen=True)
class ListedBottle:
    registration: Registration
    linked: bool
    read: bool = True  # False: its file is there but not read (not the user's own, or refused: pillbox.origin)


# A prescription's pills an agent is shown: live, and superseded by no newer pill (pillbox.superseding).
SHOWN_PILLS = Q(pills__deleted_at__isnull=True, pills__superseded_by__isnull=True)


def bottle_context(*, reach: Reach, bottle_id: str, limit: int) -> BottleContext:
    bottle, alias = locate(reach, Bottle, bottle_id, noun="bottle", field="bottle_id",
                           hint="; bottle_list lists yours")
    alive = Prescription.objects.using(alias).alive().filter(bottle=bottle)
    rows = list(alive.annotate(live_pills=Count("pills", filter=SHOWN_PILLS)).order_by("-id")[:limit])
    superseded = (Pill.objects.using(alias).alive()
                  .filter(prescription__in=alive, superseded_by__isnull=False).count())
    return BottleContext(bottle=bottle, prescriptions=rows, total=alive.count(), superseded=superseded)


def prescription_context(*, reach: Reach, prescription_id: str, limit: int) -> PrescriptionContext | None:
    try:
        prescription, alias = locate(reach, Prescription, prescription_id, noun="prescription",
                                     field="prescription_id")
    except WrongKind:
        raise
    except NotFound:
        return None
    alive = Pill.objects.using(alias).alive().filter(prescription=prescription)
    shown = alive.filter(superseded_by__isnull=True)
    return PrescriptionContext(prescription=prescription, pills=list(shown.order_by("-id")[:limit]),
                               total=shown.count(), superseded=alive.filter(superseded_by__isnull=False).count())


def prescription_get(*, reach: Reach, prescription_id: str) -> tuple[Prescription, str]:
    return locate(reach, Prescription, prescription_id, noun="prescription")


def pill_get(*, reach: Reach, pill_id: str) -> tuple[Pill, str]:
    return locate(reach, Pill, pill_id, noun="pill", hint="; pill_search finds pills")


def capsule_get(*, reach: Reach, capsule_id: str) -> Capsule:
    return locate_capsule(reach, capsule_id, hint="; capsule_search finds capsules")


def bottle_list(*, reach: Reach) -> list[ListedBottle]:
    listed = []
    reached = reach.all_bottle_ids()
    for registration in reach.registrations:
        linked = registration.scope == Bottle.SCOPE_GLOBAL or Path(registration.db_path).is_file()
        listed.append(ListedBottle(registration=registration, linked=linked,
                                   read=not linked or registration.bottle_id in reached))
    return sorted(listed, key=lambda item: (item.registration.name, str(item.registration.bottle_id)))


def narrowed_dbs(reach: Reach, bottle_id: str | None) -> dict[str, set[uuid.UUID]]:
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
                                                     prescription__deleted_at__isnull=True, superseded_by__isnull=True)
            .values_list("compound").annotate(n=Count("id"))
        )
        counts.update(dict(rows))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]


def capsule_compounds(*, reach: Reach, limit: int) -> list[tuple[str, int]]:
    rows = (Capsule.objects.alive().filter(owner=reach.user, superseded_by__isnull=True)
            .values_list("compound").annotate(n=Count("id")))
    return sorted(rows, key=lambda item: (-item[1], item[0]))[:limit]


@dataclass(frozen=True)
class SessionMemory:
    """What a starting session may be shown of one bottle and of the user's capsules: candidates, not a choice."""
    pills: list[Pill]  # the newest live pills and the most read ones, each with its prescription
    total_pills: int
    capsules: list[Capsule]  # newest first
    total_capsules: int
    superseded_pills: int = 0  # left out: a newer pill supersedes them (pillbox.superseding)
    superseded_capsules: int = 0


def session_memory(*, reach: Reach, alias: str, bottle: Bottle | None, recent: int, popular: int,
                   capsules: int) -> SessionMemory:
    """``bottle`` None: the capsules alone (a directory with no bottle yet)."""
    every_capsule = Capsule.objects.alive().filter(owner=reach.user)
    mine = every_capsule.filter(superseded_by__isnull=True)
    newest_capsules, total_capsules = list(mine.order_by("-seq")[:capsules]), mine.count()
    superseded_capsules = every_capsule.filter(superseded_by__isnull=False).count()
    if bottle is None:
        return SessionMemory(pills=[], total_pills=0, capsules=newest_capsules, total_capsules=total_capsules,
                             superseded_capsules=superseded_capsules)
    every = Pill.objects.using(alias).alive().filter(prescription__bottle=bottle,
                                                     prescription__deleted_at__isnull=True)
    alive = every.filter(superseded_by__isnull=True).select_related("prescription")
    newest = list(alive.order_by("-seq")[:recent])
    seen = {pill.pk for pill in newest}
    read = [pill for pill in alive.filter(views__gt=0).order_by("-views", "-seq")[:popular] if pill.pk not in seen]
    return SessionMemory(pills=newest + read, total_pills=alive.count(), capsules=newest_capsules,
                         total_capsules=total_capsules, superseded_pills=every.filter(superseded_by__isnull=False)
                         .count(), superseded_capsules=superseded_capsules)


def superseded_marks(*, reach: Reach, kind: str, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]:
    """Which of these rows (the caller's pills or capsules) a newer one supersedes, and which: row id -> newer id."""
    if not ids:
        return {}
    if kind == "capsule":
        rows = Capsule.objects.filter(owner=reach.user, pk__in=ids, superseded_by__isnull=False)
        return {pk: newer for pk, newer in rows.values_list("pk", "superseded_by_id") if newer is not None}
    marks: dict[uuid.UUID, uuid.UUID] = {}
    for alias, bottles in reach.dbs.items():
        if bottles:
            pills = Pill.objects.using(alias).filter(pk__in=ids, prescription__bottle_id__in=bottles,
                                                     superseded_by__isnull=False)
            marks.update((pk, newer) for pk, newer in pills.values_list("pk", "superseded_by_id") if newer is not None)
    return marks


def supersedes(record: Pill | Capsule) -> list[uuid.UUID]:
    """The live rows ``record`` supersedes, oldest first."""
    model = type(record)
    rows: QuerySet[Pill] | QuerySet[Capsule] = model._default_manager.using(record._state.db).filter(
        superseded_by=record.pk, deleted_at__isnull=True)
    return list(rows.order_by("pk").values_list("pk", flat=True))


def bottle_names(reach: Reach) -> dict[uuid.UUID, str]:
    """Bottle id -> name, for search results."""
    return {registration.bottle_id: registration.name for registration in reach.registrations}




# ---------------------------------------------------------------- for people (the memory browser)
# People see discarded rows too (to restore or purge them), and the views counters.


@dataclass(frozen=True)
class BottleSummary:
    registration: Registration
    linked: bool
    bottle: Bottle | None  # None when its database is missing or could not be opened
    prescriptions: int
    pills: int


@dataclass(frozen=True)
class BottlePage:
    bottle: Bottle
    alias: str
    prescriptions: list[CountedPrescription]
    pills_per_day: list[tuple[date, int]]  # days with at least one live pill, oldest first

    @property
    def directory(self) -> str:
        """Where a local bottle's file really is (not the directory its row claims); a global one's own."""
        if is_local_alias(self.alias):
            return str(Path(self.alias.removeprefix(LOCAL_ALIAS_PREFIX)).parent.parent)
        return self.bottle.directory


@dataclass(frozen=True)
class PrescriptionPage:
    prescription: Prescription
    alias: str
    bottle: Bottle
    pills: list[Pill]


@dataclass(frozen=True)
class PillPage:
    pill: Pill
    alias: str
    prescription: Prescription
    bottle: Bottle
    supersedes: list[uuid.UUID] = field(default_factory=list)  # the live pills it supersedes


def _alias_of(reach: Reach, bottle_id: uuid.UUID) -> str | None:
    return next((alias for alias, bottles in reach.dbs.items() if bottle_id in bottles), None)


def _live_pills(alias: str) -> QuerySet[Pill]:
    return Pill.objects.using(alias).alive().filter(prescription__deleted_at__isnull=True)


def bottle_summaries(*, reach: Reach) -> list[BottleSummary]:
    summaries = []
    for item in bottle_list(reach=reach):
        bottle_id = item.registration.bottle_id
        alias = _alias_of(reach, bottle_id) if item.linked else None
        bottle = Bottle.objects.using(alias).filter(pk=bottle_id).first() if alias else None
        prescriptions = pills = 0
        if alias and bottle is not None:
            prescriptions = Prescription.objects.using(alias).alive().filter(bottle=bottle).count()
            pills = _live_pills(alias).filter(prescription__bottle=bottle).count()
        summaries.append(BottleSummary(registration=item.registration, linked=item.linked, bottle=bottle,
                                       prescriptions=prescriptions, pills=pills))
    return summaries


def bottle_page(*, reach: Reach, bottle_id: str, include_discarded: bool = False) -> BottlePage:
    bottle, alias = locate(reach, Bottle, bottle_id, noun="bottle", field="bottle_id")
    rows = Prescription.objects.using(alias).filter(bottle=bottle)
    if not include_discarded:
        rows = rows.alive()
    counted = rows.annotate(live_pills=Count("pills", filter=Q(pills__deleted_at__isnull=True))).order_by("-id")
    per_day = (
        _live_pills(alias).filter(prescription__bottle=bottle)
        .annotate(day=TruncDate("created_at")).values_list("day").annotate(n=Count("id")).order_by("day")
    )
    return BottlePage(bottle=bottle, alias=alias, prescriptions=list(counted), pills_per_day=list(per_day))


def prescription_page(*, reach: Reach, prescription_id: str, include_discarded: bool = False,
                      include_superseded: bool = True) -> PrescriptionPage:
    prescription, alias = locate(reach, Prescription, prescription_id, noun="prescription", discarded=True)
    pills = Pill.objects.using(alias).filter(prescription=prescription)
    if not include_superseded:
        pills = pills.filter(superseded_by__isnull=True)
    # A discarded prescription's pills went with it: show them, or the page would look empty.
    if not include_discarded and prescription.deleted_at is None:
        pills = pills.alive()
    bottle = Bottle.objects.using(alias).get(pk=prescription.bottle_id)
    return PrescriptionPage(prescription=prescription, alias=alias, bottle=bottle, pills=list(pills.order_by("-id")))


def pill_page(*, reach: Reach, pill_id: str) -> PillPage:
    pill, alias = locate(reach, Pill, pill_id, noun="pill", discarded=True)
    prescription = Prescription.objects.using(alias).select_related("bottle").get(pk=pill.prescription_id)
    return PillPage(pill=pill, alias=alias, prescription=prescription, bottle=prescription.bottle,
                    supersedes=supersedes(pill))


def capsule_list(*, reach: Reach, compound: str | None = None, include_discarded: bool = False,
                 include_superseded: bool = True) -> list[Capsule]:
    rows = Capsule.objects.filter(owner=reach.user)
    if not include_superseded:
        rows = rows.filter(superseded_by__isnull=True)
    if not include_discarded:
        rows = rows.alive()
    if compound:
        rows = rows.filter(compound=compound)
    return list(rows.order_by("-id"))


def capsule_find_any(*, reach: Reach, capsule_id: str) -> Capsule:
    """One of the user's capsules, discarded or not."""
    return locate_capsule(reach, capsule_id, discarded=True)
