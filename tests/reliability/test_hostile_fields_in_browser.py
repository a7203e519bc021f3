"""XSS through the newer fields (third round, item 6), in a real browser: todo ids that blockers name, tags (as the
tools take them, and as a row written past the tools would hold them) on /list, including the list re-rendered in
place by list.js; and hostile titles, names and a search query in the memory browser. Nothing may run."""

from __future__ import annotations

import json

import pytest

from pillbox import services as pillbox_services
from tests.webui.conftest import AUTHOR, http_reach
from tests.webui.test_browser import CHROMIUM, browser, link_for, page, session_cookie  # noqa: F401
from todos import services as todo_services
from todos.models import Todo

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's Chromium at /usr/bin/chromium")

# Ids allow anything but control characters and whitespace: the blocker badge links to the id it names.
HOSTILE_ID = "x\"'><svg/onload=window.__xss=1>"
HOSTILE_TAGS = ["<img src=x onerror=window.__xss=2>", "\"><script>window.__xss=3</script>", "a' onmouseover='x"]
HOSTILE_TEXT = "<img src=x onerror=window.__xss=4><script>window.__xss=5</script>"


def todo_item(page, key: str):  # noqa: F811 - the fixture's name
    return page.locator(f"li.todo[data-id={json.dumps(key)}]")  # a CSS string: the same escapes as JSON's


def _inert(page, scope: str) -> None:  # noqa: F811 - the fixture's name
    page.wait_for_load_state("load")
    assert page.evaluate("window.__xss") is None
    assert page.locator(f"{scope} script, {scope} iframe, {scope} img, {scope} svg[onload]").count() == 0
    handlers = page.eval_on_selector_all(
        f"{scope} *", "nodes => nodes.flatMap(n => [...n.attributes].map(a => a.name)).filter(n => n.startsWith('on'))"
    )
    assert handlers == []


def test_ids_blockers_and_tags_on_the_list_render_inert(page, live_server, alice):  # noqa: F811
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    todo_services.todo_put(owner=alice.user, key=HOSTILE_ID, name=HOSTILE_TEXT, description="", tags=["ok"])
    todo_services.todo_put(
        owner=alice.user, key="waits", name="Waits", description="", tags=["needs-review"], blocked_by=[HOSTILE_ID]
    )
    # A row written past the tools' rules (an old import, a direct write): the page must still show it inert.
    Todo.objects.filter(owner=alice.user, key="waits").update(tags=HOSTILE_TAGS)
    page.goto(link_for(alice, live_server))
    waiting = todo_item(page, "waits")
    assert HOSTILE_ID in waiting.locator(".badge.blocked").inner_text()
    assert "<img src=x onerror=window.__xss=2>" in waiting.inner_text()
    assert HOSTILE_TEXT in todo_item(page, HOSTILE_ID).inner_text()
    _inert(page, "#todo-app")
    # Completing the blocker re-renders the list in place (list.js puts the server's fragment in with innerHTML).
    todo_item(page, HOSTILE_ID).locator("form[data-inplace] button").first.click()
    page.locator('ul.todos.completed li.todo').first.wait_for()
    _inert(page, "#todo-app")
    assert dialogs == []


def test_hostile_titles_names_and_queries_in_the_memory_browser_render_inert(page, live_server, alice):  # noqa: F811
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    bottle = pillbox_services.bottle_create(
        reach=http_reach(alice), name="hostile", display_name=HOSTILE_TEXT, scope="global"
    )
    reach = http_reach(alice)  # a reach keeps the bottles it read: a fresh one sees the new bottle
    rx = pillbox_services.prescription_open(reach=reach, bottle_id=bottle.id.hex, title=HOSTILE_TEXT, **AUTHOR)
    pill = pillbox_services.pill_store(
        reach=reach, prescription_id=rx.id.hex, title=HOSTILE_TEXT, content=HOSTILE_TEXT, compound="bug", **AUTHOR
    )
    pillbox_services.capsule_store(reach=reach, title=HOSTILE_TEXT, content=HOSTILE_TEXT, compound="convention")
    page.context.add_cookies([session_cookie(alice, live_server.url)])
    for path in (
        "/pillbox/",
        f"/pillbox/bottles/{bottle.id.hex}/",
        f"/pillbox/pills/{pill.id.hex}/",
        "/pillbox/capsules/",
        "/pillbox/search?q=" + "%3Cscript%3Ewindow.__xss%3D6%3C%2Fscript%3E+onerror+img",
    ):
        page.goto(path)
        _inert(page, "main")
    assert dialogs == []
