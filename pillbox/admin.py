"""Operators' view of the global database: bottles, prescriptions, pills, capsules and the registry.

Local bottles live in their projects' own files and are curated in the memory browser. Discarded rows are
listed and marked; discarding and restoring go through the services (as the bottle's or capsule's owner would),
so the rules hold here too: a pill in a closed prescription is not discarded, a pill of a discarded prescription
is not restored alone. The admin's own delete is the purge, for people only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from mcp_bridge.tools import Caller
from pillbox import curation, ids, services
from pillbox.access import Reach
from pillbox.exceptions import PillboxError
from pillbox.global_db import GLOBAL
from pillbox.models import Bottle, Capsule, OriginalImport, Pill, Prescription, Registration
from pillbox.texts import shown_directory

if TYPE_CHECKING:
    from accounts.caller import PersonRequest

Row = TypeVar("Row", bound=Model)


def operator_reach(user: User, bottles: Iterable[uuid.UUID] = ()) -> Reach:
    """What the services need to act on global rows: the bottles concerned, as if the user had registered them."""
    caller = Caller(user=user, transport="http")
    return Reach(
        user=user,
        caller=caller,
        current=GLOBAL,
        current_path=None,
        dbs={GLOBAL: set(bottles)},
    )


class DiscardedFilter(admin.SimpleListFilter):
    title = "discarded"
    parameter_name = "discarded"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("no", "live"), ("yes", "discarded")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() in ("yes", "no"):
            return queryset.filter(deleted_at__isnull=self.value() == "no")
        return queryset


def _state(row: Prescription | Pill | Capsule) -> str:
    return f"✗ discarded {row.deleted_at:%Y-%m-%d %H:%M}" if row.deleted_at else "live"


class ReadOnlyAdmin(admin.ModelAdmin):
    """Agents and people write these through the services; operators look, discard, restore and purge."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def apply(self, request: HttpRequest, rows: Iterable[Row], verb: str, act: Callable[[Row], object]) -> None:
        done, refused = 0, []
        for row in rows:
            try:
                act(row)
                done += 1
            except PillboxError as error:
                refused.append(f"{ids.short(row.pk)}: {error.message}")
        self.message_user(request, f"{verb} {done}.", messages.SUCCESS)
        for text in refused:
            self.message_user(request, text, messages.ERROR)


class PointsToLocalMemory(ReadOnlyAdmin):
    """These lists hold the global database only: say so on each, with how many local bottles are elsewhere and
    a link to the memory browser, which reaches them (a curator would otherwise read 0 pills for 15)."""

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, object] | None = None) -> HttpResponse:
        if request.method == "GET":
            local = Registration.objects.filter(scope=Bottle.SCOPE_LOCAL)
            everyone = local.values("db_path").distinct().count()
            mine = local.filter(user__username=request.user.get_username()).count()
            messages.info(request, format_html(
                "This list holds the global database only. Local bottles ({} registered, {} of them yours) keep "
                "their memory in their projects' own files (.pillbox/pillbox.db): see and curate yours in the "
                '<a href="{}">memory browser</a>.', everyone, mine, reverse("memory-bottles")))
        return super().changelist_view(request, extra_context)


@admin.register(Bottle)
class BottleAdmin(PointsToLocalMemory):
    list_display = ("name", "display_name", "short_id", "scope", "project_directory", "created_at", "views")
    list_filter = ("scope", "created_at")
    search_fields = ("id", "name", "display_name", "directory")

    @admin.display(description="id", ordering="id")
    def short_id(self, bottle: Bottle) -> str:
        return ids.short(bottle.id)

    @admin.display(description="directory", ordering="directory")
    def project_directory(self, bottle: Bottle) -> str:
        return shown_directory(bottle.directory, hide_paths=False, scope=bottle.scope)


@admin.register(Prescription)
class PrescriptionAdmin(PointsToLocalMemory):
    list_display = ("title", "short_id", "bottle", "status", "state", "author_name", "started_at", "ended_at")
    list_filter = (DiscardedFilter, ("ended_at", admin.EmptyFieldListFilter), "bottle", "started_at")
    search_fields = ("id", "title", "author_name", "author_email", "bottle__name")
    list_select_related = ("bottle",)
    actions = ["discard", "restore"]

    @admin.display(description="id", ordering="id")
    def short_id(self, prescription: Prescription) -> str:
        return ids.short(prescription.id)

    @admin.display(description="status")
    def status(self, prescription: Prescription) -> str:
        return "open" if prescription.ended_at is None else "closed"

    @admin.display(description="state", ordering="deleted_at")
    def state(self, prescription: Prescription) -> str:
        return _state(prescription)

    @admin.action(description="Discard selected prescriptions with their pills")
    def discard(self, request: PersonRequest, queryset: QuerySet[Prescription]) -> None:
        self.apply(
            request,
            queryset.filter(deleted_at__isnull=True),
            "Discarded",
            lambda rx: services.prescription_discard(
                reach=operator_reach(request.user, [rx.bottle_id]), prescription_id=rx.pk.hex
            ),
        )

    @admin.action(description="Restore selected prescriptions with the pills discarded with them")
    def restore(self, request: PersonRequest, queryset: QuerySet[Prescription]) -> None:
        self.apply(
            request,
            queryset.filter(deleted_at__isnull=False),
            "Restored",
            lambda rx: curation.prescription_restore(
                reach=operator_reach(request.user, [rx.bottle_id]), prescription_id=rx.pk.hex
            ),
        )


@admin.register(Pill)
class PillAdmin(PointsToLocalMemory):
    list_display = ("title", "short_id", "compound", "prescription", "state", "author_name", "created_at", "views")
    list_filter = (DiscardedFilter, "compound", "created_at")
    search_fields = ("id", "title", "content", "compound", "author_name", "author_email")
    list_select_related = ("prescription",)
    actions = ["discard", "restore"]

    @admin.display(description="id", ordering="id")
    def short_id(self, pill: Pill) -> str:
        return ids.short(pill.id)

    @admin.display(description="state", ordering="deleted_at")
    def state(self, pill: Pill) -> str:
        return _state(pill)

    @admin.action(description="Discard selected pills")
    def discard(self, request: PersonRequest, queryset: QuerySet[Pill]) -> None:
        self.apply(
            request,
            queryset.filter(deleted_at__isnull=True).select_related("prescription"),
            "Discarded",
            lambda pill: services.pill_discard(
                reach=operator_reach(request.user, [pill.prescription.bottle_id]), pill_id=pill.pk.hex
            ),
        )

    @admin.action(description="Restore selected pills")
    def restore(self, request: PersonRequest, queryset: QuerySet[Pill]) -> None:
        self.apply(
            request,
            queryset.filter(deleted_at__isnull=False).select_related("prescription"),
            "Restored",
            lambda pill: curation.pill_restore(
                reach=operator_reach(request.user, [pill.prescription.bottle_id]), pill_id=pill.pk.hex
            ),
        )


@admin.register(Capsule)
class CapsuleAdmin(ReadOnlyAdmin):
    list_display = ("title", "short_id", "compound", "owner", "state", "created_at", "views")
    list_filter = (DiscardedFilter, "compound", "created_at")
    search_fields = ("id", "title", "content", "compound", "owner__username")
    list_select_related = ("owner",)
    actions = ["discard", "restore"]

    @admin.display(description="id", ordering="id")
    def short_id(self, capsule: Capsule) -> str:
        return ids.short(capsule.id)

    @admin.display(description="state", ordering="deleted_at")
    def state(self, capsule: Capsule) -> str:
        return _state(capsule)

    # A capsule belongs to its owner: the services act as them.
    @admin.action(description="Discard selected capsules")
    def discard(self, request: HttpRequest, queryset: QuerySet[Capsule]) -> None:
        self.apply(
            request,
            queryset.filter(deleted_at__isnull=True).select_related("owner"),
            "Discarded",
            lambda capsule: services.capsule_discard(reach=operator_reach(capsule.owner), capsule_id=capsule.pk.hex),
        )

    @admin.action(description="Restore selected capsules")
    def restore(self, request: HttpRequest, queryset: QuerySet[Capsule]) -> None:
        self.apply(
            request,
            queryset.filter(deleted_at__isnull=False).select_related("owner"),
            "Restored",
            lambda capsule: curation.capsule_restore(reach=operator_reach(capsule.owner), capsule_id=capsule.pk.hex),
        )


@admin.register(Registration)
class RegistrationAdmin(ReadOnlyAdmin):
    """Deleting an entry unregisters the bottle for that user; the bottle's database is left as it is."""

    list_display = ("name", "display_name", "user", "scope", "short_bottle_id", "linked", "db_path", "created_at")
    list_filter = ("scope", "created_at")
    search_fields = ("name", "display_name", "directory", "db_path", "user__username", "bottle_id")
    list_select_related = ("user",)

    @admin.display(description="bottle id", ordering="bottle_id")
    def short_bottle_id(self, registration: Registration) -> str:
        return ids.short(registration.bottle_id)

    @admin.display(description="linked", boolean=True)
    def linked(self, registration: Registration) -> bool:
        return registration.scope == Bottle.SCOPE_GLOBAL or Path(registration.db_path).is_file()


@admin.register(OriginalImport)
class OriginalImportAdmin(admin.ModelAdmin):
    """What was brought across from the original Pillbox, per file. Kept as written: the record is what stops a
    file from being imported twice (a purged row would come back)."""

    list_display = ("source", "kind", "username", "imported_at", "bottles", "prescriptions", "pills", "capsules",
                    "registrations", "skipped")
    list_filter = ("kind", "imported_at")
    search_fields = ("source", "username")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
