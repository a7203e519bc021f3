"""/api/pillbox/…: superseding as the REST API shows it: superseded_by in every pill and capsule, supersedes in the
bodies of store and revise, the superseded ones left out of lists and search unless include_superseded."""

from __future__ import annotations

from pillbox.models import Capsule, Pill
from tests.api.conftest import AUTHOR, Memory, make_memory


def short(record) -> str:
    return record.id.hex[:12]


def listed(answer) -> list[str]:
    assert answer.status == 200, answer.data
    return [row["id"] for row in answer.data["results"]]


def test_a_pill_supersedes_and_brings_back_a_pill_of_a_closed_session(alice_api, memory: Memory):
    old, new = short(memory.old_pill), short(memory.pill)
    closed = f"/api/pillbox/prescriptions/{short(memory.closed)}/pills/"
    assert alice_api.get(f"/api/pillbox/pills/{old}/").data["superseded_by"] is None
    revised = alice_api.patch(f"/api/pillbox/pills/{new}/", {"supersedes": [old]})
    assert revised.status == 200 and revised.data["title"] == "Stateless JWT"
    assert alice_api.get(f"/api/pillbox/pills/{old}/").data["superseded_by"] == new
    assert listed(alice_api.get(closed)) == []
    shown = alice_api.get(closed, include_superseded="true")
    assert listed(shown) == [old] and shown.data["results"][0]["superseded_by"] == new
    assert listed(alice_api.get("/api/pillbox/search/", q="sqlite")) == []
    found = alice_api.get("/api/pillbox/search/", q="sqlite", include_superseded="true")
    assert listed(found) == [old] and found.data["results"][0]["superseded_by"] == new

    assert alice_api.patch(f"/api/pillbox/pills/{new}/", {"supersedes": []}).status == 200
    assert alice_api.get(f"/api/pillbox/pills/{old}/").data["superseded_by"] is None
    assert listed(alice_api.get(closed)) == [old]
    assert listed(alice_api.get("/api/pillbox/search/", q="sqlite"))[0] == old


def test_a_stored_pill_and_capsule_supersede(alice_api, memory: Memory):
    rx = f"/api/pillbox/prescriptions/{short(memory.prescription)}/pills/"
    stored = alice_api.post(rx, {"title": "Sessions again", "content": "Back to server sessions.",
                                 "compound": "decision", "supersedes": [short(memory.pill)], **AUTHOR})
    assert stored.status == 201 and stored.data["superseded_by"] is None
    assert Pill.objects.get(pk=memory.pill.pk).superseded_by_id.hex[:12] == stored.data["id"]
    assert listed(alice_api.get(rx)) == [stored.data["id"]]

    body = {"title": "Commits say why", "content": "Explain why.", "compound": "convention",
            "supersedes": [short(memory.capsule)]}
    capsule = alice_api.post("/api/pillbox/capsules/", body)
    assert capsule.status == 201
    assert listed(alice_api.get("/api/pillbox/capsules/")) == [capsule.data["id"]]
    both = alice_api.get("/api/pillbox/capsules/", include_superseded="true")
    assert listed(both) == [capsule.data["id"], short(memory.capsule)]
    assert both.data["results"][1]["superseded_by"] == capsule.data["id"]
    assert alice_api.patch(f"/api/pillbox/capsules/{capsule.data['id']}/", {"supersedes": []}).status == 200
    assert Capsule.objects.get(pk=memory.capsule.pk).superseded_by_id is None


def test_bad_supersedes_are_refused_and_change_nothing(alice_api, bob_api, memory: Memory, bob):
    theirs = make_memory(bob, "blog")
    new = f"/api/pillbox/pills/{short(memory.pill)}/"
    unknown = alice_api.patch(new, {"supersedes": ["0123456789ab"]})
    assert unknown.status == 404 and unknown.error == "not_found"
    itself = alice_api.patch(new, {"title": "Changed", "supersedes": [short(memory.pill)]})
    assert itself.status == 400 and "cannot supersede itself" in itself.data["message"]
    foreign = bob_api.patch(f"/api/pillbox/pills/{short(theirs.pill)}/", {"supersedes": [short(memory.old_pill)]})
    assert foreign.status == 404
    capsule = bob_api.patch(f"/api/pillbox/capsules/{short(theirs.capsule)}/", {"supersedes": [short(memory.capsule)]})
    assert capsule.status == 404
    assert alice_api.get(new).data["title"] == "Stateless JWT"
    assert not Pill.objects.filter(superseded_by__isnull=False).exists()
    assert not Capsule.objects.filter(superseded_by__isnull=False).exists()
