"""What a caller can reach: the current database, and every bottle in their registry.

A bottle is reachable by a user only through their own registry entry. Over stdio the file system is the
access control: the local database found from the working directory is registered for the user the first
time it is used. Over HTTP nothing is registered implicitly.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.db import IntegrityError, models, transaction

from base.lru import BoundedLru
from mcp_bridge.tools import Caller
from pillbox import ids
from pillbox.databases import change_marker, find_local_db, open_local, schema_ready
from pillbox.exceptions import AmbiguousId, IncompatibleDb, NotFound, ValidationFailed, WrongKind
from pillbox.global_db import GLOBAL
from pillbox.models import Bottle, Capsule, OwnedFile, Pill, Prescription, Registration
from pillbox.origin import Foreign, Ledger, mark
from pillbox.original.files import ImportFailed
from pillbox.original.home import import_home
from pillbox.original.news import announce_failure

logger = logging.getLogger("pillbox")

# A record found by id: what comes back is of the model asked for.
Record = TypeVar("Record", bound=Bottle | Prescription | Pill | Capsule)


@dataclass
class Reach:
    user: User
    caller: Caller
    current: str  # the alias tools write to by default: the local database, else the global one
    current_path: Path | None
    # alias -> reachable bottle ids in that database; the current database first.
    dbs: dict[str, set[uuid.UUID]] = field(default_factory=dict)
    registrations: list[Registration] = field(default_factory=list)
    # The local database found from the working directory when this Pillbox cannot read it: the global tools
    # work without it, and a record not found elsewhere is answered with this error (it may be in that file).
    unreadable: IncompatibleDb | None = None
    # The local database found from the working directory when it is not the user's own (pillbox.origin): it is
    # neither read nor registered, and the session-start hook says only that it is there.
    foreign: Foreign | None = None
    # The user's record of the working directory's database: whether it was made here or adopted.
    owned: OwnedFile | None = None

    @property
    def is_staff(self) -> bool:
        return bool(getattr(self.user, "is_staff", False))

    @property
    def hide_paths(self) -> bool:
        return hides_server_paths(self.caller)

    def bottles_in(self, alias: str) -> set[uuid.UUID]:
        return self.dbs.get(alias, set())

    def all_bottle_ids(self) -> set[uuid.UUID]:
        return set().union(*self.dbs.values()) if self.dbs else set()


def hides_server_paths(caller: Caller) -> bool:
    """Server paths (the data directory, bottle directories) are for the machine's own users and for staff; a
    remote non-staff agent is never shown where the server keeps anything."""
    return caller.transport != "stdio" and not getattr(caller.user, "is_staff", False)


def register(*, user: User, bottle: Bottle, db_path: Path | None) -> tuple[Registration, bool]:
    # Where the file really is, not the directory a copied or crafted bottle row claims.
    directory = str(db_path.resolve().parent.parent) if db_path else bottle.directory
    try:
        with transaction.atomic(using=GLOBAL):
            return Registration.objects.get_or_create(
                user=user,
                bottle_id=bottle.id,
                defaults={
                    "name": bottle.name,
                    "display_name": bottle.display_name,
                    "scope": bottle.scope,
                    "directory": directory,
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


def registration_alias(registration: Registration, ledger: Ledger | None = None) -> str | None:
    """The alias of a registered bottle's database, or None when its file is gone (unlinked) or is not the user's
    own (``ledger``: a file of a clone, a copy, a stranger's put where theirs was: pillbox.origin)."""
    if registration.scope == Bottle.SCOPE_GLOBAL:
        return GLOBAL
    path = Path(registration.db_path)
    if not path.is_file():
        return None
    record = ledger.owned(path) if ledger is not None else None
    if ledger is not None and record is None:
        return None
    alias = open_local(path)
    if record is not None:
        mark(record, alias)
    return alias


def reach_for(caller: Caller) -> Reach:
    if caller.transport == "stdio":
        # Hook (original Pillbox import): the home's original global file becomes this user's, once.
        import_home(caller.user)
    local = find_local_db(caller.workdir)
    current, unreadable, foreign, owned = GLOBAL, None, None, None
    # The user's records of their files, read as the registry is (kept until the global database changes).
    ledger = Ledger(caller.user, _read(OwnedFile, GLOBAL, caller.user.pk,
                                       lambda: OwnedFile.objects.using(GLOBAL).filter(user=caller.user)))
    if local is not None:
        try:
            owned = ledger.owned(local)
            if owned is None:
                foreign, local = ledger.foreign(local), None
            else:
                current = open_local(local)
                mark(owned, current)
        except IncompatibleDb as exc:
            # A file this Pillbox cannot read must not take capsules, global bottles and bottle_list down with it.
            local, unreadable = None, exc
    reach = Reach(user=caller.user, caller=caller, current=current, current_path=local, unreadable=unreadable,
                  foreign=foreign, owned=owned)
    reach.dbs[current] = set()
    registrations = _read(Registration, GLOBAL, caller.user.pk,
                          lambda: Registration.objects.filter(user=caller.user).order_by("name", "id"))
    if local is not None and caller.transport == "stdio" and schema_ready(current):
        registrations = _register_found_bottles(caller, current, local, registrations)
    reach.registrations = registrations
    for registration in registrations:
        try:
            alias = current if local is not None and registration.db_path == str(local) else \
                registration_alias(registration, ledger)
        except IncompatibleDb as exc:  # a newer Pillbox wrote that file: leave it alone, the others still work
            if isinstance(exc, ImportFailed):
                announce_failure(exc)
            continue
        if alias is not None:
            reach.dbs.setdefault(alias, set()).add(registration.bottle_id)
    return reach


# Rows every tool call reads (the caller's registry, the bottles of the project's file), kept per database and
# key until the database changes (``change_marker``: SQLite only). Each call gets model instances of its own.
_rows: BoundedLru[tuple[str, str, object], tuple[object, list[tuple[Any, ...]]]] = BoundedLru(
    max_items=4096, max_bytes=32 * 1024 * 1024)
Row = TypeVar("Row", Registration, Bottle, OwnedFile)


def _read(model: type[Row], alias: str, key: object, query: Callable[[], models.QuerySet[Row]]) -> list[Row]:
    fields = [field.attname for field in model._meta.concrete_fields]
    marker = change_marker(alias)
    entry = (model._meta.label, alias, key)
    cached = _rows.get(entry) if marker is not None else None
    if cached is not None and cached[0] == marker:
        rows = cached[1]
    else:
        rows = [tuple(row) for row in query().values_list(*fields)]
        if marker is not None:
            _rows.put(entry, (marker, rows), size=sum(len(repr(row)) for row in rows) + 64)
    return [model.from_db(alias, fields, row) for row in rows]


def _register_found_bottles(caller: Caller, alias: str, path: Path,
                            registrations: list[Registration]) -> list[Registration]:
    """Over stdio the file system is the access control: the project's bottle joins the user's registry the
    first time it is used (a read when it already has, so a read-only call never takes the write lock)."""
    known = {registration.bottle_id for registration in registrations}
    names = {registration.name for registration in registrations}
    added = False
    bottles = _read(Bottle, alias, None, lambda: Bottle.objects.using(alias).all())
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


def _scoped(model: type[Record], alias: str, bottles: set[uuid.UUID], *, discarded: bool) -> models.QuerySet[Record]:
    """The rows of ``model`` in reachable bottles; discarded ones only when asked (people restore them)."""
    # Any: which lookups apply depends on the model, which the branches below tell apart.
    manager: models.QuerySet[Any] = model._default_manager.using(alias)
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


def _prefix_matches(queryset: models.QuerySet[Record], digits: str) -> list[Record]:
    low, high = prefix_range(digits)
    return list(queryset.filter(id__gte=low, id__lte=high).order_by("id")[:10])


def _ambiguous(
    raw_id: str, digits: str, matches: Sequence[Bottle | Prescription | Pill | Capsule], *, noun: str, field: str
) -> AmbiguousId:
    return AmbiguousId(
        f"The id prefix {digits} matches several {noun}s; give more digits.",
        **{field: raw_id.strip(), "candidates": ", ".join(ids.distinguishing([m.id for m in matches]))},
    )


def match_prefix(queryset: models.QuerySet[Record], raw_id: str, *, noun: str, field: str = "id") -> Record | None:
    """The one row of ``queryset`` whose id starts with ``raw_id``; None if none; AmbiguousId if several."""
    digits = ids.normalise(raw_id, field)
    matches = _prefix_matches(queryset, digits)
    if len(matches) > 1:
        raise _ambiguous(raw_id, digits, matches, noun=noun, field=field)
    return matches[0] if matches else None


def locate(reach: Reach, model: type[Record], raw_id: str, *, noun: str, field: str = "id",
           hint: str = "", discarded: bool = False) -> tuple[Record, str]:
    """Find a reachable record by id or prefix in the current database and every registered one.

    Ids are only monotonic within one database, so a prefix is checked everywhere: rows made in the same
    minute in two databases share their first digits, and answering the first one found would be a guess.
    """
    if model is Bottle and (named := _bottle_named(reach, raw_id, field)) is not None:
        return named  # type: ignore[return-value]  # model is Bottle, so Record is Bottle (mypy cannot narrow it)
    try:
        digits = ids.normalise(raw_id, field)
    except ValidationFailed:
        if model is Bottle:  # a name that is no bottle's: say both readings failed
            raise NotFound(f"No bottle has the name or id {raw_id.strip()[:80]}{hint}.",
                           **{field: raw_id.strip()[:80]}) from None
        raise
    found: list[tuple[Record, str]] = []
    for alias, bottles in reach.dbs.items():
        if bottles:
            scoped = _scoped(model, alias, bottles, discarded=discarded)
            found += [(row, alias) for row in _prefix_matches(scoped, digits)]
    if len(found) > 1:
        raise _ambiguous(raw_id, digits, [row for row, _ in found], noun=noun, field=field)
    if not found:
        if other := _kind_of(reach, model, digits):
            kind, reader = other
            raise WrongKind(f"{raw_id.strip()} is the id of a {kind}, not of a {noun}; {reader} reads it.",
                            **{field: raw_id.strip(), "kind": kind})
        if reach.unreadable is not None:
            raise reach.unreadable
        raise NotFound(f"No {noun} has the id {raw_id.strip()}{hint}{untrusted_note(reach)}.",
                       **{field: raw_id.strip()})
    return found[0]


def untrusted_note(reach: Reach) -> str:
    if reach.foreign is None:
        return ""
    return ("; the working directory's memory was not looked in: your Pillbox did not make it here and you have not "
            "adopted it (bottle_vinculate adopts it, once the person you work for has looked at it)")


# Which tool reads each kind of record, for an agent that passed one kind's id where another was expected.
_READERS: dict[type[Bottle | Prescription | Pill], tuple[str, str]] = {
    Bottle: ("bottle", "bottle_context"),
    Prescription: ("prescription", "prescription_read (or prescription_context)"),
    Pill: ("pill", "pill_read"),
}


def _kind_of(reach: Reach, expected: type[models.Model], digits: str) -> tuple[str, str] | None:
    """The kind of another reachable record whose id starts with ``digits``, if any (only the caller's own)."""
    for model, reader in _READERS.items():
        if model is expected:
            continue
        for alias, bottles in reach.dbs.items():
            if bottles and _prefix_matches(_scoped(model, alias, bottles, discarded=False), digits):
                return reader
    low, high = prefix_range(digits)
    capsules = Capsule.objects.filter(owner=reach.user, deleted_at__isnull=True, id__gte=low, id__lte=high)
    if expected is not Capsule and capsules.exists():
        return ("capsule", "capsule_read")
    return None


def _bottle_named(reach: Reach, raw: str, field: str) -> tuple[Bottle, str] | None:
    """A bottle given by its name (slug) rather than its id: names are unique among one user's bottles."""
    name = raw.strip()
    registration = next((entry for entry in reach.registrations if entry.name == name), None)
    if registration is None:
        return None
    # Only a database this call may read (the user's own: reach_for judged each one).
    alias = next((alias for alias, bottles in reach.dbs.items() if registration.bottle_id in bottles), None)
    bottle = Bottle.objects.using(alias).filter(pk=registration.bottle_id).first() if alias else None
    if alias is None or bottle is None:
        why = (f"is unlinked: its database is no longer at {registration.db_path}" if not is_file(registration.db_path)
               else "is not read: its database is not one your Pillbox made here or you adopted, or it was refused")
        raise NotFound(f"The bottle {name} {why}.", **{field: name})
    return bottle, alias


def is_file(path: str) -> bool:
    try:
        return bool(path) and Path(path).is_file()
    except OSError:
        return False


def locate_capsule(reach: Reach, raw_id: str, *, hint: str = "", discarded: bool = False) -> Capsule:
    """One of the caller's own capsules by id or prefix (discarded ones only when asked: people restore them)."""
    capsules = Capsule.objects.filter(owner=reach.user)
    found = match_prefix(capsules if discarded else capsules.filter(deleted_at__isnull=True), raw_id, noun="capsule")
    if found is None:
        if other := _kind_of(reach, Capsule, ids.normalise(raw_id)):
            kind, reader = other
            raise WrongKind(f"{raw_id.strip()} is the id of a {kind}, not of a capsule; {reader} reads it.",
                            id=raw_id.strip(), kind=kind)
        raise NotFound(f"No capsule has the id {raw_id.strip()}{hint}.", id=raw_id.strip())
    return found
