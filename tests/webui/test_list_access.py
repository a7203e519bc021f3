"""Guessing /list links or keys is throttled like the MCP endpoints' credentials."""

from __future__ import annotations

from django.test import Client

from todos.access import list_url


def test_repeated_bad_list_links_are_throttled(alice, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (3, 60)
    browser = Client()
    for guess in ("a", "b", "c"):
        assert browser.get("/list", {"t": guess}).status_code == 403
    response = browser.get("/list", {"uid": alice.uid, "key": "pbx_guess"})
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    # A stranger's guesses never lock the owner out: the right link still opens the list from the same address.
    assert browser.get(list_url(user=alice.user)).status_code == 200
    assert browser.get("/list", {"uid": alice.uid, "key": alice.key}).status_code == 200


def test_a_good_link_does_not_count_as_a_failure(alice, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (2, 60)
    browser = Client()
    for _ in range(5):
        assert browser.get(list_url(user=alice.user)).status_code == 200
