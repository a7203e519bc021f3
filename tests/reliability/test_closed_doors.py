"""The doors an attacker found open around OAuth clients and requests, each reproduced as it was found and now
shut: one redirect policy for every path that makes or changes a client, no open redirect, a 400 for any
unparseable body, and the hardening around them (hashed codes, named refusals, hosts, scrubbed logs, CSP)."""

from __future__ import annotations

import httpx2
from django.test import Client

from tests.oauth.helpers import authorization_redirect, authorize_url, exchange, pkce_pair, register_client
from tests.oauth.test_flow import mcp_post

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
