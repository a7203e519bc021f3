"""The storage of superseding (pillbox.superseding): the set a newer pill or capsule supersedes becomes exactly the
ids given, every rule refuses with a clear error and changes nothing, and the change log notes each mark."""

from __future__ import annotations

import pytest

from pillbox import services, superseding
from pillbox.access import reach_for
from pillbox.exceptions import NotFound, ValidationFailed
from pillbox.global_db import GLOBAL
from pillbox.models import Capsule, Pill
from pillbox.search import changes
from tests.pillbox.search.recall import caller
from tests.pillbox.search.test_search_incremental import AUTHOR, Memory


def marks(*pills: Pill) -> list[str | None]:
    return [None if (value := Pill.objects.get(pk=pill.pk).superseded_by_id) is None else value.hex[:12]
            for pill in pills]


def test_superseding_sets_exactly_the_ids_given_and_undoes(alice):
    memory = Memory(alice, "ops")
    old, older, newer = (memory.store(title, "text") for title in ("Old", "Older", "Newer"))
    pill, outcome = superseding.pill_supersede(reach=memory.reach, pill_id=newer.id.hex,
                                               supersedes=[old.id.hex[:12], older.id.hex, old.id.hex])
    assert pill.pk == newer.pk and sorted(outcome.superseded) == sorted([old.pk, older.pk])
    assert marks(old, older, newer) == [newer.id.hex[:12], newer.id.hex[:12], None]
    _, outcome = superseding.pill_supersede(reach=memory.reach, pill_id=newer.id.hex, supersedes=[older.id.hex])
    assert outcome.restored == [old.pk] and outcome.superseded == []
    assert marks(old, older) == [None, newer.id.hex[:12]]
    superseding.pill_supersede(reach=memory.reach, pill_id=newer.id.hex, supersedes=[])
    assert marks(old, older, newer) == [None, None, None]


def test_superseding_is_noted_in_the_change_log(alice):
    memory = Memory(alice, "ops")
    old, newer = memory.store("Old", "text"), memory.store("Newer", "text")
    start = changes.position(GLOBAL)
    superseding.pill_supersede(reach=memory.reach, pill_id=newer.id.hex, supersedes=[old.id.hex])
    found = changes.since(GLOBAL, start)
    assert found is not None
    assert [(entry.kind, entry.seq) for entry in found[0]] == [("pill", old.seq)]


def test_a_pill_stored_or_revised_supersedes_in_its_own_write(alice):
    memory = Memory(alice, "ops")
    old = memory.store("Old", "text")
    newer = services.pill_store(reach=memory.reach, prescription_id=memory.rx.id.hex, title="New", content="text",
                                compound="ops", supersedes=[old.id.hex], **AUTHOR)
    assert marks(old) == [newer.id.hex[:12]]
    services.pill_revise(reach=memory.reach, pill_id=newer.id.hex, changes={"title": "Newest"})
    assert marks(old) == [newer.id.hex[:12]]  # without supersedes, left as it was
    services.pill_revise(reach=memory.reach, pill_id=newer.id.hex, changes={}, supersedes=[])
    assert marks(old) == [None]


@pytest.mark.parametrize("case", ["unknown", "itself", "other bottle", "cycle", "too short"])
def test_a_refused_supersede_changes_nothing(alice, case):
    memory = Memory(alice, "ops")
    other = Memory(alice, "web")
    old, newer = memory.store("Old", "text"), memory.store("Newer", "text")
    superseding.pill_supersede(reach=memory.reach, pill_id=newer.id.hex, supersedes=[old.id.hex])
    elsewhere = other.store("Elsewhere", "text")
    reach = reach_for(caller(alice.user))
    named = {"unknown": "0" * 12, "itself": newer.id.hex, "other bottle": elsewhere.id.hex, "cycle": newer.id.hex,
             "too short": "abc"}[case]
    writer = old if case == "cycle" else newer
    before = changes.position(GLOBAL)
    with pytest.raises((NotFound, ValidationFailed)) as refused:
        if case == "unknown":  # a store naming one good id and one unknown: the store itself is undone
            services.pill_store(reach=reach, prescription_id=memory.rx.id.hex, title="Extra", content="text",
                                compound="ops", supersedes=[old.id.hex, named], **AUTHOR)
        superseding.pill_supersede(reach=reach, pill_id=writer.id.hex, supersedes=[named])
    assert refused.value.fields.get("supersedes")
    assert marks(old, newer, elsewhere) == [newer.id.hex[:12], None, None]
    assert Pill.objects.filter(title="Extra").count() == 0
    assert changes.since(GLOBAL, before) == ([], before)


def test_another_users_pill_is_not_found(alice, bob):
    mine, theirs = Memory(alice, "ops"), Memory(bob, "ops")
    newer, foreign = mine.store("Newer", "text"), theirs.store("Theirs", "text")
    with pytest.raises(NotFound):
        superseding.pill_supersede(reach=mine.reach, pill_id=newer.id.hex, supersedes=[foreign.id.hex])
    with pytest.raises(NotFound):
        superseding.pill_supersede(reach=mine.reach, pill_id=foreign.id.hex, supersedes=[])
    assert marks(foreign) == [None]


def test_capsules_supersede_their_owners_capsules_only(alice, bob):
    mine, theirs = reach_for(caller(alice.user)), reach_for(caller(bob.user))
    old = services.capsule_store(reach=mine, title="Old", content="text", compound="ops")
    newer = services.capsule_store(reach=mine, title="New", content="text", compound="ops", supersedes=[old.id.hex])
    foreign = services.capsule_store(reach=theirs, title="Theirs", content="text", compound="ops")
    assert Capsule.objects.get(pk=old.pk).superseded_by_id == newer.pk
    with pytest.raises(NotFound):
        services.capsule_revise(reach=mine, capsule_id=newer.id.hex, changes={}, supersedes=[foreign.id.hex])
    assert Capsule.objects.get(pk=old.pk).superseded_by_id == newer.pk
    services.capsule_revise(reach=mine, capsule_id=newer.id.hex, changes={}, supersedes=[])
    assert Capsule.objects.get(pk=old.pk).superseded_by_id is None


def test_restore_puts_back_exactly_what_was_there(alice):
    memory = Memory(alice, "ops")
    a, b, c, keep = (memory.store(title, "text") for title in ("A", "B", "C", "Keep"))
    superseding.pill_supersede(reach=memory.reach, pill_id=c.id.hex, supersedes=[a.id.hex])
    before = {pill.pk: Pill.objects.get(pk=pill.pk).superseded_by_id for pill in (a, b, c)}
    superseding.pill_supersede(reach=memory.reach, pill_id=keep.id.hex, supersedes=[a.id.hex, b.id.hex, c.id.hex])
    superseding.restore(GLOBAL, Pill, before)
    assert marks(a, b, c, keep) == [c.id.hex[:12], None, None, None]

