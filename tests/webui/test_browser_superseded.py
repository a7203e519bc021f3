"""Superseded pills and capsules in the memory browser, in a real browser: shown (people see what agents no longer
find), marked with the newer one's id and a link to it, and brought back with a button."""

from __future__ import annotations

import re

from pillbox import services, superseding
from pillbox.models import Capsule, Pill
from tests.webui import test_browser as walks
from tests.webui.conftest import AUTHOR, http_reach, make_memory
from tests.webui.test_browser import session_cookie

# The browser walks' own fixtures and skip condition (no Chromium, no Playwright: skipped, saying why).
browser, page, pytestmark = walks.browser, walks.page, walks.pytestmark


def test_a_superseded_pill_is_marked_linked_and_brought_back(page, live_server, alice):
    memory = make_memory(alice)
    reach = http_reach(alice)
    newer = services.pill_store(reach=reach, prescription_id=memory.open_rx.hex, title="Django and htmx",
                                content="Still one Django project; the pages use htmx.", compound="decision",
                                supersedes=[memory.closed_pill.hex], **AUTHOR)
    page.context.add_cookies([session_cookie(alice, live_server.url)])

    page.goto(f"/pillbox/prescriptions/{memory.closed_rx.hex}/")
    row = page.locator("table.pills tbody tr", has_text="Django monolith")
    assert "superseded" in (row.get_attribute("class") or "")
    assert row.locator(".badge.superseded").inner_text() == f"superseded by {newer.id.hex[:12]}"
    row.locator(".badge.superseded a").click()
    page.wait_for_url(re.compile(rf"/pillbox/pills/{newer.id.hex}/$"))
    assert page.locator("dd.supersedes").inner_text() == memory.closed_pill.hex[:12]
    page.locator("dd.supersedes a").click()
    page.wait_for_url(re.compile(rf"/pillbox/pills/{memory.closed_pill.hex}/$"))
    assert page.locator(".superseded-note").is_visible()

    page.get_by_role("button", name="Bring back").click()
    page.locator(".messages li", has_text="Pill brought back").wait_for()
    assert page.locator(".badge.superseded").count() == 0
    assert Pill.objects.get(pk=memory.closed_pill).superseded_by_id is None
    assert Pill.objects.get(pk=newer.id).superseded_by_id is None  # nothing else changed


def test_a_superseded_capsule_is_marked_in_the_list(page, live_server, alice):
    memory = make_memory(alice)
    newer = services.capsule_store(reach=http_reach(alice), title="Commit subjects: imperative, 50 characters",
                                   content="Add X, under 50 characters.", compound="convention",
                                   supersedes=[memory.capsule.hex])
    page.context.add_cookies([session_cookie(alice, live_server.url)])
    page.goto("/pillbox/capsules/")
    row = page.locator("table.capsules tbody tr", has_text="Commit messages in the imperative")
    assert row.locator(".badge.superseded").inner_text() == f"superseded by {newer.id.hex[:12]}"
    row.get_by_role("link", name="Commit messages in the imperative").click()
    page.get_by_role("button", name="Bring back").click()
    page.locator(".messages li", has_text="Capsule brought back").wait_for()
    assert Capsule.objects.get(pk=memory.capsule).superseded_by_id is None
    superseding.capsule_supersede(reach=http_reach(alice), capsule_id=newer.id.hex, supersedes=[memory.capsule.hex])
    page.goto("/pillbox/capsules/")
    assert page.locator("tr.superseded").count() == 1
