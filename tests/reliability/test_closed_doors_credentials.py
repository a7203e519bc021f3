"""The doors an attacker found open around credentials, each reproduced as it was found and now shut: /list links
outliving the credential that obtained them, purge through a link, and a stranger locking everyone out."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import httpx2
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import get_application_model

from accounts.models import ListLink
from tests.oauth.flow import PASSWORD
from tests.oauth.helpers import authorization_redirect, authorize_url, exchange, pkce_pair, register_client
from tests.oauth.test_flow import mcp_post
from todos import services
from todos.selectors import todo_list


def _list_url_over_mcp(site: str, token: str) -> str:
    response = httpx2.post(
        site + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_list_url", "arguments": {}}},
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.json()["result"]["structuredContent"]["url"]


def _oauth_tokens(site: str) -> tuple[str, dict]:
    client_id = register_client(site)
    verifier, challenge = pkce_pair()
    code = authorization_redirect(site, authorize_url(site, client_id, challenge))["code"]
    response = exchange(site, client_id, code, verifier)
    assert response.status_code == 200, response.text
    return client_id, response.json()


def _path(url: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(url)
    return parts.path, {key: values[0] for key, values in parse_qs(parts.query).items()}


# --- hole 1: links die with their credential ----------------------------------------------------------------


def test_a_revoked_oauth_client_loses_its_list_link(oauth_site, alice_login):
    site = oauth_site.url
    client_id, tokens = _oauth_tokens(site)
    path, query = _path(_list_url_over_mcp(site, tokens["access_token"]))
    browser = Client(enforce_csrf_checks=True)
    assert browser.get(path, query).status_code == 200

    # The person revokes the application on the account page.
    person = Client()
    person.force_login(alice_login.user)
    link = ListLink.objects.get(user=alice_login.user)
    assert link.kind == "oauth"
    assert get_application_model().objects.get(pk=link.application_id).client_id == client_id
    account = person.get("/account/")
    assert f"/account/links/{link.pk}/revoke" in account.content.decode()
    assert person.post(f"/account/apps/{link.application_id}/revoke").status_code == 303
    assert mcp_post(site + "/mcp", tokens["access_token"]).status_code == 401

    assert browser.get(path, query).status_code == 403
    assert Client().post("/list/add", {**query, "name": "written by a revoked client"}).status_code == 403
    assert not [todo for todo in todo_list(owner=alice_login.user, include_completed=True) if "revoked" in todo.name]


def test_reusing_a_refresh_token_kills_the_grants_links(oauth_site, alice_login):
    site = oauth_site.url
    client_id, tokens = _oauth_tokens(site)
    _, query = _path(_list_url_over_mcp(site, tokens["access_token"]))
    refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}
    rotated = httpx2.post(site + "/o/token/", data=refresh, timeout=30)
    assert rotated.status_code == 200, rotated.text
    # Rotation keeps the grant (and its links) alive...
    assert Client().get("/list", query).status_code == 200
    # ...reuse of the old refresh token (a stolen copy) revokes the whole family, links included.
    assert httpx2.post(site + "/o/token/", data=refresh, timeout=30).status_code == 400
    assert Client().get("/list", query).status_code == 403


def test_a_revoked_key_loses_its_links_and_other_keys_keep_theirs(client, alice):
    from accounts.services import apikey_create, apikey_revoke
    from mcp_bridge.tools import Credential
    from todos.access import list_url

    key, _ = apikey_create(user=alice.user, name="second")
    first = list_url(user=alice.user, credential=Credential(kind="api_key", api_key_id=alice.user.api_keys.last().pk))
    second = list_url(user=alice.user, credential=Credential(kind="api_key", api_key_id=key.pk))
    assert apikey_revoke(user=alice.user, key_id=key.pk)
    assert client.get(*_path(first)).status_code == 200
    assert client.get(*_path(second)).status_code == 403


def test_links_expire_and_can_be_revoked_on_the_account_page(client, alice, settings):
    from todos.access import list_url

    settings.LIST_LINK_MAX_AGE_DAYS = 30
    path, query = _path(list_url(user=alice.user))
    link = ListLink.objects.get(user=alice.user)
    assert link.expires_at - timezone.now() > timedelta(days=29)
    ListLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get(path, query).status_code == 403

    path, query = _path(list_url(user=alice.user))
    live = ListLink.objects.get(user=alice.user, expires_at__gt=timezone.now())
    person = Client()
    person.force_login(alice.user)
    assert person.post(f"/account/links/{live.pk}/revoke").status_code == 303
    assert client.get(path, query).status_code == 403
    # Another person cannot revoke (or learn about) alice's links.
    assert person.post(f"/account/links/{live.pk}/revoke").status_code == 404


def test_the_same_credential_gets_its_live_link_back_until_half_its_life_is_gone(client, alice, settings):
    """get_list_url is annotated idempotent: asked again by the same credential it answers the same link (one row
    on the account page), while another credential, a revoked link or one past half its life gets a new one."""
    from accounts.services import apikey_create
    from mcp_bridge.tools import Credential
    from todos.access import list_url

    settings.LIST_LINK_MAX_AGE_DAYS = 30
    mine = Credential(kind="api_key", api_key_id=alice.user.api_keys.last().pk)
    first = list_url(user=alice.user, credential=mine)
    assert list_url(user=alice.user, credential=mine) == first
    assert ListLink.objects.filter(user=alice.user).count() == 1
    assert client.get(*_path(first)).status_code == 200

    other_key, _ = apikey_create(user=alice.user, name="other")
    other = list_url(user=alice.user, credential=Credential(kind="api_key", api_key_id=other_key.pk))
    local = list_url(user=alice.user, credential=Credential(kind="stdio"))
    assert len({first, other, local}) == 3

    link = ListLink.objects.get(user=alice.user, kind="api_key", api_key_id=mine.api_key_id)
    ListLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() + timedelta(days=14))
    renewed = list_url(user=alice.user, credential=mine)
    assert renewed != first
    assert client.get(*_path(first)).status_code == 200  # the old one lives out its days

    ListLink.objects.filter(kind="api_key", api_key_id=mine.api_key_id).update(revoked_at=timezone.now())
    after_revoke = list_url(user=alice.user, credential=mine)
    assert after_revoke not in (first, renewed)
    assert client.get(*_path(renewed)).status_code == 403
    assert client.get(*_path(after_revoke)).status_code == 200


# --- hole 2: purge only by people ------------------------------------------------------------------------------


def test_a_key_or_link_cannot_purge_and_the_page_offers_no_purge(alice):
    from todos.access import list_url

    services.todo_put(owner=alice.user, key="keep-me", name="Keep me", description="")
    services.todo_delete(owner=alice.user, key="keep-me")
    for query in (_path(list_url(user=alice.user))[1], {"uid": alice.uid, "key": alice.key}):
        browser = Client(enforce_csrf_checks=True)
        page = browser.get("/list", {**query, "show": "deleted"})
        assert page.status_code == 200 and "Keep me" in page.content.decode()
        assert "/list/purge" not in page.content.decode()
        token = browser.cookies["csrftoken"].value
        refused = browser.post("/list/purge", {**query, "id": "keep-me", "csrfmiddlewaretoken": token})
        assert refused.status_code == 403
    assert todo_list(owner=alice.user, include_completed=True, include_deleted=True)

    person = Client()
    person.force_login(alice.user)
    assert "/list/purge" in person.get("/list", {"show": "deleted"}).content.decode()
    assert person.post("/list/purge", {"id": "keep-me"}).status_code == 303
    assert not todo_list(owner=alice.user, include_completed=True, include_deleted=True)


# --- hole 3: lockout-proof throttling --------------------------------------------------------------------------


def _mcp(client: Client, key: str, **extra) -> int:
    body = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    return client.post(
        "/mcp", body, content_type="application/json", HTTP_ACCEPT="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}", **extra,
    ).status_code


def test_a_stranger_cannot_lock_out_valid_keys_from_the_same_address(alice, bob, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (5, 60)
    shared = Client(REMOTE_ADDR="10.0.0.1")  # every client behind the proxy
    statuses = [_mcp(shared, "pbx_" + "x" * 43) for _ in range(12)]
    assert statuses[:5] == [401] * 5 and set(statuses[5:]) == {429}
    assert _mcp(shared, alice.key) == 200 and _mcp(shared, bob.key) == 200
    uid_key = shared.post(f"/mcp?uid={alice.uid}&key={alice.key}", '{"jsonrpc":"2.0","id":1,"method":"ping"}',
                          content_type="application/json", HTTP_ACCEPT="application/json")
    assert uid_key.status_code == 200


def test_failures_count_per_presented_uid_too(alice, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (3, 60)
    statuses = []
    for n in range(6):  # a guesser rotating addresses still hits alice's uid bucket
        guess = Client(REMOTE_ADDR=f"10.0.1.{n}")
        statuses.append(guess.get("/list", {"uid": alice.uid, "key": f"pbx_guess{n}"}).status_code)
    assert statuses[:3] == [403] * 3 and set(statuses[3:]) == {429}
    assert Client(REMOTE_ADDR="10.0.1.9").get("/list", {"uid": alice.uid, "key": alice.key}).status_code == 200


def test_proxy_header_is_trusted_only_when_configured(alice, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (2, 60)
    proxy = {"REMOTE_ADDR": "10.9.9.9"}
    settings.TRUST_PROXY_HEADERS = False
    # Off: a spoofed X-Forwarded-For does not give a guesser fresh buckets.
    statuses = [_mcp(Client(**proxy), "pbx_bad", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}") for n in range(4)]
    assert statuses[-1] == 429

    from django.core.cache import cache

    cache.clear()
    settings.TRUST_PROXY_HEADERS, settings.TRUSTED_PROXY_HOPS = True, 1
    settings.TRUSTED_PROXIES = ["10.9.9.0/24"]  # the peer is a configured proxy
    # On: the proxy's own entry (the last one) is the client; what the client put before it is ignored.
    for _ in range(4):
        _mcp(Client(**proxy), "pbx_bad", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.7")
    assert _mcp(Client(**proxy), "pbx_bad", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.7") == 429
    assert _mcp(Client(**proxy), "pbx_bad", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.8") == 401
    settings.TRUSTED_PROXY_HOPS = 2
    assert _mcp(Client(**proxy), "pbx_bad", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.7") == 401


def test_login_throttle_is_per_account_and_spares_the_owners_browser(alice, settings):
    settings.LOGIN_RATE_LIMIT = (3, 60)
    alice.user.set_password(PASSWORD)
    alice.user.save()
    earlier = Client(REMOTE_ADDR="192.0.2.1")
    assert earlier.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).status_code == 302
    # The same browser later, signed out (the session is gone; the device cookie stays).
    owner = Client(REMOTE_ADDR="192.0.2.1")
    owner.cookies["pbx_device"] = earlier.cookies["pbx_device"].value

    statuses = []
    for n in range(5):  # a stranger spreading guesses over addresses still fills alice's bucket
        stranger = Client(REMOTE_ADDR=f"198.51.100.{n}")
        statuses.append(stranger.post("/accounts/login/", {"username": "alice", "password": f"guess{n}"}).status_code)
    assert statuses[:3] == [200] * 3 and set(statuses[3:]) == {429}
    # Even the right password from a new browser waits (passwords can be guessed)...
    assert Client(REMOTE_ADDR="198.51.100.9").post(
        "/accounts/login/", {"username": "alice", "password": PASSWORD}
    ).status_code == 429
    # ...but alice's own browser, which signed in before, gets in; and other accounts are untouched.
    assert owner.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).status_code == 302
    assert Client(REMOTE_ADDR="198.51.100.9").post(
        "/accounts/login/", {"username": "bob", "password": "wrong"}
    ).status_code == 200
