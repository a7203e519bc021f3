"""Per-user quotas, so one user cannot fill a shared server's database for everyone.

Discarded rows count until a person purges them (they still take room), as todos count against ``maxTasks``.
Prescriptions and pills are counted in the database being written, over the user's bottles there: on a shared
server that is the global database, where every remote agent's memory lives. A check runs inside the write's
transaction, which on SQLite holds the write lock, so concurrent writers cannot slip past the limit together.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection

from django.conf import settings
from django.contrib.auth.models import User

from pillbox.exceptions import ValidationFailed
from pillbox.models import Capsule, Pill, Prescription, Registration

REMEDY = {
    "bottles": "unregister bottles you no longer use in the memory browser",
    "prescriptions": "purge discarded prescriptions in the memory browser",
    "pills": "purge discarded pills in the memory browser",
    "capsules": "purge discarded capsules in the memory browser",
}


def _refuse_when_full(kind: str, count: int) -> None:
    limit = settings.PILLBOX_QUOTAS[kind]
    if limit and count >= limit:
        raise ValidationFailed(
            f"You have reached the limit of {limit} {kind} per user ({count} exist, discarded ones included); "
            f"{REMEDY[kind]}, or ask the operator to raise it.",
            limit=f"{limit} {kind} per user",
            count=count,
        )


def check_bottle_room(*, user: User) -> None:
    _refuse_when_full("bottles", Registration.objects.filter(user=user).count())


def check_prescription_room(*, alias: str, bottles: Collection[uuid.UUID]) -> None:
    _refuse_when_full("prescriptions", Prescription.objects.using(alias).filter(bottle_id__in=bottles).count())


def check_pill_room(*, alias: str, bottles: Collection[uuid.UUID]) -> None:
    _refuse_when_full("pills", Pill.objects.using(alias).filter(prescription__bottle_id__in=bottles).count())


def check_capsule_room(*, user: User) -> None:
    _refuse_when_full("capsules", Capsule.objects.filter(owner=user).count())
