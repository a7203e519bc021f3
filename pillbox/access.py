"""What a caller can reach: the current database, and every bottle in their registry.

A bottle is reachable by a user only through their own registry entry. Over stdio the file system is the
access control: the local database found from the working directory is registered for the user the first
time it is used. Over HTTP nothing is registered implicitly.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, models, transaction

from config.mcp.tools import Caller
from pillbox import ids, original
from pillbox.databases import GLOBAL, find_local_db, open_local, schema_ready
from pillbox.exceptions import AmbiguousId, IncompatibleDb, NotFound
from pillbox.models import Bottle, Capsule, Pill, Prescription, Registration

logger = logging.getLogger("pillbox")


@dataclass
class Reach:
    user: AbstractBaseUser
    caller: Caller
    current: str  # the alias tools write to by default: the local database, else the global one
    current_path: Path | None
    # alias -> reachable bottle ids in that database; the current database first.
    dbs: dict[str, set[uuid.UUID]] = field(default_factory=dict)
    registrations: list[Registration] = field(default_factory=list)

    @property
    def is_staff(self) -> bool:
        return bool(getattr(self.user, "is_staff", False))

    def bottles_in(self, alias: str) -> set[uuid.UUID]:
        return self.dbs.get(alias, set())

    def all_bottle_ids(self) -> set[uuid.UUID]:
        return set().union(*self.dbs.values()) if self.dbs else set()


def register(*, user: AbstractBaseUser, bottle: Bottle, db_path: Path | None) -> tuple[Registration, bool]:
    try:
        with transaction.atomic(using=GLOBAL):
            return Registration.objects.get_or_create(
                user=user,
                bottle_id=bottle.id,
                defaults={
                    "name": bottle.name,
                    "display_name": bottle.display_name,
                    "scope": bottle.scope,
                    "directory": bottle.directory,
                    "db_path": str(db_path) if db_path else "",
                },
            )
    except IntegrityError:  # another process registered it between our read and write
        return Registration.objects.get(user=user, bottle_id=bottle.id), False


def relink(registration: Registration, path: Path) -> None:
    """Point an unlinked local registration at the file its bottle was found in (the project moved, as the
    original Pillbox's registry entries often have); a registration whose file still exists is left alone."""
    if registration.scope != Bottle.SCOPE_LOCAL or registration.db_path == str(path):
        return
    if registration.db_path and Path(registration.db_path).is_file():
        return
    registration.db_path, registration.directory = str(path), str(path.parent.parent)
    registration.save(update_fields=["db_path", "directory"])


def registration_alias(registration: Registration) -> str | None:
    """The alias of a registered bottle's database, or None when its file is gone (unlinked)."""
    if registration.scope == Bottle.SCOPE_GLOBAL:
        return GLOBAL
    path = Path(registration.db_path)
    if not path.is_file():
        return None
    return open_local(path)


def reach_for(caller: Caller) -> Reach:
    if caller.transport == "stdio":
        # Hook (original Pillbox import): the home's original global file becomes this user's, once.
        original.import_home(caller.user)
    local = find_local_db(caller.workdir)
    current = open_local(local) if local is not None else GLOBAL
    reach = Reach(user=caller.user, caller=caller, current=current, current_path=local)
    reach.dbs[current] = set()
    registrations = list(Registration.objects.filter(user=caller.user).order_by("name", "id"))
    if local is not None and caller.transport == "stdio" and schema_ready(current):
        registrations = _register_found_bottles(caller, current, local, registrations)
    reach.registrations = registrations
    for registration in registrations:
        try:
            alias = registration_alias(registration)
        except IncompatibleDb as exc:  # a newer Pillbox wrote that file: leave it alone, the others still work
            if isinstance(exc, original.ImportFailed):
                original.announce_failure(exc)
            continue
        if alias is not None:
            reach.dbs.setdefault(alias, set()).add(registration.bottle_id)
    return reach


def _register_found_bottles(caller: Caller, alias: str, path: Path,
                            registrations: list[Registration]) -> list[Registration]:
    """Over stdio the file system is the access control: the project's bottle joins the user's registry the
    first time it is used (a read when it already has, so a read-only call never takes the write lock)."""
    known = {registration.bottle_id for registration in registrations}
    names = {registration.name for registration in registrations}
    added = False
    bottles = list(Bottle.objects.using(alias))
    here = {bottle.id for bottle in bottles}
    for registration in registrations:
        if registration.bottle_id in here:
            relink(registration, path)
    for bottle in (bottle for bottle in bottles if bottle.id not in known):
        if bottle.name in names:
            # Names are unique among a user's bottles; bottle_vinculate explains the clash when asked.
            logger.warning("not registering bottle %s of %s: the name is taken", bottle.name, path)
            continue
        registrations.append(register(user=caller.user, bottle=bottle, db_path=path)[0])
        added = True
    if added:
        registrations.sort(key=lambda registration: (registration.name, registration.id))
    return registrations


def _scoped(model: type[models.Model], alias: str, bottles: set[uuid.UUID], *, discarded: bool) -> models.QuerySet:
    """The rows of ``model`` in reachable bottles; discarded ones only when asked (people restore them)."""
    manager = model._default_manager.using(alias)
    if model is Bottle:
        return manager.filter(id__in=bottles)
    if model is Prescription:
        rows = manager.filter(bottle_id__in=bottles)
    elif model is Pill:
        rows = manager.filter(prescription__bottle_id__in=bottles)
    else:
        raise TypeError(model)
    return rows if discarded else rows.filter(deleted_at__isnull=True)


def prefix_range(digits: str) -> tuple[uuid.UUID, uuid.UUID]:
    """Every UUID starting with ``digits`` lies in this range; a range query uses the primary key index."""
    return uuid.UUID(digits.ljust(32, "0")), uuid.UUID(digits.ljust(32, "f"))


def _prefix_matches(queryset: models.QuerySet, digits: str) -> list[models.Model]:
    low, high = prefix_range(digits)
    return list(queryset.filter(id__gte=low, id__lte=high).order_by("id")[:10])


def _ambiguous(raw_id: str, digits: str, matches: list[models.Model], *, noun: str, field: str) -> AmbiguousId:
    return AmbiguousId(
        f"The id prefix {digits} matches several {noun}s; give more digits.",
        **{field: raw_id.strip(), "candidates": ", ".join(ids.distinguishing([m.id for m in matches]))},
    )


def match_prefix(queryset: models.QuerySet, raw_id: str, *, noun: str, field: str = "id") -> models.Model | None:
    """The one row of ``queryset`` whose id starts with ``raw_id``; None if none; AmbiguousId if several."""
    digits = ids.normalise(raw_id, field)
    matches = _prefix_matches(queryset, digits)
    if len(matches) > 1:
        raise _ambiguous(raw_id, digits, matches, noun=noun, field=field)
    return matches[0] if matches else None


def locate(reach: Reach, model: type[models.Model], raw_id: str, *, noun: str, field: str = "id",
           hint: str = "", discarded: bool = False) -> tuple[models.Model, str]:
    """Find a reachable record by id or prefix in the current database and every registered one.

    Ids are only monotonic within one database, so a prefix is checked everywhere: rows made in the same
    minute in two databases share their first digits, and answering the first one found would be a guess.
    """
    digits = ids.normalise(raw_id, field)
    found: list[tuple[models.Model, str]] = []
    for alias, bottles in reach.dbs.items():
        if bottles:
            scoped = _scoped(model, alias, bottles, discarded=discarded)
            found += [(row, alias) for row in _prefix_matches(scoped, digits)]
    if len(found) > 1:
        raise _ambiguous(raw_id, digits, [row for row, _ in found], noun=noun, field=field)
    if not found:
        raise NotFound(f"No {noun} has the id {raw_id.strip()}{hint}.", **{field: raw_id.strip()})
    return found[0]


def locate_capsule(reach: Reach, raw_id: str, *, hint: str = "", discarded: bool = False) -> Capsule:
    """One of the caller's own capsules by id or prefix (discarded ones only when asked: people restore them)."""
    capsules = Capsule.objects.filter(owner=reach.user)
    found = match_prefix(capsules if discarded else capsules.filter(deleted_at__isnull=True), raw_id, noun="capsule")
    if found is None:
        raise NotFound(f"No capsule has the id {raw_id.strip()}{hint}.", id=raw_id.strip())
    return found
