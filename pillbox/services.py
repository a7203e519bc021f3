"""Writes: every change to bottles, prescriptions, pills and capsules goes through here, but those only people
make (restoring, purging, repairing their registry: pillbox.curation).

Each service runs in one IMMEDIATE transaction on the database that holds the record, so its id is
chosen (pillbox.ids) while no other writer can interleave.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F, Model
from django.utils import timezone

from base.gitexclude import exclude_from_git
from pillbox import ids, origin, quotas, superseding
from pillbox.access import Reach, locate, locate_capsule, register, relink
from pillbox.databases import db_file, has_schema, open_local, schema_ready, untrusted_reason
from pillbox.embeddings import backfill
from pillbox.exceptions import (
    AlreadyExists,
    CircularLink,
    DbNotFound,
    NoBottleInDb,
    NotFound,
    PrescriptionRequired,
    ValidationFailed,
    WrongKind,
)
from pillbox.global_db import GLOBAL, global_db_file
from pillbox.models import Bottle, Capsule, OwnedFile, Pill, Prescription, Registration
from pillbox.original.recognise import is_global_original, is_original

SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
REOPEN_HINT = "prescription_reopen reopens it"


def slugify(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "-", folded).strip("-")[:255] or "my-project"


def _check_slug(name: str) -> None:
    if not SLUG.fullmatch(name):
        suggestion = slugify(name)
        raise ValidationFailed(
            f"name must be a slug (lowercase letters, digits and single hyphens); try {suggestion!r}.",
            name=f"must be a slug like {suggestion!r}, got {name!r}",
        )


def _remote_refusal(reach: Reach, action: str) -> ValidationFailed | None:
    caller = reach.caller
    if caller.transport == "stdio":
        return None
    if not reach.is_staff or caller.workdir is None:
        return ValidationFailed(
            f"Remote agents cannot {action} on this server's file system; use scope: \"global\".",
            scope="local bottles and linked directories are only for agents on the server's own machine",
        )
    return None


def _workdir(reach: Reach) -> Path:
    workdir = reach.caller.workdir
    if workdir is None:
        raise ValidationFailed("There is no working directory; use scope: \"global\".", scope="local needs a directory")
    return workdir.resolve()


def _refuse_untrusted(directory: Path) -> None:
    """A database someone else could plant or change is neither made nor linked (the walk would ignore it)."""
    if reason := untrusted_reason(directory):
        raise ValidationFailed(
            f"Pillbox does not trust a .pillbox there: {reason}. Work from a directory only you can write to, or "
            "have it added to PILLBOX_SAFE_DIRECTORIES.",
            directory=str(directory),
        )


def _new_bottle(alias: str, *, name: str, display_name: str, directory: Path, scope: str) -> Bottle:
    with transaction.atomic(using=alias):
        new_id, _ = ids.next_id(Bottle, alias)
        return Bottle.objects.using(alias).create(
            id=new_id, name=name, display_name=display_name, directory=str(directory), scope=scope,
            created_at=timezone.now(),
        )


def bottle_create(*, reach: Reach, name: str, display_name: str, scope: str, nested: bool = False) -> Bottle:
    _check_slug(name)
    if Registration.objects.filter(user=reach.user, name=name).exists():
        raise AlreadyExists(f"You already have a bottle named {name}; pick another name.", name=name)
    quotas.check_bottle_room(user=reach.user)
    if scope == Bottle.SCOPE_GLOBAL:
        directory = Path(settings.PILLBOX_HOME)
        bottle = _new_bottle(GLOBAL, name=name, display_name=display_name, directory=directory, scope=scope)
        register(user=reach.user, bottle=bottle, db_path=None)
        return bottle
    if refusal := _remote_refusal(reach, "create local bottles"):
        raise refusal
    directory = _workdir(reach)
    if directory == Path.home().resolve():
        raise ValidationFailed(
            "A local bottle cannot live in the home directory itself; run from a project directory or use "
            "scope: \"global\".",
            directory=str(directory),
        )
    path = db_file(directory)
    enclosing = reach.current_path
    if enclosing is not None and not nested and enclosing != path.resolve():
        _refuse_nested(reach, enclosing)
    if path.resolve() == global_db_file():
        raise ValidationFailed(
            "That directory holds the global database; use scope: \"global\".", directory=str(directory)
        )
    _refuse_untrusted(directory)
    alias = open_local(path, create=True)
    with transaction.atomic(using=alias):
        existing = Bottle.objects.using(alias).first()
        if existing is not None:
            raise AlreadyExists(
                f"This directory already holds the bottle {existing.name}; use bottle_vinculate to link it.",
                directory=str(directory), bottle_id=ids.short(existing.id),
            )
        new_id, _ = ids.next_id(Bottle, alias)
        bottle = Bottle.objects.using(alias).create(
            id=new_id, name=name, display_name=display_name, directory=str(directory), scope=scope,
            created_at=timezone.now(),
        )
    origin.record(user=reach.user, path=path, alias=alias, origin=OwnedFile.MADE)
    register(user=reach.user, bottle=bottle, db_path=path)
    exclude_from_git(directory, ".pillbox/", also=".pillbox/")
    return bottle


def _refuse_nested(reach: Reach, enclosing: Path) -> None:
    """A bottle inside another bottle's tree is almost always an accident of working in a sub-folder."""
    alias = reach.current
    existing = Bottle.objects.using(alias).order_by("id").first() if schema_ready(alias) else None
    if existing is None:
        return
    project = enclosing.parent.parent
    raise AlreadyExists(
        f"{project} already holds the bottle {existing.name}, and this directory is inside it: use that bottle "
        "(its id or name works as bottle_id), or call bottle_create again with nested: true to make a separate "
        "bottle for this sub-folder on purpose.",
        directory=str(project), bottle_id=ids.short(existing.id), name=existing.name,
    )


def named_directory(raw: str) -> Path:
    """The directory an agent or a person typed; ``~name`` of an unknown user names nothing."""
    try:
        return Path(raw).expanduser()
    except RuntimeError:
        raise DbNotFound(f"There is no .pillbox/pillbox.db in {raw}.", directory=raw) from None


def is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name longer than the file system allows, a path it cannot look at
        return False


def bottle_vinculate(*, reach: Reach, directory: str | None) -> tuple[Bottle, Registration, bool, OwnedFile]:
    """Link an existing local bottle database into the caller's registry; True when newly linked. A database the
    caller's Pillbox did not make here (a clone's, another user's) is adopted: recorded as theirs from now on, with
    the directory its bottle named (pillbox.origin)."""
    if refusal := _remote_refusal(reach, "link directories"):
        raise refusal
    base = _workdir(reach)
    target = (base / named_directory(directory)).resolve() if directory else base
    path = db_file(target)
    global_file = global_db_file()
    if global_file is not None and (path.resolve() == global_file or (target / "pillbox.db").resolve() == global_file):
        raise CircularLink("That directory holds the global database, which is always linked.", directory=str(target))
    if not is_file(path):
        raise DbNotFound(f"There is no .pillbox/pillbox.db in {target}.", directory=str(target))
    # Hook (original Pillbox import): its global file is the user's global memory, never a project.
    if is_global_original(path):
        raise CircularLink("That directory holds the original Pillbox's global database, which becomes your "
                           "global memory by itself.", directory=str(target))
    # Hook (original Pillbox import): open_local brings a project file of the original across.
    if not has_schema(path) and not is_original(path):
        raise NoBottleInDb("That database file holds no bottle.", db_path=str(path))
    _refuse_untrusted(target)
    alias = open_local(path)
    bottle = Bottle.objects.using(alias).order_by("id").first()
    if bottle is None:
        raise NoBottleInDb("That database file holds no bottle.", db_path=str(path))
    clash = Registration.objects.filter(user=reach.user, name=bottle.name).exclude(bottle_id=bottle.id).first()
    if clash is not None:
        raise AlreadyExists(
            f"You already have another bottle named {bottle.name}; bottle names are unique among your bottles, "
            "so unregister that one (in the memory browser) before linking this one.",
            name=bottle.name, bottle_id=ids.short(clash.bottle_id),
        )
    if not Registration.objects.filter(user=reach.user, bottle_id=bottle.id).exists():
        quotas.check_bottle_room(user=reach.user)
    owned = origin.adopt(user=reach.user, path=path, alias=alias, claimed_directory=bottle.directory)
    registration, created = register(user=reach.user, bottle=bottle, db_path=path)
    if not created:
        relink(registration, path)  # a moved project linked again from where it now is
    return bottle, registration, created, owned


def prescription_open(*, reach: Reach, bottle_id: str, title: str, author_name: str, author_email: str) -> Prescription:
    bottle, alias = locate(reach, Bottle, bottle_id, noun="bottle", field="bottle_id", hint="; bottle_list lists yours")
    with transaction.atomic(using=alias):
        quotas.check_prescription_room(alias=alias, bottles=reach.bottles_in(alias))
        new_id, _ = ids.next_id(Prescription, alias)
        return Prescription.objects.using(alias).create(
            id=new_id, bottle=bottle, title=title, author_name=author_name, author_email=author_email,
            started_at=timezone.now(),
        )


def prescription_close(*, reach: Reach, prescription_id: str) -> Prescription:
    prescription, alias = locate(reach, Prescription, prescription_id, noun="prescription")
    if prescription.ended_at is None:
        prescription.ended_at = timezone.now()
        Prescription.objects.using(alias).filter(pk=prescription.pk, ended_at__isnull=True).update(
            ended_at=prescription.ended_at
        )
        prescription.refresh_from_db(using=alias)
    return prescription


def prescription_reopen(*, reach: Reach, prescription_id: str) -> Prescription:
    prescription, alias = locate(reach, Prescription, prescription_id, noun="prescription")
    if prescription.ended_at is not None:
        Prescription.objects.using(alias).filter(pk=prescription.pk).update(ended_at=None)
        prescription.ended_at = None
    return prescription


def prescription_discard(*, reach: Reach, prescription_id: str) -> tuple[Prescription, int | None]:
    """Soft-delete a prescription with all its pills (and close it); returns how many pills went with it, or
    None when it was discarded already (a repeated call changes nothing, as its idempotent hint promises)."""
    prescription, alias = locate(reach, Prescription, prescription_id, noun="prescription", discarded=True)
    if prescription.deleted_at is not None:
        return prescription, None
    now = timezone.now()
    with transaction.atomic(using=alias):
        count = Pill.objects.using(alias).alive().filter(prescription=prescription).update(deleted_at=now)
        # The pills of other sessions that these superseded are the best memory left: back in view.
        (Pill.objects.using(alias).filter(superseded_by__prescription=prescription).exclude(prescription=prescription)
         .update(superseded_by=None))
        Prescription.objects.using(alias).filter(pk=prescription.pk).update(
            deleted_at=now, ended_at=prescription.ended_at or now
        )
    return prescription, count


def _open_prescription(reach: Reach, prescription_id: str) -> tuple[Prescription, str]:
    try:
        prescription, alias = locate(reach, Prescription, prescription_id, noun="prescription",
                                     field="prescription_id")
    except WrongKind:
        raise
    except NotFound:
        raise PrescriptionRequired(
            f"No prescription has the id {prescription_id.strip()}; open one with prescription_open.",
            prescription_id=prescription_id.strip(),
        ) from None
    if prescription.ended_at is not None:
        raise PrescriptionRequired(
            f"The prescription {ids.short(prescription.id)} is closed; {REOPEN_HINT}, or open a new one.",
            prescription_id=ids.short(prescription.id),
        )
    return prescription, alias


def pill_store(*, reach: Reach, prescription_id: str, title: str, content: str, compound: str,
               author_name: str, author_email: str, supersedes: Sequence[str] = ()) -> Pill:
    """``supersedes``: pills of the same bottle the new one replaces (pillbox.superseding)."""
    prescription, alias = _open_prescription(reach, prescription_id)
    now = timezone.now()
    with transaction.atomic(using=alias):
        quotas.check_pill_room(alias=alias, bottles=reach.bottles_in(alias))
        new_id, seq = ids.next_id(Pill, alias)
        pill = Pill.objects.using(alias).create(
            id=new_id, seq=seq, prescription=prescription, compound=compound, title=title, content=content,
            author_name=author_name, author_email=author_email, created_at=now, updated_at=now,
        )
        if supersedes:
            superseding.put(alias, Pill, pill,
                            superseding.check_pills(reach=reach, pill=pill, alias=alias, supersedes=supersedes))
    backfill.row_changed(alias, "pill", pill.id, stored=True)
    return pill


def _pill_in_open_prescription(reach: Reach, pill_id: str) -> tuple[Pill, str]:
    pill, alias = locate(reach, Pill, pill_id, noun="pill")
    prescription = Prescription.objects.using(alias).get(pk=pill.prescription_id)
    if prescription.ended_at is not None:
        raise PrescriptionRequired(
            f"The pill's prescription {ids.short(prescription.id)} is closed; {REOPEN_HINT} before changing it.",
            prescription_id=ids.short(prescription.id),
        )
    return pill, alias


def pill_revise(*, reach: Reach, pill_id: str, changes: dict[str, str],
                supersedes: Sequence[str] | None = None) -> Pill:
    """``supersedes`` given: the pills this one replaces become exactly those (``[]``: none, bringing back any it
    superseded); None leaves them as they are."""
    pill, alias = _pill_in_open_prescription(reach, pill_id)
    with transaction.atomic(using=alias):
        if supersedes is not None:
            superseding.put(alias, Pill, pill,
                            superseding.check_pills(reach=reach, pill=pill, alias=alias, supersedes=supersedes))
        if changes:
            for name, value in changes.items():
                setattr(pill, name, value)
            pill.updated_at = timezone.now()
            pill.save(using=alias, update_fields=[*changes, "updated_at"])
    if changes:
        backfill.row_changed(alias, "pill", pill.id)
    return pill


def pill_discard(*, reach: Reach, pill_id: str) -> Pill:
    # Discarding twice answers like the first time: the hint says idempotent, and a retried call must not fail.
    pill, _ = locate(reach, Pill, pill_id, noun="pill", discarded=True)
    if pill.deleted_at is not None:
        return pill
    pill, alias = _pill_in_open_prescription(reach, pill_id)
    pill.deleted_at = timezone.now()
    with transaction.atomic(using=alias):
        pill.save(using=alias, update_fields=["deleted_at"])
        superseding.put(alias, Pill, pill, [])  # what it replaced is the best memory left: back in view
    return pill


def capsule_store(*, reach: Reach, title: str, content: str, compound: str, supersedes: Sequence[str] = ()) -> Capsule:
    now = timezone.now()
    with transaction.atomic(using=GLOBAL):
        quotas.check_capsule_room(user=reach.user)
        new_id, seq = ids.next_id(Capsule, GLOBAL)
        capsule = Capsule.objects.create(
            id=new_id, seq=seq, owner=reach.user, compound=compound, title=title, content=content,
            created_at=now, updated_at=now,
        )
        if supersedes:
            superseding.put(GLOBAL, Capsule, capsule,
                            superseding.check_capsules(reach=reach, capsule=capsule, supersedes=supersedes))
    backfill.row_changed(GLOBAL, "capsule", capsule.id, stored=True)
    return capsule


def capsule_find(*, reach: Reach, capsule_id: str) -> Capsule:
    return locate_capsule(reach, capsule_id)


def capsule_revise(*, reach: Reach, capsule_id: str, changes: dict[str, str],
                   supersedes: Sequence[str] | None = None) -> Capsule:
    """``supersedes`` as for ``pill_revise``."""
    capsule = capsule_find(reach=reach, capsule_id=capsule_id)
    with transaction.atomic(using=GLOBAL):
        if supersedes is not None:
            superseding.put(GLOBAL, Capsule, capsule,
                            superseding.check_capsules(reach=reach, capsule=capsule, supersedes=supersedes))
        if changes:
            for name, value in changes.items():
                setattr(capsule, name, value)
            capsule.updated_at = timezone.now()
            capsule.save(update_fields=[*changes, "updated_at"])
    if changes:
        backfill.row_changed(GLOBAL, "capsule", capsule.id)
    return capsule


def capsule_discard(*, reach: Reach, capsule_id: str) -> Capsule:
    capsule = locate_capsule(reach, capsule_id, discarded=True)
    if capsule.deleted_at is not None:  # idempotent: the first discard's answer again
        return capsule
    capsule.deleted_at = timezone.now()
    with transaction.atomic(using=GLOBAL):
        capsule.save(update_fields=["deleted_at"])
        superseding.put(GLOBAL, Capsule, capsule, [])
    return capsule


def count_view(model: type[Model], alias: str, pk: object) -> None:
    """Reads are counted for people (never shown to agents)."""
    model._default_manager.using(alias).filter(pk=pk).update(views=F("views") + 1)
