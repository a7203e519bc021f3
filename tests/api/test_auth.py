"""Who may call the API: an API key (Bearer or ?uid=&key=), or a signed-in session with its CSRF token."""

from __future__ import annotations

import pytest

from accounts.services import keys_revoke_all
from tests.api.conftest import Api, browser

WRITES = [
    ("post", "/api/todos/", {"id": "a", "name": "A", "description": ""}),
    ("put", "/api/todos/a/", {"name": "A", "description": ""}),
    ("post", "/api/pillbox/capsules/", {"title": "t", "content": "c", "compound": "x"}),
    ("post", "/api/pillbox/bottles/", {"name": "b", "display_name": "B", "scope": "global"}),
]


def test_bearer_key_and_uid_key_query_both_authenticate(alice, transactional_db):
    assert Api(key=alice.key).get("/api/todos/").status == 200
    assert Api().get(f"/api/todos/?uid={alice.uid}&key={alice.key}").status == 200


@pytest.mark.parametrize("how", ["bad-bearer", "wrong-uid", "revoked", "key-without-uid", "oauth-like-token"])
def test_bad_credentials_are_401_invalid_token(how, alice, bob):
    api, url = Api(key=alice.key), "/api/todos/"
    if how == "bad-bearer":
        api = Api(key=alice.key + "x")
    elif how == "wrong-uid":
        api, url = Api(), f"/api/todos/?uid={bob.uid}&key={alice.key}"
    elif how == "revoked":
        keys_revoke_all(user=alice.user)
    elif how == "key-without-uid":
        api, url = Api(), f"/api/todos/?key={alice.key}"
    else:  # an OAuth access token is bound to the MCP endpoint it was issued for, never to /api/
        api = Api(key="not-a-known-token")
    answer = api.get(url)
    assert answer.status == 401 and answer.error == "unauthorized"
    assert answer.headers["WWW-Authenticate"] == 'Bearer realm="api", error="invalid_token"'


def test_anonymous_is_401_with_a_challenge_and_the_ways_to_sign_in(transactional_db):
    answer = Api().post("/api/todos/", {"id": "a", "name": "A", "description": ""})
    assert answer.status == 401
    assert answer.data == {
        "error": "unauthorized",
        "message": "Send Authorization: Bearer <API key>, or ?uid=&key=, or sign in",
    }
    assert answer.headers["WWW-Authenticate"] == 'Bearer realm="api"'


def test_session_reads_without_csrf(alice):
    person = browser(alice)
    assert person.get("/api/todos/").status == 200
    assert person.get("/api/pillbox/bottles/").status == 200


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_session_writes_need_the_csrf_token(alice, method, url, body):
    refused = browser(alice).call(method, url, body)
    assert refused.status == 403 and refused.error == "forbidden" and "CSRF" in refused.data["message"]
    accepted = browser(alice).with_csrf().call(method, url, body)
    assert accepted.status in (200, 201)


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_key_writes_need_no_csrf_token(alice, method, url, body):
    assert Api(key=alice.key).call(method, url, body).status in (200, 201)


def test_unknown_api_urls_answer_json_404(alice, alice_api):
    answer = alice_api.get("/api/nothing/here/")
    assert answer.status == 404 and answer.error == "not_found"
    slashless = alice_api.get("/api/pillbox/capsules")
    assert slashless.status == 404 and slashless.data["message"].endswith("end with a slash: /api/pillbox/capsules/")


def test_method_not_allowed_is_json(alice_api):
    answer = alice_api.delete("/api/pillbox/capsules/")
    assert answer.status == 405 and answer.error == "method_not_allowed"


def test_repeated_wrong_keys_are_throttled_with_retry_after(alice, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (3, 60)
    for _ in range(3):
        refused = Api(key="pbx_wrong").get("/api/todos/")
        assert refused.status == 401 and "API key" in refused.data["message"] and "refused" in refused.data["message"]
    answer = Api(key="pbx_wrong").get("/api/todos/")
    assert answer.status == 429 and answer.error == "rate_limited" and int(answer.headers["Retry-After"]) > 0
    # A stranger's failures never lock out a right key from the same address.
    assert Api(key=alice.key).get("/api/todos/").status == 200


def test_each_user_has_a_request_rate_and_others_keep_theirs(alice, bob, settings):
    """API_USER_RATE_LIMIT requests a minute per user, as the MCP endpoints have theirs; 0 turns it off."""
    settings.API_USER_RATE_LIMIT = 3
    for _ in range(3):
        assert Api(key=alice.key).get("/api/todos/").status == 200
    refused = Api(key=alice.key).get(f"/api/todos/?uid={alice.uid}&key={alice.key}")
    assert refused.status == 429 and refused.error == "rate_limited"
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert Api(key=bob.key).get("/api/todos/").status == 200
    settings.API_USER_RATE_LIMIT = 0
    assert Api(key=alice.key).get("/api/todos/").status == 200
