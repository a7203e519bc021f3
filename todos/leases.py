"""Claims as leases: who holds a todo, until when, and the token that proves it.

A claim answers its holder a lease token, shown once (only its SHA-256 is kept). Renewing, releasing and writing as
the holder present it; anyone else's write of a held todo is refused (``Claimed``), naming the holder and the end of
the lease but never the token, unless it says ``force`` (the claim then ends and the todo tells whose it was). A
person (the /list page, the admin) is not an agent: ``holder=None`` acts whoever holds the todo.

Claims do not take the owner's lock: one conditional UPDATE decides, so among concurrent claimers exactly one wins
on either database (PostgreSQL re-checks the condition against the row a concurrent winner just committed, SQLite
runs one writing transaction at a time). A claim does not stamp updatedAt: it is not an edit of the todo.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q

from todos import rules
from todos.exceptions import Claimed, NotClaimable, NotFound, TodoError, ValidationFailed
from todos.models import Todo, TodoQuerySet
from todos.planning import TodoFilter
from todos.selectors import NO_FILTER, todo_next
from todos.timestamps import clock, format_instant

TOKEN_PREFIX = "lease_"
CLAIM_ATTEMPTS = 3
# claim_next tries the free todos in order; each one it loses went to another claimer, so a few rounds of a
# fresh list always end unless claimers keep arriving faster than one call can read.
CLAIM_NEXT_CANDIDATES = 16
CLAIM_NEXT_ROUNDS = 8
CLAIM_COLUMNS = ["claimed_by", "claimed_until", "claim_token_hash"]

CLAIM_HINT = (
    "work on another todo (claim_next takes the next free one), or claim it after then (the holder can release "
    "it sooner; a claim of yours renews with the leaseToken it answered)"
)
RELEASE_HINT = "only its holder releases it, with the leaseToken its claim answered (the user can on the /list page)"
WRITE_HINT = (
    "only its holder changes it, with the leaseToken its claim answered: work on another todo, or pass force: true "
    "to end that claim and go ahead"
)


@dataclass(frozen=True)
class Holder:
    """An agent writing a todo someone may hold: the lease token it presents (if any), and whether it ends another
    agent's claim to go ahead (``force``)."""

    token: str | None = None
    force: bool = False


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def holds(todo: Todo, token: str | None) -> bool:
    return bool(token and todo.claim_token_hash) and hmac.compare_digest(todo.claim_token_hash, token_hash(token or ""))


def end_claim(todo: Todo) -> list[str]:
    """Clear the claim on ``todo`` (unsaved); the columns to save."""
    todo.claimed_by, todo.claimed_until, todo.claim_token_hash = "", None, ""
    return list(CLAIM_COLUMNS)


def _refused(todo: Todo, hint: str) -> Claimed:
    return Claimed(todo.key, todo.claimed_by, format_instant(todo.claimed_until) or "", hint=hint)


def check_write(todo: Todo, holder: Holder | None, now: datetime) -> list[str]:
    """Before ``holder`` writes ``todo`` (locked): refuse it while someone else's claim runs, or with ``force`` end
    that claim (noted in ``todo.ended_claim``). The claim columns to save with the write (none when it stays)."""
    todo.ended_claim = None
    if holder is None or not todo.claim_live(now) or holds(todo, holder.token):
        return []
    if not holder.force:
        raise _refused(todo, WRITE_HINT)
    assert todo.claimed_until is not None
    todo.ended_claim = (todo.claimed_by, todo.claimed_until)
    return end_claim(todo)


def _claimable(owner: User) -> TodoQuerySet:
    return Todo.objects.owned_by(owner).alive().filter(completed_at__isnull=True)


def _free(now: datetime) -> Q:
    return Q(claimed_until__isnull=True) | Q(claimed_until__lte=now)


def _claim_problems(by: str, minutes: int) -> None:
    problems = [problem for problem in (rules.claimer_problem(by), rules.minutes_problem(minutes)) if problem]
    if problems:
        raise ValidationFailed(problems)


def _claim_refusal(todo: Todo | None, key: str, now: datetime) -> TodoError | None:
    """Why ``todo`` cannot be claimed at ``now``, or None when it can after all (its claim ended in between)."""
    if todo is None:
        return NotFound()
    if todo.completed_at is not None:
        return NotClaimable(f"Todo {key} is completed; reopen it before claiming it")
    if todo.claim_live(now):
        return _refused(todo, CLAIM_HINT)
    return None


def _take(rows: TodoQuerySet, *, by: str, until: datetime) -> str | None:
    """Claim the one row of ``rows`` for ``by`` with a new token; the token, or None when the condition failed."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(24)
    if rows.update(claimed_by=by, claimed_until=until, claim_token_hash=token_hash(token)):
        return token
    return None


def _claimed(owner: User, pk: int, token: str | None) -> Todo:
    todo = Todo.objects.owned_by(owner).get(pk=pk)
    todo.lease_token = token
    return todo


def todo_claim(
    *, owner: User, key: str, by: str, minutes: int = rules.CLAIM_MINUTES, token: str | None = None
) -> Todo:
    """Claim a pending todo for ``by`` for ``minutes`` from now (a new lease: ``lease_token`` is set), or renew the
    claim ``token`` proves (the same lease, the same token: ``lease_token`` is None). Refused (``Claimed``, naming
    the holder and the end of their lease) while anyone else's claim runs, whatever ``by`` says."""
    _claim_problems(by, minutes)
    for _ in range(CLAIM_ATTEMPTS):
        with transaction.atomic():
            now = clock.now()
            until = now + timedelta(minutes=minutes)
            rows = _claimable(owner).filter(key=key)
            if token and rows.filter(claim_token_hash=token_hash(token)).update(claimed_by=by, claimed_until=until):
                return _claimed(owner, rows.get().pk, None)
            if (fresh := _take(rows.filter(_free(now)), by=by, until=until)) is not None:
                return _claimed(owner, rows.get().pk, fresh)
            refusal = _claim_refusal(Todo.objects.owned_by(owner).alive().filter(key=key).first(), key, now)
            if refusal is not None:
                raise refusal
        # On PostgreSQL the holder may have released it between the two statements: the claim is tried again.
    raise TodoError(f"Todo {key} changed hands while it was being claimed; claim it again")


def todo_claim_next(
    *, owner: User, by: str, minutes: int = rules.CLAIM_MINUTES, filters: TodoFilter = NO_FILTER
) -> Todo | None:
    """Claim for ``by`` the todo next_todos puts first among those nobody holds (within ``filters``), or None when
    there is none. A todo lost to a concurrent claimer is skipped for the next one, so two calls at once never
    get the same todo and neither passes over one that is still free."""
    _claim_problems(by, minutes)
    for _ in range(CLAIM_NEXT_ROUNDS):
        candidates = todo_next(owner=owner, limit=CLAIM_NEXT_CANDIDATES, filters=filters)
        if not candidates:
            return None
        for candidate in candidates:
            with transaction.atomic():
                now = clock.now()
                rows = _claimable(owner).filter(_free(now), pk=candidate.pk)
                token = _take(rows, by=by, until=now + timedelta(minutes=minutes))
            if token is not None:
                return _claimed(owner, candidate.pk, token)
    raise TodoError("Other agents claimed every free todo this call tried; call claim_next again")


def todo_release(*, owner: User, key: str, holder: Holder | None) -> Todo:
    """End the claim on the todo: an agent only its own (its token) or one that has run out; a person
    (``holder=None``, the /list page) anyone's. A todo nobody holds is returned as it is."""
    with transaction.atomic():
        todo = Todo.objects.owned_by(owner).alive().select_for_update().filter(key=key).first()
        if todo is None:
            raise NotFound()
        if not todo.claimed_by and not todo.claim_token_hash:
            return todo
        if holder is not None and todo.claim_live(clock.now()) and not holds(todo, holder.token):
            raise _refused(todo, RELEASE_HINT)
        todo.save(update_fields=end_claim(todo))
    return todo
