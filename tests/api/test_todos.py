"""/api/todos/: the Todos tools' contract over REST — the same JSON, the same sentences, the same isolation."""

from __future__ import annotations

import pytest

from accounts.models import Account
from tests.api.conftest import Api, browser
from todos.formatting import TODO_KEYS

MILK = {"id": "buy-milk", "name": "Buy milk", "description": "2 litres", "priority": "high"}


def test_todos_put_creates_then_replaces_keeping_created_at(alice, alice_api):
    created = alice_api.put("/api/todos/buy-milk/", {"name": "Buy milk", "description": ""})
    assert created.status == 201
    assert tuple(created.data) == TODO_KEYS
    assert created.data["uid"] == alice.uid and created.data["priority"] == "medium"
    replaced = alice_api.put("/api/todos/buy-milk/", {"name": "Buy oat milk", "description": "", "links": ["a", "a"]})
    assert replaced.status == 200
    assert replaced.data["createdAt"] == created.data["createdAt"] < replaced.data["updatedAt"]
    assert replaced.data["name"] == "Buy oat milk" and replaced.data["links"] == ["a"]


def test_todos_post_with_the_id_in_the_body_is_put_todo(alice_api):
    answer = alice_api.post("/api/todos/", {**MILK, "deadlineAt": "2026-11-30"})
    assert answer.status == 201
    assert answer.data["deadlineAt"] == "2026-11-30T00:00:00.000Z"
    assert alice_api.get("/api/todos/buy-milk/").data == answer.data


def test_todos_validation_errors_read_as_the_mcp_tool_sentences(alice_api):
    answer = alice_api.post(
        "/api/todos/",
        {"id": "x y", "name": "", "description": "", "priority": "urgent", "deadlineAt": "soon", "colour": "red"},
    )
    assert answer.status == 400 and answer.error == "validation_error"
    assert answer.data["details"] == {
        "id": "id must not contain whitespace",
        "name": "name must be 1-255 characters, got 0",
        "priority": "priority must be one of low, medium, high",
        "deadlineAt": "deadlineAt must be an ISO 8601 date or date-time such as 2026-11-30 or 2026-11-30T09:15:00Z",
        "colour": "colour is not an argument of this tool (it takes id, name, description, priority, completedAt, "
        "deadlineAt, links, tags, blockedBy)",
    }
    assert answer.data["message"].startswith("id must not contain whitespace; name must be 1-255 characters")


def test_todos_body_must_be_a_json_object(alice_api):
    assert alice_api.post("/api/todos/", ["buy-milk"]).error == "invalid_input"
    broken = alice_api.client.post("/api/todos/", data="{", content_type="application/json")
    assert broken.status_code == 400 and broken.json()["error"] == "invalid_input"


def test_todos_put_refuses_a_body_id_other_than_the_url(alice_api):
    answer = alice_api.put("/api/todos/buy-milk/", {"id": "other", "name": "x", "description": ""})
    assert answer.status == 400 and "id" in answer.data["details"]


def test_todos_list_orders_and_includes_on_request(alice_api):
    alice_api.post("/api/todos/", {**MILK, "id": "low", "priority": "low"})
    alice_api.post("/api/todos/", {**MILK, "id": "high"})
    alice_api.post("/api/todos/", {**MILK, "id": "done"})
    alice_api.post("/api/todos/", {**MILK, "id": "gone"})
    assert alice_api.post("/api/todos/done/complete/").data["completedAt"] is not None
    assert alice_api.delete("/api/todos/gone/").data["deletedAt"] is not None
    assert [t["id"] for t in alice_api.get("/api/todos/").data] == ["high", "low"]
    assert [t["id"] for t in alice_api.get("/api/todos/", includeCompleted="true").data] == ["high", "low", "done"]
    everything = alice_api.get("/api/todos/", includeCompleted="1", includeDeleted="true").data
    assert [t["id"] for t in everything] == ["high", "low", "done", "gone"]


def test_todos_list_refuses_a_flag_that_is_not_a_boolean_and_a_bad_limit(alice_api):
    answer = alice_api.get("/api/todos/", includeCompleted="maybe")
    assert answer.status == 400
    assert answer.data["details"] == {"includeCompleted": "includeCompleted must be a boolean, got a string"}
    assert alice_api.get("/api/todos/", limit=0).data["details"] == {"limit": "limit must be 1-100, got 0"}


def test_todos_actions_complete_reopen_delete_restore(alice_api):
    alice_api.post("/api/todos/", MILK)
    done = alice_api.post("/api/todos/buy-milk/complete/").data
    assert alice_api.post("/api/todos/buy-milk/complete/").data["completedAt"] == done["completedAt"]
    assert alice_api.post("/api/todos/buy-milk/reopen/").data["completedAt"] is None
    assert alice_api.post("/api/todos/buy-milk/delete/").data["deletedAt"] is not None
    assert alice_api.post("/api/todos/buy-milk/complete/").status == 404
    assert alice_api.get("/api/todos/buy-milk/").data["deletedAt"] is not None  # get finds deleted todos
    assert alice_api.post("/api/todos/buy-milk/restore/").data["deletedAt"] is None
    assert alice_api.get("/api/todos/").data[0]["id"] == "buy-milk"


def test_todos_unknown_id_is_todo_not_found(alice_api):
    for answer in (
        alice_api.get("/api/todos/nope/"),
        alice_api.post("/api/todos/nope/complete/"),
        alice_api.delete("/api/todos/nope/"),
    ):
        assert answer.status == 404 and answer.data == {"error": "not_found", "message": "Todo not found"}


def test_todos_ids_with_slashes_and_unicode_reach_their_todo(alice_api):
    alice_api.post("/api/todos/", {**MILK, "id": "home/kitchen/ñam"})
    assert alice_api.get("/api/todos/home/kitchen/%C3%B1am/").data["id"] == "home/kitchen/ñam"
    assert alice_api.post("/api/todos/home/kitchen/ñam/complete/").status == 200


def test_todos_search_with_a_typo(alice_api):
    alice_api.post("/api/todos/", {**MILK, "id": "paint", "name": "Paint the basement walls"})
    alice_api.post("/api/todos/", MILK)
    assert [t["id"] for t in alice_api.get("/api/todos/", q="basment").data] == ["paint"]
    assert alice_api.get("/api/todos/", q="zzzzqqq").data == []
    answer = alice_api.get("/api/todos/", q="")
    assert answer.status == 400 and answer.data["details"] == {"q": "q must be 1-1000 characters, got 0"}


def test_todos_limit_reached_is_a_conflict(alice, alice_api):
    Account.objects.filter(user=alice.user).update(max_tasks=1)
    assert alice_api.post("/api/todos/", MILK).status == 201
    answer = alice_api.post("/api/todos/", {**MILK, "id": "second"})
    assert answer.status == 409 and answer.error == "limit_reached" and "limit is 1" in answer.data["message"]


def test_todos_other_users_todo_is_not_found_and_untouched(alice_api, bob_api, bob):
    alice_api.post("/api/todos/", MILK)
    for answer in (
        bob_api.get("/api/todos/buy-milk/"),
        bob_api.post("/api/todos/buy-milk/complete/"),
        bob_api.delete("/api/todos/buy-milk/"),
        bob_api.post("/api/todos/buy-milk/restore/"),
    ):
        assert answer.status == 404
    assert bob_api.get("/api/todos/", includeCompleted="true", includeDeleted="true").data == []
    assert bob_api.get("/api/todos/", q="milk").data == []
    # Bob's own todo with the same id is his alone.
    mine = bob_api.post("/api/todos/", {**MILK, "name": "Bob's milk"}).data
    assert mine["uid"] == bob.uid and alice_api.get("/api/todos/buy-milk/").data["name"] == "Buy milk"


def test_todos_purge_is_for_signed_in_people(alice, alice_api):
    alice_api.post("/api/todos/", MILK)
    alice_api.delete("/api/todos/buy-milk/")
    refused = alice_api.post("/api/todos/buy-milk/purge/")
    assert refused.status == 403 and refused.error == "forbidden" and "people" in refused.data["message"]
    person = browser(alice)
    assert person.post("/api/todos/buy-milk/purge/").status == 403  # no CSRF token
    assert person.with_csrf().post("/api/todos/buy-milk/purge/").status == 204
    assert alice_api.get("/api/todos/buy-milk/").status == 404


@pytest.mark.parametrize("path", ["/api/todos/", "/api/todos/buy-milk/"])
def test_todos_anonymous_is_401_with_a_challenge(path, transactional_db):
    answer = Api().get(path)
    assert answer.status == 401 and answer.error == "unauthorized"
    assert answer.headers["WWW-Authenticate"].startswith("Bearer")


def test_todos_tags_and_blockers_are_stored_and_filtered(alice_api):
    root = alice_api.put("/api/todos/release/", {"name": "Ship the release", "description": ""})
    assert tuple(root.data) == TODO_KEYS  # no tags, no blockers: the seed's keys only
    alice_api.put("/api/todos/schema/", {"name": "Schema", "description": "", "links": ["release"], "tags": ["DB"]})
    api = alice_api.put(
        "/api/todos/api/",
        {"name": "API", "description": "", "links": ["release"], "priority": "high", "blockedBy": ["schema"]},
    )
    assert api.status == 201 and api.data["blockedBy"] == ["schema"] and "tags" not in api.data
    alice_api.put("/api/todos/other/", {"name": "Other", "description": "", "deadlineAt": "2020-01-01"})

    def listed(**params: str) -> list[str]:
        answer = alice_api.get("/api/todos/", **params)
        assert answer.status == 200, answer.data
        return [todo["id"] for todo in answer.data]

    assert listed(tag="db") == ["schema"]
    assert listed(under="release") == ["api", "release", "schema"]
    assert listed(under="release", priority="high") == ["api"]
    assert listed(dueBefore="overdue") == ["other"]
    assert listed(dueAfter="today") == []
    assert listed(q="schema", under="release") == ["schema"]
    assert listed(q="schema", under="other") == []
    cycle = alice_api.put("/api/todos/schema/", {"name": "Schema", "description": "", "blockedBy": ["api"]})
    assert cycle.status == 409 and cycle.error == "conflict"
    assert cycle.data["message"] == "blockedBy would make a cycle: schema → api → schema; remove one of these blockers"
    assert alice_api.get("/api/todos/schema/").data["tags"] == ["db"]  # the refused put changed nothing


def test_todos_filters_refuse_bad_values_in_the_tools_words(alice_api):
    answer = alice_api.get("/api/todos/", dueBefore="someday", priority="urgent", tag="two words")
    assert answer.status == 400 and answer.error == "validation_error"
    assert answer.data["details"] == {
        "dueBefore": "dueBefore must be an ISO 8601 date or date-time such as 2026-11-30, or one of today, tomorrow, "
        "this week, overdue",
        "priority": "priority must be one of low, medium, high",
        "tag": "tag must be a lowercase word of letters and digits, hyphens or underscores allowed inside, like "
        "needs-review",
    }
    missing = alice_api.get("/api/todos/", under="nope")
    assert missing.status == 404 and missing.data["message"] == "Todo not found"
    assert alice_api.get("/api/todos/", q="x", under="nope").status == 404


def test_todos_claim_fields_claim_release_and_patch(alice_api, bob_api):
    """The claim's fields appear only while it runs; claim and release are actions; PATCH is update_todo."""
    made = alice_api.post("/api/todos/", {**MILK, "tags": ["shop"], "deadlineAt": "2030-01-01"}).data
    claimed = alice_api.post("/api/todos/buy-milk/claim/", {"by": "nightly-job", "minutes": 15})
    assert claimed.status == 200
    assert tuple(claimed.data) == (*TODO_KEYS, "tags", "claimedBy", "claimedUntil", "leaseToken")
    assert claimed.data["claimedBy"] == "nightly-job"
    # The holder renews with its lease token (answered once); the same name without it is refused.
    lease = claimed.data["leaseToken"]
    assert alice_api.post("/api/todos/buy-milk/claim/", {"by": "nightly-job"}).status == 409
    renewed = alice_api.post("/api/todos/buy-milk/claim/", {"by": "nightly-job", "minutes": 15, "leaseToken": lease})
    assert renewed.status == 200 and "leaseToken" not in renewed.data
    claimed = renewed
    assert alice_api.get("/api/todos/").data[0]["claimedUntil"] == claimed.data["claimedUntil"]
    taken = alice_api.post("/api/todos/buy-milk/claim/", {"by": "other-job"})
    assert taken.status == 409 and taken.error == "claimed"
    until = claimed.data["claimedUntil"]
    assert taken.data["message"].startswith(f"Todo buy-milk is claimed by nightly-job until {until}")
    assert alice_api.post("/api/todos/buy-milk/claim/", {}).data["message"] == "by is required"
    assert alice_api.post("/api/todos/buy-milk/release/", {"by": "other-job"}).status == 409
    assert alice_api.post("/api/todos/buy-milk/release/", {"leaseToken": "lease_guessed"}).status == 409
    # Another user's API sees no claim and cannot touch it.
    assert bob_api.post("/api/todos/buy-milk/claim/", {"by": "bob-job"}).status == 404
    assert bob_api.post("/api/todos/buy-milk/release/").status == 404

    patched = alice_api.patch("/api/todos/buy-milk/", {"priority": "low", "deadlineAt": None})
    assert patched.status == 200
    assert patched.data["priority"] == "low" and patched.data["deadlineAt"] is None
    assert patched.data["tags"] == ["shop"] and patched.data["claimedBy"] == "nightly-job"
    refused = alice_api.patch("/api/todos/buy-milk/", {"name": None, "priority": "urgent"})
    assert refused.status == 400
    assert refused.data["message"] == (
        "name cannot be cleared: give a new name, or leave name out to keep it; "
        "priority must be one of low, medium, high"
    )
    released = alice_api.post("/api/todos/buy-milk/release/")
    assert released.status == 200 and "claimedBy" not in released.data
    assert (released.data["name"], released.data["createdAt"]) == (made["name"], made["createdAt"])
    alice_api.post("/api/todos/buy-milk/complete/")
    assert alice_api.post("/api/todos/buy-milk/claim/", {"by": "late"}).status == 409
