"""Hole 3 of the third round: /list links that change hands after a backup is restored.

A link's token was the site's signature of its row's id; a restore rolls the id counter back, so the next user to
ask for a link got the token another user had been handed after the backup, and it opened the new user's list.
Tokens now sign a random nonce and the user's account uid and are checked against the row's user on use.
"""

from __future__ import annotations

import secrets

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from accounts.models import ApiKey, ListLink
from accounts.services import hash_key
from mcp_bridge.tools import Credential
from tests.conftest import make_person
from todos import services
from todos.access import link_create, list_link_user

LINKS = 1000


def _keys(user: object, count: int) -> list[int]:
    """``count`` live API keys of ``user`` (each asks for its own link: a key gets its live link back)."""
    ApiKey.objects.bulk_create(
        ApiKey(user=user, key_hash=hash_key("pbx_" + secrets.token_urlsafe(24)), prefix=f"pbx_{n}")
        for n in range(count)
    )
    return list(ApiKey.objects.filter(user=user).order_by("pk").values_list("pk", flat=True))


def _links(user: object, keys: list[int]) -> list[str]:
    return [link_create(user=user, credential=Credential(kind="api_key", api_key_id=key)) for key in keys]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="restore puts back a SQLite global database")
def test_no_link_changes_hands_across_a_backup_and_restore(transactional_db, tmp_path):
    alice, carol = make_person("alice"), make_person("carol")
    services.todo_put(owner=alice.user, key="alices-secret", name="Alice", description="mine")
    services.todo_put(owner=carol.user, key="carols-secret", name="Carol", description="mine")
    alice_keys = _keys(alice.user, LINKS)
    carol_keys = _keys(carol.user, LINKS)
    call_command("backup", str(tmp_path / "backup"), stdout=open("/dev/null", "w"))

    # After the backup Alice is handed 1,000 links; then the backup is restored (her links' rows are gone and
    # the id counter is back where it was), and Carol asks for 1,000 links of her own.
    alice_tokens = _links(alice.user, alice_keys)
    assert all(list_link_user(token) == alice.user for token in alice_tokens[:50])
    call_command("restore", str(tmp_path / "backup"), "--force", stdout=open("/dev/null", "w"))
    assert not ListLink.objects.exists()
    carol_tokens = _links(carol.user, carol_keys)

    shared = set(alice_tokens) & set(carol_tokens)
    assert len(shared) == 0, f"{len(shared)} of {len(alice_tokens)} tokens were handed to both users"
    assert [token for token in alice_tokens if list_link_user(token) is not None] == []
    assert all(list_link_user(token) == carol.user for token in carol_tokens)
    # Through the page itself: Alice's old links open nothing, Carol's open Carol's list only.
    client = Client()
    for token in alice_tokens[:5]:
        page = client.get("/list", {"t": token})
        assert page.status_code in (403, 404), page.status_code
        assert b"carols-secret" not in page.content
    page = client.get("/list", {"t": carol_tokens[0]})
    assert page.status_code == 200 and b"carols-secret" in page.content and b"alices-secret" not in page.content


def test_a_link_row_moved_to_another_user_opens_nothing(transactional_db):
    """The hash is found, then the token is checked against the row's user: a row that names another user (a
    restore mixing rows, or anyone able to write the table) opens nothing."""
    alice, carol = make_person("alice"), make_person("carol")
    token = link_create(user=alice.user, credential=Credential(kind="stdio"))
    assert list_link_user(token) == alice.user
    ListLink.objects.filter(user=alice.user).update(user=carol.user)
    assert list_link_user(token) is None


def test_a_link_still_comes_back_to_the_credential_that_asked(transactional_db):
    alice = make_person("alice")
    first = link_create(user=alice.user, credential=Credential(kind="stdio"))
    assert link_create(user=alice.user, credential=Credential(kind="stdio")) == first
    assert ListLink.objects.filter(user=alice.user).count() == 1
    assert first.startswith("l_") and "." in first
