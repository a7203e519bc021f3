"""The pages in a real browser: Playwright driving Debian's headless Chromium against the live server.

Each walk does what a person does (click, type, reload) and checks what the page shows and what was stored.
The screenshots of the README and docs/pages.md (docs/screenshots/) are written by these tests with
UPDATE_SCREENSHOTS=1. Skipped when /usr/bin/chromium is missing
(.ci/run installs it with apt).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.test import Client

from accounts.models import ApiKey
from accounts.services import hash_key
from pillbox.models import Pill
from tests.webui.conftest import make_memory
from tests.webui.test_list_page import XSS
from todos import leases
from todos import services as todo_services
from todos.access import list_url
from todos.selectors import todo_get

CHROMIUM = Path("/usr/bin/chromium")
# Every run writes its screenshots to tests/screenshots/ (ignored by git); UPDATE_SCREENSHOTS=1 writes the
# README's set in docs/screenshots/ instead, so an ordinary test run leaves the tree clean.
_ROOT = Path(__file__).resolve().parents[2]
SHOTS = _ROOT / "docs" / "screenshots" if os.environ.get("UPDATE_SCREENSHOTS") else _ROOT / "tests" / "screenshots"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's Chromium at /usr/bin/chromium (apt-get install chromium chromium-driver; .ci/run does it)",
)
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[dev]')")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    # Playwright's sync API runs an event loop in this thread, which Django's ORM guard takes for async code;
    # the tests' own ORM calls are plain synchronous ones.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_api.sync_playwright().start()
    chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
    yield chromium
    chromium.close()
    playwright.stop()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(viewport={"width": 1200, "height": 820}, base_url=live_server.url)
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()


def shoot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def session_cookie(person, url: str) -> dict:
    client = Client()
    client.force_login(person.user)
    return {"name": "sessionid", "value": client.cookies["sessionid"].value, "url": url}


def link_for(person, live_server) -> str:
    return list_url(user=person.user).replace("http://127.0.0.1:8000", live_server.url)


def todo_item(page, key: str):
    return page.locator(f'li.todo[data-id="{key}"]')


# ---------------------------------------------------------------- /list


def test_list_from_a_link_add_complete_edit_delete_restore_and_reload(page, live_server, alice):
    todo_services.todo_put(
        owner=alice.user,
        key="launch",
        name="Launch the beta",
        priority="high",
        description="See the **checklist**:\n\n1. DNS\n2. TLS\n3. [Status page](https://status.example.com)",
    )
    todo_services.todo_put(
        owner=alice.user,
        key="launch-dns",
        name="Point DNS at the new host",
        description="",
        links=["launch"],
        deadline_at=datetime.now(UTC) - timedelta(days=1),
    )
    todo_services.todo_put(
        owner=alice.user,
        key="launch-copy",
        name="Write the announcement",
        description="",
        links=["launch"],
        priority="low",
    )
    todo_services.todo_put(owner=alice.user, key="taxes", name="File taxes", description="", priority="low")
    page.goto(link_for(alice, live_server))
    assert page.locator(".usage-text").inner_text() == "4 of 1200 todos used (0%)"
    assert todo_item(page, "launch").locator("ul.subtasks li.todo").count() == 2
    assert todo_item(page, "launch-dns").locator(".badge.overdue").is_visible()
    page.evaluate("window.__sameDocument = true")  # survives only if nothing reloads the page

    page.locator("details.add summary").click()
    page.fill("#add-name", "Buy oat milk")
    page.select_option("#add-priority", "high")
    page.fill("#add-description", "Two *litres*")
    page.get_by_role("button", name="Add todo").click()
    milk = todo_item(page, "buy-oat-milk")
    milk.wait_for()
    assert milk.locator(".md em").inner_text() == "litres"
    shoot(page, "list")

    milk.get_by_role("button", name="Complete Buy oat milk").click()
    page.locator('ul.todos.completed li[data-id="buy-oat-milk"]').wait_for()

    milk = todo_item(page, "buy-oat-milk")
    milk.locator("details.edit summary").click()
    milk.locator('input[name="name"]').fill("Buy soy milk")
    milk.get_by_role("button", name="Save").click()
    page.locator('li[data-id="buy-oat-milk"] .todo-name', has_text="Buy soy milk").wait_for()

    todo_item(page, "buy-oat-milk").get_by_role("button", name="Delete Buy soy milk").click()
    todo_item(page, "buy-oat-milk").wait_for(state="detached")
    assert page.evaluate("window.__sameDocument") is True
    assert todo_get(owner=alice.user, key="buy-oat-milk", include_deleted=True).deleted_at is not None

    page.get_by_role("link", name="Show deleted").click()
    deleted = page.locator('ul.todos.deleted li[data-id="buy-oat-milk"]')
    deleted.get_by_role("button", name="Restore").click()
    page.locator('ul.todos.completed li[data-id="buy-oat-milk"]').wait_for()

    page.reload()
    restored = page.locator('ul.todos.completed li[data-id="buy-oat-milk"]')
    assert restored.locator(".todo-name").inner_text() == "Buy soy milk"
    assert page.locator(".usage-text").inner_text() == "5 of 1200 todos used (0%)"
    stored = todo_get(owner=alice.user, key="buy-oat-milk")
    assert (stored.name, stored.priority, stored.description) == ("Buy soy milk", "high", "Two *litres*")
    assert stored.completed_at is not None and stored.deleted_at is None


def test_list_works_with_javascript_off(browser, live_server, alice):
    context = browser.new_context(java_script_enabled=False, base_url=live_server.url)
    page = context.new_page()
    try:
        page.goto(link_for(alice, live_server))
        page.locator("details.add summary").click()
        page.fill("#add-name", "Water the plants")
        page.get_by_role("button", name="Add todo").click()
        page.wait_for_url(re.compile(r"/list\?t=.*#todo-water-the-plants$"))
        todo_item(page, "water-the-plants").get_by_role("button", name="Complete Water the plants").click()
        page.locator('ul.todos.completed li[data-id="water-the-plants"]').wait_for()
        assert todo_get(owner=alice.user, key="water-the-plants").completed_at is not None
    finally:
        context.close()


def test_list_descriptions_render_inert(page, live_server, alice):
    todo_services.todo_put(owner=alice.user, key="xss", name="Hostile description", description=XSS)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(link_for(alice, live_server))
    item = todo_item(page, "xss")
    assert item.locator(".md strong").inner_text() == "there"
    page.wait_for_load_state("load")
    assert dialogs == []
    assert page.evaluate("window.__xss") is None
    assert page.locator("#todo-app script, #todo-app iframe, #todo-app svg, #todo-app img").count() == 0
    assert page.locator("#todo-app [onerror], #todo-app [onload]").count() == 0
    hrefs = page.eval_on_selector_all("#todo-app a[href]", "links => links.map(a => a.getAttribute('href'))")
    assert not [href for href in hrefs if href.strip().lower().startswith("javascript:")]


def test_list_shows_who_holds_a_claim_and_releases_it(page, live_server, alice):
    """An agent's claim on /list: who and until when, its name shown as text however it is spelt, and a button
    that hands the todo back without reloading the page."""
    hostile = "<img/src=x/onerror=alert('by')>"
    todo_services.todo_put(owner=alice.user, key="deploy", name="Deploy the API", description="")
    todo_services.todo_put(owner=alice.user, key="free", name="Nobody on it", description="")
    claim = leases.todo_claim(owner=alice.user, key="deploy", by=hostile, minutes=45)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(link_for(alice, live_server))
    badge = todo_item(page, "deploy").locator(".badge.claimed")
    until = f"{claim.claimed_until:%Y-%m-%d %H:%M}"
    assert badge.inner_text() == f"@{hostile} until {until} UTC"
    assert todo_item(page, "free").locator(".badge.claimed").count() == 0
    assert todo_item(page, "free").get_by_role("button", name="Release Nobody on it").count() == 0
    page.wait_for_load_state("load")
    assert dialogs == [] and page.locator("#todo-app img, #todo-app [onerror]").count() == 0
    page.evaluate("window.__sameDocument = true")

    todo_item(page, "deploy").get_by_role("button", name="Release Deploy the API").click()
    todo_item(page, "deploy").locator(".badge.claimed").wait_for(state="detached")
    assert page.evaluate("window.__sameDocument") is True
    assert todo_get(owner=alice.user, key="deploy").claimed_by == ""
    assert dialogs == []


# ---------------------------------------------------------------- account


def test_log_in_make_a_key_and_revoke_it(page, live_server, alice):
    alice.user.set_password("correct horse battery")
    alice.user.save()
    page.goto("/account/")
    page.wait_for_url(re.compile(r"/accounts/login/\?next=/account/"))
    page.fill("#id_username", "alice")
    page.fill("#id_password", "correct horse battery")
    shoot(page, "login")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/account/$"))
    assert page.locator("#uid").inner_text() == alice.user.account.uid

    page.fill("#key-name", "laptop agent")
    page.get_by_role("button", name="Make a key").click()
    raw = page.locator("#new-key").inner_text().strip()
    assert raw.startswith("pbx_")
    key = ApiKey.objects.get(user=alice.user, name="laptop agent")
    assert key.key_hash == hash_key(raw)
    shoot(page, "account")

    page.goto("/account/")
    assert page.locator("#new-key").count() == 0 and raw not in page.content()
    page.locator(f'tr[data-key-prefix="{key.prefix}"]').get_by_role("button", name="Revoke").click()
    page.locator(f'tr[data-key-prefix="{key.prefix}"] .badge.discarded').wait_for()
    key.refresh_from_db()
    assert key.revoked_at is not None

    page.get_by_role("button", name="Log out").click()
    page.goto("/account/")
    page.wait_for_url(re.compile(r"/accounts/login/"))


# ---------------------------------------------------------------- memory


def test_browse_a_bottle_down_to_a_pill_edit_discard_restore(page, live_server, alice, tmp_path):
    memory = make_memory(alice, local_dir=tmp_path / "toolbox")
    page.context.add_cookies([session_cookie(alice, live_server.url)])
    page.goto("/")
    page.get_by_role("link", name="Memory", exact=True).click()
    page.locator("table.bottles").wait_for()
    assert page.locator('tr[data-bottle="toolbox"] .badge.local').is_visible()
    shoot(page, "memory-bottles")

    page.get_by_role("link", name="Web shop").click()
    page.locator("figure.chart svg rect.bar").first.wait_for()
    shoot(page, "memory-bottle")
    page.get_by_role("link", name="Checkout rewrite").click()
    page.locator("table.pills").wait_for()
    shoot(page, "memory-prescription")
    page.get_by_role("link", name="Payments go through Stripe webhooks").click()
    page.wait_for_url(re.compile(rf"/pillbox/pills/{memory.pill.hex}/$"))
    assert page.locator(".md.rendered strong").inner_text() == "confirm"
    page.locator("details.raw summary").click()
    assert "We **confirm** orders" in page.locator("pre.raw-content").inner_text()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_role("button", name="Copy id").click()
    assert page.evaluate("navigator.clipboard.readText()") == memory.pill.hex[:12]
    shoot(page, "memory-pill")

    page.fill("#id_title", "Orders are confirmed by Stripe webhooks only")
    page.get_by_role("button", name="Save").click()
    page.locator("h1", has_text="Orders are confirmed by Stripe webhooks only").wait_for()
    assert Pill.objects.get(pk=memory.pill).title == "Orders are confirmed by Stripe webhooks only"

    page.get_by_role("button", name="Discard").click()
    page.locator(".badge.discarded").wait_for()
    assert Pill.objects.get(pk=memory.pill).deleted_at is not None
    page.get_by_role("button", name="Restore").click()
    page.get_by_role("button", name="Discard").wait_for()
    assert Pill.objects.get(pk=memory.pill).deleted_at is None

    page.goto(f"/pillbox/pills/{memory.closed_pill.hex}/")
    assert page.locator(".edit-refused").is_visible() and page.locator("#id_title").count() == 0
    # What the notice says is what the page offers: nothing that changes the pill, only reopening.
    assert "cannot be edited, discarded or purged" in page.locator(".edit-refused").inner_text()
    for changing in ("Discard", "Purge for good"):
        assert page.get_by_role("button", name=changing).count() == 0, changing
    assert page.get_by_role("button", name="Reopen the prescription").is_visible()

    page.goto("/pillbox/capsules/")
    page.select_option("#compound-filter", "convention")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"compound=convention"))
    assert page.locator("table.capsules tbody tr").count() == 1
    shoot(page, "memory-capsules")


def test_search_with_a_typo_shows_the_fuzzy_indicator(page, live_server, alice, tmp_path):
    make_memory(alice, local_dir=tmp_path / "toolbox")
    page.context.add_cookies([session_cookie(alice, live_server.url)])
    page.goto("/pillbox/")
    page.fill("#memory-q", "stripe webhoks")
    page.locator("#memory-q").press("Enter")
    page.locator(".results.pills .hit").first.wait_for()
    assert page.locator(".fuzzy-note").is_visible()
    assert "Payments go through Stripe webhooks" in page.locator(".results.pills").inner_text()
    # How the first result matched, and which correction was made.
    assert page.locator("h2 .badge.match").first.inner_text() == "corrected words"
    assert page.locator(".corrections").first.inner_text() == "corrected: webhoks → webhooks"
    shoot(page, "memory-search")
    page.fill("#q", "stripe webhooks")
    page.get_by_role("button", name="Search", exact=True).last.click()
    page.wait_for_url(re.compile(r"q=stripe\+webhooks"))
    assert page.locator(".fuzzy-note").count() == 0 and page.locator(".corrections").count() == 0
    assert page.locator("h2 .badge.match").first.inner_text() == "all words"
    # How sure the first result is: every word matched (medium by words alone, high when meaning agrees).
    assert page.locator("h2 .badge.confidence").first.inner_text() in ("confidence: medium", "confidence: high")
    # A time: the Since field keeps to the rows written then, and the page says which window it searched.
    page.fill("#since", "yesterday")
    page.get_by_role("button", name="Search", exact=True).last.click()
    page.wait_for_url(re.compile(r"since=yesterday"))
    assert page.locator(".time-line").inner_text().startswith("time: since ")
    assert "Payments go through Stripe webhooks" in page.locator(".results.pills").inner_text()


@pytest.mark.parametrize(("path", "server"), [("/mcp", "Todos"), ("/pillbox/mcp", "Pillbox")])
def test_an_mcp_endpoint_opened_in_a_browser_says_what_it_is(page, live_server, path, server):
    """The page is what the browser asked for: a 200, and nothing in the console (a 405 is logged as an error);
    a protocol client's GET still gets the bare 405."""
    logged: list[str] = []
    page.on("console", lambda message: logged.append(f"{message.type}: {message.text}"))
    response = page.goto(path)
    assert response.status == 200
    assert page.locator("h1").inner_text() == f"The {server} MCP endpoint"
    text = page.locator("main").inner_text()
    assert f"{live_server.url}{path}" in text or path in text
    assert "Authorization: Bearer <key>" in text and "manage.py connect claude-code --write --hooks" in text
    assert [line for line in logged if line.startswith("error")] == []
    protocol = page.request.get(path, headers={"Accept": "text/event-stream"})
    assert protocol.status == 405 and protocol.headers["allow"] == "POST"


def test_every_page_has_the_favicon(page, live_server):
    page.goto("/accounts/login/")
    icon = page.locator("link[rel=icon]").get_attribute("href")
    for url in (icon, "/favicon.ico"):
        response = page.request.get(url)
        assert response.status == 200 and response.body()[:4] == b"\x00\x00\x01\x00", url  # an ICO file
        assert response.headers["content-type"] in ("image/x-icon", "image/vnd.microsoft.icon"), url
