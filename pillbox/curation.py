"""Writes only people make (the web pages, the admin, the REST API), never agents: agents only ever soft-delete;
restoring and purging (a real delete) are for people, as are the repairs of their registry (forgetting a bottle,
pointing one at the directory it moved to)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from pillbox import ids, origin
from pillbox.access import Reach, locate, locate_capsule
from pillbox.databases import db_file, has_schema, open_local
from pillbox.exceptions import DbNotFound, NoBottleInDb, NotFound, PrescriptionRequired, ValidationFailed
from pillbox.models import Bottle, Capsule, Pill, Prescription, Registration
from pillbox.original.recognise import is_original
from pillbox.services import REOPEN_HINT, is_file, named_directory


def pill_restore(*, reach: Reach, pill_id: str) -> Pill:
    pill, alias = locate(reach, Pill, pill_id, noun="pill", discarded=True)
    prescription = Prescription.objects.using(alias).get(pk=pill.prescription_id)
    if prescription.deleted_at is not None:
        raise ValidationFailed("Restore the pill's prescription first.", prescription_id=ids.short(prescription.id))
    Pill.objects.using(alias).filter(pk=pill.pk).update(deleted_at=None)
    pill.deleted_at = None
    return pill


def pill_purge(*, reach: Reach, pill_id: str) -> None:
    pill, alias = locate(reach, Pill, pill_id, noun="pill", discarded=True)
    prescription = Prescription.objects.using(alias).get(pk=pill.prescription_id)
    if prescription.ended_at is not None:  # a closed session is kept as it was, as for edits and discards
        raise PrescriptionRequired(
            f"The pill's prescription {ids.short(prescription.id)} is closed; {REOPEN_HINT} before purging the pill.",
            prescription_id=ids.short(prescription.id),
        )
    Pill.objects.using(alias).filter(pk=pill.pk).delete()


def prescription_restore(*, reach: Reach, prescription_id: str) -> tuple[Prescription, int]:
    """Bring back a discarded prescription and the pills that were discarded with it (not those discarded
    one by one before)."""
    prescription, alias = locate(reach, Prescription, prescription_id, noun="prescription", discarded=True)
    if prescription.deleted_at is None:
        return prescription, 0
    with transaction.atomic(using=alias):
        count = Pill.objects.using(alias).filter(
            prescription=prescription, deleted_at=prescription.deleted_at
        ).update(deleted_at=None)
        Prescription.objects.using(alias).filter(pk=prescription.pk).update(deleted_at=None)
    prescription.deleted_at = None
    return prescription, count


def prescription_purge(*, reach: Reach, prescription_id: str) -> int:
    """Delete a prescription and all its pills for good; returns how many pills went with it."""
    prescription, alias = locate(reach, Prescription, prescription_id, noun="prescription", discarded=True)
    with transaction.atomic(using=alias):
        count = Pill.objects.using(alias).filter(prescription=prescription).count()
        Prescription.objects.using(alias).filter(pk=prescription.pk).delete()
    return count


def capsule_restore(*, reach: Reach, capsule_id: str) -> Capsule:
    capsule = locate_capsule(reach, capsule_id, discarded=True)
    Capsule.objects.filter(pk=capsule.pk).update(deleted_at=None)
    capsule.deleted_at = None
    return capsule


def capsule_purge(*, reach: Reach, capsule_id: str) -> None:
    Capsule.objects.filter(pk=locate_capsule(reach, capsule_id, discarded=True).pk).delete()


def registration_unregister(*, user: User, registration_id: int) -> None:
    """Forget a bottle in the user's registry; the bottle's database itself is left untouched."""
    deleted, _ = Registration.objects.filter(user=user, pk=registration_id).delete()
    if not deleted:
        raise NotFound("No such bottle in your registry.", registration=registration_id)


def registration_repair(*, user: User, registration_id: int, directory: str) -> Registration:
    """Point a registered local bottle at the directory it moved to (the file there must hold that bottle)."""
    registration = Registration.objects.filter(user=user, pk=registration_id).first()
    if registration is None:
        raise NotFound("No such bottle in your registry.", registration=registration_id)
    target = named_directory(directory).resolve()
    path = db_file(target)
    if not is_file(path):
        raise DbNotFound(f"There is no .pillbox/pillbox.db in {target}.", directory=str(target))
    if not has_schema(path) and not is_original(path):  # hook: an original's project file
        raise NoBottleInDb("That database file holds no bottle.", db_path=str(path))
    alias = open_local(path)
    if not Bottle.objects.using(alias).filter(pk=registration.bottle_id).exists():
        raise NoBottleInDb("That database holds another bottle, not this one.", db_path=str(path))
    # A person pointed at this file: it is theirs from now on (adopted, when their Pillbox did not make it here).
    origin.adopt(user=user, path=path, alias=alias, claimed_directory=registration.directory)
    registration.db_path, registration.directory = str(path), str(target)
    registration.save(update_fields=["db_path", "directory"])
    return registration
