"""/api/pillbox/bottles/{id}/duplicates/, /api/pillbox/tidies/ and their undo: the tidy-up over REST, with the
tools' rules and errors; another user's plan, tidy and bottle are not found."""

from __future__ import annotations

from pillbox import services
from pillbox.models import Pill
from tests.api.conftest import AUTHOR, Memory, reach_of


def duplicate(person, memory: Memory) -> Pill:
    """A copy of the memory's pill (the same text, other case and punctuation), stored after it."""
    return services.pill_store(reach=reach_of(person), prescription_id=memory.prescription.id.hex,
                               title="stateless jwt.", content="Chosen: JWT + refresh tokens.\nDiscarded: server "
                                                                "sessions.", compound="decision", **AUTHOR)


def test_rest_plan_apply_and_undo(alice, alice_api, bob_api, memory: Memory):
    copy = duplicate(alice, memory)
    bottle = memory.bottle.id.hex[:12]
    plan = alice_api.get(f"/api/pillbox/bottles/{bottle}/duplicates/")
    assert plan.status == 200 and plan.data["looked_at"] == 3 and plan.data["by_meaning"] is False
    [group] = plan.data["groups"]
    assert group["keeper"]["id"] == copy.id.hex[:12] and group["keeper"]["why"] == "the newest"
    assert [other["id"] for other in group["others"]] == [memory.pill.id.hex[:12]]
    plan_id = plan.data["plan_id"]

    assert bob_api.get(f"/api/pillbox/bottles/{bottle}/duplicates/").status == 404
    assert bob_api.post("/api/pillbox/tidies/", {"plan_id": plan_id}).status == 404
    wrong = alice_api.post("/api/pillbox/tidies/", {"plan_id": plan_id, "groups": [2]})
    assert wrong.status == 400 and wrong.error == "validation_error"
    assert alice_api.post("/api/pillbox/tidies/", {"plan_id": plan_id, "extra": 1}).status == 400
    assert Pill.objects.get(pk=memory.pill.id).superseded_by_id is None

    tidy = alice_api.post("/api/pillbox/tidies/", {"plan_id": plan_id})
    assert tidy.status == 201 and tidy.data["superseded"] == [memory.pill.id.hex[:12]]
    assert tidy.data["plan_id"] == plan_id and tidy.data["groups"] == [1] and tidy.data["undone_at"] is None
    assert Pill.objects.get(pk=memory.pill.id).superseded_by_id == copy.id
    assert bob_api.post(f"/api/pillbox/tidies/{tidy.data['id']}/undo/").status == 404

    undone = alice_api.post(f"/api/pillbox/tidies/{tidy.data['id']}/undo/")
    assert undone.status == 200 and undone.data["undone_at"] is not None
    assert Pill.objects.get(pk=memory.pill.id).superseded_by_id is None
    again = alice_api.post(f"/api/pillbox/tidies/{tidy.data['id']}/undo/")
    assert again.status == 400 and "undone already" in again.data["message"]


def test_rest_plan_of_a_tidy_bottle_has_no_id(alice_api, memory: Memory):
    plan = alice_api.get(f"/api/pillbox/bottles/{memory.bottle.id.hex[:12]}/duplicates/", by_meaning="false")
    assert plan.status == 200 and plan.data["plan_id"] is None and plan.data["groups"] == []
