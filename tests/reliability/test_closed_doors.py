"""The doors an attacker found open, each reproduced as it was found and now shut: /list links outliving the
credential that obtained them, purge through a link, a stranger locking everyone out, and the rest."""

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


def _add(browser: Client, query: dict[str, str], name: str) -> int:
    page = browser.get("/list", query)
    if page.status_code != 200:
        return page.status_code
    return browser.post("/list/add", {**query, "name": name}).status_code


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


# --- hole 6: one redirect policy for every path that makes or changes a client ----------------------------------

EVIL = "http://evil.invalid/cb"
GOOD = "http://127.0.0.1:33418/callback"


def _register(client: Client, **metadata) -> tuple[int, dict]:
    body = {"client_name": "x", "redirect_uris": [GOOD], "token_endpoint_auth_method": "none", **metadata}
    response = client.post("/o/register/", body, content_type="application/json")
    return response.status_code, response.json()


def test_registration_refuses_uris_smuggled_in_one_string(transactional_db):
    from oauth2_provider.models import get_application_model

    status, body = _register(Client(), redirect_uris=[f"{GOOD} {EVIL}"])
    assert status == 400 and body["error"] == "invalid_client_metadata"
    for uri in (EVIL, "https://ok.example/cb#frag", "javascript:alert(1)", "https://ok.example/cb\ttab"):
        status, body = _register(Client(), redirect_uris=[uri])
        assert status == 400 and body["error"] == "invalid_client_metadata", uri
    assert not get_application_model().objects.exists()


def test_the_update_endpoint_runs_the_same_checks(transactional_db):
    from oauth2_provider.models import get_application_model

    status, registered = _register(Client())
    assert status == 201
    management = Client(HTTP_AUTHORIZATION=f"Bearer {registered['registration_access_token']}")
    url = f"/o/register/{registered['client_id']}/"
    attempts = [
        {"redirect_uris": [EVIL]},
        {"redirect_uris": [f"{GOOD} {EVIL}"]},
        {"redirect_uris": [GOOD], "grant_types": ["client_credentials"]},
        {"redirect_uris": [GOOD], "grant_types": ["password"]},
        {"redirect_uris": [GOOD], "grant_types": ["implicit"], "response_types": ["token"]},
    ]
    for metadata in attempts:
        body = {"client_name": "x", "token_endpoint_auth_method": "none", **metadata}
        response = management.put(url, body, content_type="application/json")
        assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata", metadata
    application = get_application_model().objects.get(client_id=registered["client_id"])
    assert application.redirect_uris == GOOD and application.authorization_grant_type == "authorization-code"
    # A change within the policy still works.
    other = "https://app.example/callback"
    body = {"client_name": "y", "redirect_uris": [other], "token_endpoint_auth_method": "none"}
    assert management.put(url, body, content_type="application/json").status_code == 200
    assert get_application_model().objects.get(pk=application.pk).redirect_uris == other


def test_the_policy_holds_for_any_code_that_validates_a_client(transactional_db):
    from django.core.exceptions import ValidationError
    from oauth2_provider.models import get_application_model

    Application = get_application_model()
    for uris, grant in ((EVIL, "authorization-code"), (GOOD, "client-credentials"), (GOOD, "password")):
        application = Application(name="admin-made", client_type="public", authorization_grant_type=grant,
                                  redirect_uris=uris)
        try:
            application.full_clean()
        except ValidationError:
            continue
        raise AssertionError(f"{uris} / {grant} passed the client policy")


class EvilDocumentFetcher:
    """A client ID metadata document that names an attacker's non-loopback http redirect URI."""

    fetched: list[str] = []

    def fetch(self, client_id: str):
        self.fetched.append(client_id)
        document = {
            "client_id": client_id,
            "client_name": "Evil document",
            "redirect_uris": [EVIL],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
        return document, 600


def _authorize_query(client_id: str, redirect_uri: str, site: str, **extra: str) -> dict[str, str]:
    from tests.oauth.helpers import pkce_pair

    return {
        "response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "state": "s",
        "code_challenge": pkce_pair()[1], "code_challenge_method": "S256", "scope": "mcp",
        "resource": site + "/mcp", **extra,
    }


def test_a_metadata_document_with_a_bad_redirect_uri_gets_no_consent_page(alice, settings):
    from oauth2_provider.models import get_application_model

    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER, "CIMD_METADATA_FETCHER": "tests.reliability.test_closed_doors.EvilDocumentFetcher"
    }
    EvilDocumentFetcher.fetched.clear()
    person = Client()
    person.force_login(alice.user)
    client_id = "https://client.example/metadata.json"
    response = person.get("/o/authorize/", _authorize_query(client_id, EVIL, settings.SITE_URL))
    assert EvilDocumentFetcher.fetched == [client_id]
    assert response.status_code == 400 and "Location" not in response
    assert 'name="allow"' not in response.content.decode()
    assert not get_application_model().objects.filter(client_id=client_id).exists()


def test_metadata_documents_are_fetched_only_at_the_authorization_endpoint(transactional_db, settings):
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER, "CIMD_METADATA_FETCHER": "tests.reliability.test_closed_doors.EvilDocumentFetcher"
    }
    EvilDocumentFetcher.fetched.clear()
    data = {"grant_type": "authorization_code", "code": "x", "redirect_uri": GOOD, "code_verifier": "v" * 43,
            "client_id": "https://client.example/other.json"}
    response = Client().post("/o/token/", data)
    assert response.status_code in (400, 401) and EvilDocumentFetcher.fetched == []


def test_metadata_document_resolution_is_rate_limited_like_registration(alice, settings):
    settings.OAUTH_DCR_RATE_LIMIT = (2, 3600)
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER, "CIMD_METADATA_FETCHER": "tests.reliability.test_closed_doors.EvilDocumentFetcher"
    }
    EvilDocumentFetcher.fetched.clear()
    person = Client()
    person.force_login(alice.user)
    for n in range(4):
        person.get("/o/authorize/", _authorize_query(f"https://client.example/{n}.json", EVIL, settings.SITE_URL))
    assert len(EvilDocumentFetcher.fetched) == 2


# --- hole 7: no open redirect ---------------------------------------------------------------------------------


def test_errors_before_consent_are_shown_here_not_sent_to_the_client(alice, settings):
    status, registered = _register(Client(), redirect_uris=["https://attacker.invalid/landing"])
    assert status == 201
    person = Client()
    person.force_login(alice.user)
    base = _authorize_query(registered["client_id"], "https://attacker.invalid/landing", settings.SITE_URL)
    for drop in ("code_challenge", "resource", "response_type"):
        query = {key: value for key, value in base.items() if key != drop}
        response = person.get("/o/authorize/", query)
        assert response.status_code == 400 and "Location" not in response, drop
        assert "cannot be completed" in response.content.decode()
    plain = person.get("/o/authorize/", {**base, "code_challenge_method": "plain"})
    assert plain.status_code == 400 and "Location" not in plain
    # A good request still reaches the consent page, and only consent sends the person back to the client.
    assert 'name="allow"' in person.get("/o/authorize/", base).content.decode()


# --- hole 8: 400 for any unparseable body --------------------------------------------------------------------


def test_deeply_nested_json_is_a_400_everywhere(alice):
    nested = "[" * 3000 + "]" * 3000
    deep_object = '{"a":' * 3000 + "1" + "}" * 3000
    api = Client(HTTP_AUTHORIZATION=f"Bearer {alice.key}")
    targets = [
        (Client(), "post", "/o/register/"),
        (api, "post", "/api/todos/"),
        (api, "post", "/api/pillbox/capsules/"),
    ]
    for body in (nested, deep_object):
        for client, method, path in targets:
            response = getattr(client, method)(path, body, content_type="application/json")
            assert response.status_code == 400, (path, response.status_code)
            assert "Traceback" not in response.content.decode() and "RecursionError" not in response.content.decode()
    status, registered = _register(Client())
    management = Client(HTTP_AUTHORIZATION=f"Bearer {registered['registration_access_token']}")
    response = management.put(f"/o/register/{registered['client_id']}/", nested, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"


# --- hardening ------------------------------------------------------------------------------------------------


def test_authorization_codes_are_stored_hashed_and_a_replay_revokes_what_they_bought(oauth_site, alice_login):
    from oauth2_provider.models import get_grant_model

    site = oauth_site.url
    client_id = register_client(site)
    verifier, challenge = pkce_pair()
    code = authorization_redirect(site, authorize_url(site, client_id, challenge))["code"]
    stored = get_grant_model().objects.get(application__client_id=client_id)
    assert stored.code != code and code not in stored.code and len(stored.code) == 64

    tokens = exchange(site, client_id, code, verifier)
    assert tokens.status_code == 200, tokens.text
    access, refresh = tokens.json()["access_token"], tokens.json()["refresh_token"]
    assert mcp_post(site + "/mcp", access).status_code == 200

    replay = exchange(site, client_id, code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert mcp_post(site + "/mcp", access).status_code == 401
    refreshed = httpx2.post(
        site + "/o/token/",
        data={"grant_type": "refresh_token", "refresh_token": refresh, "client_id": client_id},
        timeout=30,
    )
    assert refreshed.status_code == 400


def test_a_refused_credential_is_named_in_the_401(alice):
    body = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    cases = [
        ({"HTTP_AUTHORIZATION": "Bearer pbx_" + "x" * 43}, "/mcp", "API key"),
        ({"HTTP_AUTHORIZATION": "Bearer some-oauth-token"}, "/mcp", "OAuth access token"),
        ({}, f"/mcp?uid={alice.uid}&key=pbx_wrong", "uid and key"),
    ]
    for headers, path, kind in cases:
        response = Client().post(path, body, content_type="application/json", HTTP_ACCEPT="application/json",
                                 **headers)
        assert response.status_code == 401
        assert 'error="invalid_token"' in response["WWW-Authenticate"]
        message = response.json()["message"]
        assert "refused" in message and kind in message and "Send Authorization" not in message
    anonymous = Client().post("/mcp", body, content_type="application/json", HTTP_ACCEPT="application/json")
    assert anonymous.status_code == 401 and "invalid_token" not in anonymous["WWW-Authenticate"]


def test_registration_reports_secret_expiry_and_honours_client_secret_post(oauth_site, alice_login):
    site = oauth_site.url
    response = httpx2.post(
        site + "/o/register/",
        json={"client_name": "secret", "redirect_uris": [GOOD], "token_endpoint_auth_method": "client_secret_post"},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    registered = response.json()
    assert registered["client_secret"] and registered["client_secret_expires_at"] == 0
    assert registered["token_endpoint_auth_method"] == "client_secret_post"
    verifier, challenge = pkce_pair()
    code = authorization_redirect(site, authorize_url(site, registered["client_id"], challenge))["code"]
    # The secret in the body, as client_secret_post says.
    token = exchange(site, registered["client_id"], code, verifier, client_secret=registered["client_secret"])
    assert token.status_code == 200, token.text

    public = httpx2.post(site + "/o/register/", json={"redirect_uris": [GOOD], "token_endpoint_auth_method": "none"})
    assert "client_secret" not in public.json() and "client_secret_expires_at" not in public.json()


def test_testserver_is_not_an_allowed_host_by_default(tmp_path):
    import os
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if key not in ("ALLOWED_HOSTS", "SITE_URL")}
    env.update(PILLBOX_HOME=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings")
    hosts = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.ALLOWED_HOSTS)"],
        env=env, capture_output=True, text=True, check=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))),
    ).stdout
    assert "testserver" not in hosts and "127.0.0.1" in hosts


def test_percent_encoded_parameter_names_are_scrubbed():
    from base.logging import scrub

    secret = "pbx_" + "s" * 43
    for line in (
        f"GET /mcp?uid=u1&k%65y={secret} HTTP/1.1",
        "GET /list?%74=l_linktokenlinktoken&show=deleted HTTP/1.1",
        "GET /list?%2574=l_linktokenlinktoken HTTP/1.1",
        "POST /o/token/ c%6Fde=authcodeauthcode&client_%73ecret=shh-secret-value",
        "GET /x?%6B%45%59=plain-secret-value",
    ):
        scrubbed = scrub(line)
        for value in (secret, "l_linktokenlinktoken", "authcodeauthcode", "shh-secret-value", "plain-secret-value"):
            assert value not in scrubbed, (line, scrubbed)
    assert scrub("GET /list?show=deleted&monkey=banana") == "GET /list?show=deleted&monkey=banana"


def test_every_page_has_a_csp_and_no_inline_script(alice, operator):
    import re

    from tests.webui.conftest import make_memory

    memory = make_memory(alice)
    person = Client()
    person.force_login(alice.user)
    staff = Client()
    staff.force_login(operator.user)
    pages = [
        (Client(), "/"),
        (Client(), "/accounts/login/"),
        (Client(), "/admin/login/"),
        (Client(), "/api/docs/"),
        (Client(), f"/list?uid={alice.uid}&key={alice.key}"),
        (person, "/list"),
        (person, "/account/"),
        (person, "/pillbox/"),
        (person, f"/pillbox/bottles/{memory.bottle.hex}/"),
        (person, f"/pillbox/prescriptions/{memory.open_rx.hex}/"),
        (person, f"/pillbox/pills/{memory.pill.hex}/"),
        (person, "/pillbox/capsules/"),
        (person, f"/pillbox/capsules/{memory.capsule.hex}/"),
        (person, "/pillbox/search?q=stripe"),
        (staff, "/admin/"),
    ]
    inline_script = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I)
    handler = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)
    for client, path in pages:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
        html = response.content.decode()
        assert not inline_script.search(html), (path, inline_script.search(html).group(0))
        assert not handler.search(html), (path, handler.search(html).group(0))
    assert "script-src 'self'" in Client().post("/mcp", "{}", content_type="application/json")[
        "Content-Security-Policy"
    ]
