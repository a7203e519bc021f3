"""The memory browser's tidy-up: a person sees a bottle's duplicates, applies the plan and undoes it, in a real
browser (Playwright on Debian's Chromium); another user gets nothing, and a POST without its CSRF token is
refused."""

from __future__ import annotations

import re
import uuid

from django.test import Client

from pillbox import services
from pillbox.models import Pill, Tidy
from tests.webui.conftest import AUTHOR, http_reach
from tests.webui.test_browser import browser, page, pytestmark, session_cookie, shoot  # noqa: F401 (fixtures)

LESSON = ("Run migrations before deploy", "Always run the database migrations before deploying the web app.")


def bottle_with_duplicates(person) -> tuple[uuid.UUID, list[uuid.UUID]]:
    reach = http_reach(person)
    bottle = services.bottle_create(reach=reach, name="webshop", display_name="Web shop", scope="global")
    reach = http_reach(person)
    rx = services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title="Deploys", **AUTHOR)
    texts = [LESSON, (LESSON[0].lower(), LESSON[1].rstrip(".")),
             ("HTTP timeout", "Set the HTTP client timeout to 30s."),
             ("HTTP timeout", "Set the HTTP client timeout to 60s.")]
    pills = [services.pill_store(reach=reach, prescription_id=rx.id.hex, title=title, content=content,
                                 compound="note", **AUTHOR).id for title, content in texts]
    return bottle.id, pills


def marks(pills: list[uuid.UUID]) -> list[uuid.UUID | None]:
    return [Pill.objects.get(pk=pill).superseded_by_id for pill in pills]


def test_tidy_page_shows_the_plan_applies_it_and_undoes_it(page, live_server, alice):  # noqa: F811
    bottle, pills = bottle_with_duplicates(alice)
    page.context.add_cookies([session_cookie(alice, live_server.url)])
    page.goto(f"/pillbox/bottles/{bottle.hex}/")
    page.get_by_role("link", name="Tidy up duplicates").click()
    page.wait_for_url(re.compile(rf"/pillbox/bottles/{bottle.hex}/tidy$"))
    group = page.locator('tbody[data-group="1"]')
    assert group.locator("tr.keeper").inner_text().count(pills[1].hex[:12]) == 1  # the newest is kept
    assert pills[0].hex[:12] in group.locator("tr.other").inner_text()
    assert page.locator('tbody[data-group="2"]').count() == 0  # the 30s and 60s settings stay apart
    shoot(page, "memory-tidy")

    page.get_by_role("button", name="Apply the ticked groups").click()
    page.locator(".messages li.success", has_text="Tidied: 1 pill superseded").wait_for()
    assert marks(pills) == [pills[1], None, None, None]
    assert page.locator("p.empty", has_text="No duplicates found").is_visible()

    page.get_by_role("button", name="Undo").click()
    page.locator(".messages li.success", has_text="undone").wait_for()
    assert marks(pills) == [None] * 4
    assert page.locator("table.tidies .badge.discarded", has_text="undone").is_visible()
    assert page.locator('tbody[data-group="1"]').is_visible()  # offered again


def test_tidy_page_another_user_and_csrf(alice, bob):
    bottle, pills = bottle_with_duplicates(alice)
    owner = Client(enforce_csrf_checks=True)
    owner.force_login(alice.user)
    shown = owner.get(f"/pillbox/bottles/{bottle.hex}/tidy")
    assert shown.status_code == 200
    plan = re.search(r'name="plan" value="([0-9a-f]{32})"', shown.content.decode())
    assert plan is not None
    # Without the CSRF token the POST is refused and nothing changes.
    refused = owner.post(f"/pillbox/bottles/{bottle.hex}/tidy/apply", {"plan": plan[1], "group": ["1"]})
    assert refused.status_code == 403 and marks(pills) == [None] * 4

    stranger = Client()
    stranger.force_login(bob.user)
    assert stranger.get(f"/pillbox/bottles/{bottle.hex}/tidy").status_code == 404
    assert stranger.post(f"/pillbox/bottles/{bottle.hex}/tidy/apply",
                         {"plan": plan[1], "group": ["1"]}).status_code == 404
    assert marks(pills) == [None] * 4

    friend = Client()
    friend.force_login(alice.user)
    empty = friend.post(f"/pillbox/bottles/{bottle.hex}/tidy/apply", {"plan": plan[1]}, follow=True)
    assert "Tick at least one group" in empty.content.decode() and marks(pills) == [None] * 4
    friend.post(f"/pillbox/bottles/{bottle.hex}/tidy/apply", {"plan": plan[1], "group": ["1"]})
    assert marks(pills) == [pills[1], None, None, None]
    tidy = Tidy.objects.get()
    assert stranger.post(f"/pillbox/bottles/{bottle.hex}/tidy/{tidy.id.hex}/undo").status_code == 404
    assert marks(pills) == [pills[1], None, None, None]
