"""/api/pillbox/…: bottles, prescriptions, pills, capsules and search, with the MCP tools' rules and errors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from pillbox.models import Capsule, Pill
from tests.api.conftest import AUTHOR, Api, Memory, browser, make_memory


def short(record) -> str:
    return record.id.hex[:12]


def test_bottles_list_and_detail(alice_api, memory: Memory):
    listed = alice_api.get("/api/pillbox/bottles/")
    assert listed.status == 200
    assert listed.data == {
        "count": 1,
        "results": [
            {
                "id": short(memory.bottle),
                "name": "shop",
                "display_name": "Shop",
                "scope": "global",
                "directory": None,  # a global bottle belongs to no project (and no server path is ever shown)
                "linked": True,
                "prescriptions": 2,
                "pills": 2,
            }
        ],
    }
    detail = alice_api.get(f"/api/pillbox/bottles/{short(memory.bottle)}/").data
    assert detail["name"] == "shop" and detail["prescriptions"] == 2 and detail["directory"] is None
    assert sum(day["pills"] for day in detail["pills_per_day"]) == 2


def test_bottle_create_global_and_local_refused_to_remote_callers(alice_api, transactional_db):
    created = alice_api.post("/api/pillbox/bottles/", {"name": "blog", "display_name": "Blog", "scope": "global"})
    assert created.status == 201 and created.data["scope"] == "global" and created.data["directory"] is None
    local = alice_api.post("/api/pillbox/bottles/", {"name": "site", "display_name": "Site"})
    assert local.status == 400 and local.error == "validation_error" and 'scope: "global"' in local.data["message"]
    taken = alice_api.post("/api/pillbox/bottles/", {"name": "blog", "display_name": "Again", "scope": "global"})
    assert taken.status == 409 and taken.error == "already_exists"
    slug = alice_api.post("/api/pillbox/bottles/", {"name": "My Blog", "display_name": "B", "scope": "global"})
    assert slug.status == 400 and "my-blog" in slug.data["message"]
    unreadable = alice_api.post("/api/pillbox/bottles/", {"name": 3, "display_name": "B", "scope": "moon"})
    assert unreadable.status == 400 and unreadable.error == "invalid_input"
    assert set(unreadable.data["details"]) == {"name", "scope"}


def test_prescriptions_of_a_bottle_open_close_reopen(alice_api, memory: Memory):
    base = f"/api/pillbox/bottles/{short(memory.bottle)}/prescriptions/"
    listed = alice_api.get(base).data
    assert [rx["id"] for rx in listed["results"]] == [short(memory.prescription), short(memory.closed)]
    assert [rx["status"] for rx in listed["results"]] == ["open", "closed"]
    opened = alice_api.post(base, {"title": "Refunds", **AUTHOR})
    assert opened.status == 201 and opened.data["status"] == "open" and opened.data["pills"] == 0
    rx = f"/api/pillbox/prescriptions/{opened.data['id']}/"
    assert alice_api.post(rx + "close/").data["status"] == "closed"
    assert alice_api.post(rx + "close/").data["status"] == "closed"  # idempotent
    assert alice_api.post(rx + "reopen/").data["ended_at"] is None
    assert alice_api.get(base, limit=1).data["count"] == 3
    assert len(alice_api.get(base, limit=1, offset=1).data["results"]) == 1
    missing = alice_api.post(base, {"title": "No author"})
    assert missing.status == 400 and missing.error == "invalid_input"


def test_prescription_discard_and_restore_take_its_pills_along(alice_api, memory: Memory):
    rx = f"/api/pillbox/prescriptions/{short(memory.prescription)}/"
    discarded = alice_api.delete(rx)
    assert discarded.status == 200 and discarded.data["deleted_at"] and discarded.data["status"] == "closed"
    assert alice_api.get(f"/api/pillbox/pills/{short(memory.pill)}/").data["deleted_at"]
    listed = alice_api.get(f"/api/pillbox/bottles/{short(memory.bottle)}/prescriptions/").data
    assert short(memory.prescription) not in [r["id"] for r in listed["results"]]
    everything = alice_api.get(f"/api/pillbox/bottles/{short(memory.bottle)}/prescriptions/", include_discarded="true")
    assert short(memory.prescription) in [r["id"] for r in everything.data["results"]]
    stored = alice_api.post(rx + "pills/", {"title": "t", "content": "c", "compound": "x", **AUTHOR})
    assert stored.status == 404  # a discarded prescription takes no pills
    restored = alice_api.post(rx + "restore/")
    assert restored.data["deleted_at"] is None and restored.data["pills"] == 1


def test_pills_store_read_list(alice_api, memory: Memory):
    rx = f"/api/pillbox/prescriptions/{short(memory.prescription)}/pills/"
    stored = alice_api.post(rx, {"title": "Rate limits", "content": "100/min per key", "compound": "finding", **AUTHOR})
    assert stored.status == 201
    assert stored.data["bottle"] == short(memory.bottle) and stored.data["prescription_status"] == "open"
    assert stored.data["created_at"].endswith("Z") and len(stored.data["created_at"]) == 20
    listed = alice_api.get(rx).data
    assert listed["count"] == 2 and listed["results"][0]["title"] == "Rate limits"
    closed = alice_api.post(
        f"/api/pillbox/prescriptions/{short(memory.closed)}/pills/",
        {"title": "t", "content": "c", "compound": "x", **AUTHOR},
    )
    assert closed.status == 409 and closed.error == "prescription_required"
    assert "prescription_reopen" in closed.data["message"]


def test_pill_store_content_over_the_limit_says_by_how_much(alice_api, memory: Memory):
    answer = alice_api.post(
        f"/api/pillbox/prescriptions/{short(memory.prescription)}/pills/",
        {"title": "Big", "content": "x" * 5003, "compound": "note", **AUTHOR},
    )
    assert answer.status == 400 and answer.error == "validation_error"
    assert answer.data["message"] == "content is 3 characters over the 5000 limit; split it into several pills."


@pytest.mark.parametrize("form", ["short", "uuid", "dashed", "prefix", "upper"])
def test_pill_read_by_any_id_form(alice_api, memory: Memory, form):
    pill_id = {
        "short": short(memory.pill),
        "uuid": memory.pill.id.hex,
        "dashed": str(memory.pill.id),
        "prefix": memory.pill.id.hex[:14],
        "upper": short(memory.pill).upper(),
    }[form]
    answer = alice_api.get(f"/api/pillbox/pills/{pill_id}/")
    assert answer.status == 200 and answer.data["id"] == short(memory.pill)
    assert answer.data["content"] == "chosen: JWT + refresh tokens\ndiscarded: server sessions"


def test_pill_ids_too_short_not_hex_or_ambiguous_are_refused(alice_api, memory: Memory):
    # Ids begin with their creation millisecond: the pills made a moment apart share their first 8 digits.
    ambiguous = alice_api.get(f"/api/pillbox/pills/{memory.pill.id.hex[:8]}/")
    assert ambiguous.status == 400 and ambiguous.error == "ambiguous_id"
    assert short(memory.pill) in ambiguous.data["details"]["candidates"]
    assert alice_api.get("/api/pillbox/pills/019e1d5/").error == "validation_error"
    assert alice_api.get("/api/pillbox/pills/not-an-id/").status == 400
    assert alice_api.get("/api/pillbox/pills/ffffffffffff/").status == 404


def test_pill_revise_and_refused_while_its_prescription_is_closed(alice_api, memory: Memory):
    pill = f"/api/pillbox/pills/{short(memory.pill)}/"
    revised = alice_api.patch(pill, {"title": "Stateless JWT, 15 min", "compound": "decision"})
    assert revised.status == 200 and revised.data["title"] == "Stateless JWT, 15 min"
    assert alice_api.patch(pill, {}).error == "validation_error"
    blank = alice_api.patch(pill, {"title": "   "})
    assert blank.status == 400 and blank.data["details"] == {"title": "must not be blank"}
    trimmed = alice_api.patch(pill, {"content": "y" * 5001})
    assert "trim it" in trimmed.data["message"]
    old = f"/api/pillbox/pills/{short(memory.old_pill)}/"
    refused = alice_api.patch(old, {"title": "Use PostgreSQL"})
    assert refused.status == 409 and refused.error == "prescription_required"
    assert alice_api.post(old + "discard/").status == 409
    alice_api.post(f"/api/pillbox/prescriptions/{short(memory.closed)}/reopen/")
    assert alice_api.patch(old, {"title": "Use PostgreSQL"}).data["title"] == "Use PostgreSQL"


def test_pill_discard_restore_and_purge_by_a_person(alice, alice_api, memory: Memory):
    pill = f"/api/pillbox/pills/{short(memory.pill)}/"
    assert alice_api.post(pill + "discard/").data["deleted_at"]
    assert alice_api.patch(pill, {"title": "x"}).status == 404  # discarded: agents' rules
    listed = alice_api.get(f"/api/pillbox/prescriptions/{short(memory.prescription)}/pills/").data
    assert listed["count"] == 0
    assert alice_api.post(pill + "restore/").data["deleted_at"] is None
    assert alice_api.delete(pill).data["deleted_at"]
    refused = alice_api.post(pill + "purge/")
    assert refused.status == 403 and refused.error == "forbidden"
    assert browser(alice).with_csrf().post(pill + "purge/").status == 204
    assert not Pill.objects.filter(pk=memory.pill.pk).exists()


def test_prescription_purge_by_a_person(alice, memory: Memory):
    person = browser(alice).with_csrf()
    assert person.post(f"/api/pillbox/prescriptions/{short(memory.closed)}/purge/").status == 204
    assert not Pill.objects.filter(pk=memory.old_pill.pk).exists()


def test_capsules_crud_discard_restore_purge(alice, alice_api, memory: Memory):
    stored = alice_api.post("/api/pillbox/capsules/", {"title": "Tabs", "content": "4 spaces", "compound": "style"})
    assert stored.status == 201
    capsule = f"/api/pillbox/capsules/{stored.data['id']}/"
    assert alice_api.get(capsule).data["content"] == "4 spaces"
    assert alice_api.patch(capsule, {"content": "2 spaces"}).data["content"] == "2 spaces"
    assert [c["id"] for c in alice_api.get("/api/pillbox/capsules/", compound="style").data["results"]] == [
        stored.data["id"]
    ]
    assert alice_api.get("/api/pillbox/capsules/").data["count"] == 2
    assert alice_api.delete(capsule).data["deleted_at"]
    assert alice_api.get("/api/pillbox/capsules/").data["count"] == 1
    assert alice_api.get("/api/pillbox/capsules/", include_discarded="true").data["count"] == 2
    assert alice_api.post(capsule + "restore/").data["deleted_at"] is None
    assert alice_api.post(capsule + "discard/").data["deleted_at"]
    assert alice_api.post(capsule + "purge/").status == 403
    assert browser(alice).with_csrf().post(capsule + "purge/").status == 204
    assert alice_api.get(capsule).status == 404
    assert Capsule.objects.filter(owner=alice.user).count() == 1
    bad = alice_api.post("/api/pillbox/capsules/", {"title": "", "content": "c", "compound": "x" * 65})
    assert bad.status == 400 and set(bad.data["details"]) == {"title", "compound"}


def test_search_pills_and_capsules_with_a_typo(alice_api, memory: Memory):
    found = alice_api.get("/api/pillbox/search/", q="refrsh tokens")
    assert found.status == 200 and found.data["used_fuzzy"] is True
    assert found.data["results"][0]["id"] == short(memory.pill)
    assert found.data["results"][0]["bottle"] == short(memory.bottle)
    assert found.data["results"][0]["bottle_name"] == "shop"
    exact = alice_api.get("/api/pillbox/search/", q="sqlite")
    assert exact.data["used_fuzzy"] is False and exact.data["total"] == 1
    capsules = alice_api.get("/api/pillbox/search/", q="commits", kind="capsules").data
    assert capsules["results"][0]["id"] == short(memory.capsule) and capsules["results"][0]["bottle"] is None
    by_compound = alice_api.get("/api/pillbox/search/", compound="decision").data
    assert by_compound["total"] == 2
    one_bottle = alice_api.get("/api/pillbox/search/", q="jwt", bottle=short(memory.bottle)).data
    assert one_bottle["total"] == 1
    assert alice_api.get("/api/pillbox/search/").error == "validation_error"
    assert alice_api.get("/api/pillbox/search/", q="x", kind="moon").error == "invalid_input"
    assert alice_api.get("/api/pillbox/search/", q="x", limit="many").status == 400


def test_search_keeps_to_a_time_window(alice_api, memory: Memory):
    Pill.objects.filter(pk=memory.old_pill.pk).update(created_at=timezone.now() - timedelta(days=40))
    recent = alice_api.get("/api/pillbox/search/", compound="decision", since="30d").data
    assert recent["total"] == 1 and recent["results"][0]["id"] == short(memory.pill)
    assert recent["time"].startswith("since ") and recent["time"].endswith(" UTC (from since)")
    older = alice_api.get("/api/pillbox/search/", q="sqlite last week", until="30d").data
    assert [row["id"] for row in older["results"]] == [short(memory.old_pill)]
    assert older["time"].endswith('(from until; "last week" in the query not applied)')
    listed = alice_api.get("/api/pillbox/search/", q="what did we do in the last 30 days?").data
    assert short(memory.old_pill) not in [row["id"] for row in listed["results"]] and listed["total"] == 1
    assert alice_api.get("/api/pillbox/search/", q="jwt").data["time"] is None
    refused = alice_api.get("/api/pillbox/search/", q="jwt", since="1d", until="7d")
    assert refused.status == 400 and refused.error == "validation_error"


# ---------------------------------------------------------------- isolation


def _urls(memory: Memory, id_of) -> list[tuple[str, str, dict | None]]:
    bottle, rx, pill, capsule = (
        id_of(memory.bottle),
        id_of(memory.prescription),
        id_of(memory.pill),
        id_of(memory.capsule),
    )
    return [
        ("get", f"/api/pillbox/bottles/{bottle}/", None),
        ("get", f"/api/pillbox/bottles/{bottle}/prescriptions/", None),
        ("post", f"/api/pillbox/bottles/{bottle}/prescriptions/", {"title": "Mine now", **AUTHOR}),
        ("get", f"/api/pillbox/prescriptions/{rx}/", None),
        ("delete", f"/api/pillbox/prescriptions/{rx}/", None),
        ("get", f"/api/pillbox/prescriptions/{rx}/pills/", None),
        ("post", f"/api/pillbox/prescriptions/{rx}/pills/", {"title": "t", "content": "c", "compound": "x", **AUTHOR}),
        *(
            ("post", f"/api/pillbox/prescriptions/{rx}/{verb}/", None)
            for verb in ("close", "reopen", "discard", "restore")
        ),
        ("get", f"/api/pillbox/pills/{pill}/", None),
        ("patch", f"/api/pillbox/pills/{pill}/", {"title": "Mine now"}),
        ("delete", f"/api/pillbox/pills/{pill}/", None),
        *(("post", f"/api/pillbox/pills/{pill}/{verb}/", None) for verb in ("discard", "restore")),
        ("get", f"/api/pillbox/capsules/{capsule}/", None),
        ("patch", f"/api/pillbox/capsules/{capsule}/", {"title": "Mine now"}),
        ("delete", f"/api/pillbox/capsules/{capsule}/", None),
        *(("post", f"/api/pillbox/capsules/{capsule}/{verb}/", None) for verb in ("discard", "restore")),
    ]


ID_FORMS = {"full": lambda record: str(record.id), "short": short, "prefix": lambda record: record.id.hex[:8]}


@pytest.mark.parametrize("form", list(ID_FORMS))
def test_another_users_records_are_not_found_by_any_id_form(bob_api, memory: Memory, form):
    for method, url, body in _urls(memory, ID_FORMS[form]):
        answer = bob_api.call(method, url, body)
        assert answer.status == 404 and answer.error == "not_found", (method, url, answer.data)
    # …and nothing changed for Alice.
    assert Pill.objects.get(pk=memory.pill.pk).title == "Stateless JWT"
    assert Pill.objects.get(pk=memory.pill.pk).deleted_at is None


def test_another_users_records_cannot_be_purged_by_them(bob, memory: Memory):
    person = browser(bob).with_csrf()
    for url in (
        f"/api/pillbox/pills/{short(memory.pill)}/purge/",
        f"/api/pillbox/capsules/{short(memory.capsule)}/purge/",
        f"/api/pillbox/prescriptions/{short(memory.prescription)}/purge/",
    ):
        assert person.post(url).status == 404
    assert Pill.objects.filter(pk=memory.pill.pk).exists()


def test_another_users_lists_and_search_show_nothing(bob_api, bob, memory: Memory):
    make_memory(bob, "bobs")
    assert [b["name"] for b in bob_api.get("/api/pillbox/bottles/").data["results"]] == ["bobs"]
    assert short(memory.capsule) not in [c["id"] for c in bob_api.get("/api/pillbox/capsules/").data["results"]]
    assert short(memory.pill) not in [h["id"] for h in bob_api.get("/api/pillbox/search/", q="jwt").data["results"]]
    assert bob_api.get("/api/pillbox/search/", q="jwt", bottle=short(memory.bottle)).status == 404


def test_discarded_records_stay_out_of_lists_and_search(alice_api, memory: Memory):
    alice_api.delete(f"/api/pillbox/pills/{short(memory.pill)}/")
    alice_api.delete(f"/api/pillbox/capsules/{short(memory.capsule)}/")
    assert alice_api.get("/api/pillbox/search/", q="jwt").data["total"] == 0
    assert alice_api.get("/api/pillbox/search/", q="commits", kind="capsules").data["total"] == 0
    assert alice_api.get("/api/pillbox/capsules/").data["count"] == 0
    assert alice_api.get(f"/api/pillbox/prescriptions/{short(memory.prescription)}/pills/").data["count"] == 0


@pytest.mark.parametrize(
    "url",
    ["/api/pillbox/bottles/", "/api/pillbox/capsules/", "/api/pillbox/search/?q=x", "/api/pillbox/pills/019e1d521a89/"],
)
def test_pillbox_anonymous_is_401_with_a_challenge(url, transactional_db):
    answer = Api().get(url)
    assert answer.status == 401 and answer.headers["WWW-Authenticate"] == 'Bearer realm="api"'
