"""The key → user cache in front of API-key authentication (accounts.services): a key looked up once is answered
from Django's cache for API_KEY_CACHE_SECONDS, and every change to the key, its user or its account takes effect
on the next request, in this process as in any other sharing the cache (tests/shared for two servers on Redis)."""

from __future__ import annotations

import pickle

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.models import Account, ApiKey
from accounts.services import KEY_CACHE_PREFIX, apikey_find, apikey_revoke, hash_key, keys_forget
from tests.conftest import Person

CALL = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_list_usage","arguments":{}}}'


def _status(person: Person, query: str = "") -> int:
    response = Client().post(
        "/mcp" + query,
        CALL,
        content_type="application/json",
        headers={} if query else {"Authorization": f"Bearer {person.key}"},
        HTTP_ACCEPT="application/json, text/event-stream",
    )
    return response.status_code


def _key_queries(raw: str, uid: str | None = None) -> int:
    """How many statements one lookup of ``raw`` runs."""
    with CaptureQueriesContext(connection) as queries:
        assert apikey_find(raw=raw, uid=uid) is not None
    return len(queries)


def test_a_key_is_looked_up_in_the_database_once(alice):
    assert _key_queries(alice.key) >= 1
    assert _key_queries(alice.key) == 0
    assert _key_queries(alice.key, alice.uid) == 0
    assert apikey_find(raw=alice.key, uid="not-" + alice.uid) is None


def test_the_cache_holds_no_key_and_no_password_hash(alice):
    alice.user.set_password("a long enough password")
    alice.user.save()
    cache.clear()  # the save left a tombstone
    apikey_find(raw=alice.key)
    cached = cache.get(KEY_CACHE_PREFIX + hash_key(alice.key))
    assert isinstance(cached, ApiKey)
    stored = pickle.dumps(cached)
    assert alice.key.encode() not in stored
    assert alice.user.password.encode() not in stored
    # Deferred, not lost: a caller that reads it gets it from the database.
    assert cached.user.password == alice.user.password


def test_a_revoked_key_is_refused_on_the_next_request(alice):
    assert _status(alice) == 200
    assert _status(alice) == 200  # now answered from the cache
    key = ApiKey.objects.get(user=alice.user)
    assert apikey_revoke(user=alice.user, key_id=key.pk)
    assert _status(alice) == 401
    assert _status(alice, f"?uid={alice.uid}&key={alice.key}") == 401


def test_revoking_one_key_refreshes_the_users_other_keys(alice):
    """A cached key carries the account, whose link epoch a revocation moves: /list links made through the user's
    other keys must name the new epoch."""
    from accounts.services import apikey_create

    _, other = apikey_create(user=alice.user, name="other")
    first = apikey_find(raw=other)
    assert first is not None and first.user.account.link_epoch == 0
    apikey_revoke(user=alice.user, key_id=ApiKey.objects.get(user=alice.user, name="").pk)
    assert apikey_find(raw=other).user.account.link_epoch == 1


@pytest.mark.parametrize("change", ["deactivate", "delete the key", "delete the user"])
def test_every_change_to_the_key_or_its_user_is_seen_at_once(alice, change):
    assert apikey_find(raw=alice.key) is not None
    if change == "deactivate":
        alice.user.is_active = False
        alice.user.save()
    elif change == "delete the key":
        ApiKey.objects.get(user=alice.user).delete()
    else:
        alice.user.delete()
    assert apikey_find(raw=alice.key) is None


def test_an_account_change_is_seen_at_once(alice):
    assert apikey_find(raw=alice.key).user.account.max_tasks == 1200
    account = Account.objects.get(user=alice.user)
    account.max_tasks = 5
    account.save()
    assert apikey_find(raw=alice.key).user.account.max_tasks == 5


def test_a_lookup_that_read_before_a_revocation_caches_nothing(alice):
    """The revocation leaves a tombstone first: what a concurrent request read before it committed is not cached
    after it, so no process keeps a revoked key alive for the cache's lifetime."""
    keys_forget(user_id=alice.user.pk)
    assert apikey_find(raw=alice.key) is not None  # read while the tombstone stands: answered, not cached
    assert _key_queries(alice.key) >= 1


def test_a_sign_in_keeps_the_cached_keys(alice, client):
    alice.user.set_password("a long enough password")
    alice.user.save()
    cache.clear()  # the save left a tombstone
    apikey_find(raw=alice.key)
    assert client.login(username="alice", password="a long enough password")
    assert _key_queries(alice.key) == 0
