"""/list's planning parts in a real browser: the Next section, blocked todos, tags edited in place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.webui import test_browser as walks
from tests.webui.test_browser import link_for, todo_item
from todos import services as todo_services
from todos.selectors import todo_get

# The browser walks' own fixtures and skip condition (no Chromium, no Playwright: skipped, saying why).
browser, page, pytestmark = walks.browser, walks.page, walks.pytestmark


def next_ids(page) -> list[str]:
    return [
        href.removeprefix("#todo-")
        for href in page.locator("section.next li a").evaluate_all(
            "links => links.map(link => link.getAttribute('href'))"
        )
    ]


def test_list_next_blocked_and_tags_walk(page, live_server, alice):
    put = todo_services.todo_put
    put(owner=alice.user, key="schema", name="Design the schema", description="", tags=["db"])
    put(owner=alice.user, key="api", name="Build the API", description="", priority="high", blocked_by=["schema"])
    put(
        owner=alice.user,
        key="late",
        name="Late errand",
        description="",
        priority="low",
        deadline_at=datetime.now(UTC) - timedelta(days=1),
    )
    page.goto(link_for(alice, live_server))
    assert next_ids(page) == ["late", "schema"]
    api = todo_item(page, "api")
    assert api.locator(".badge.blocked").inner_text() == "blocked by schema"
    assert todo_item(page, "schema").locator(".tag").inner_text() == "#db"
    page.evaluate("window.__sameDocument = true")

    todo_item(page, "schema").get_by_role("button", name="Complete Design the schema").click()
    page.locator('ul.todos.completed li[data-id="schema"]').wait_for()
    assert next_ids(page) == ["late", "api"]
    assert todo_item(page, "api").locator(".badge.blocked").count() == 0

    api = todo_item(page, "api")
    api.locator("details.edit summary").click()
    api.locator('input[name="tags"]').fill("Backend, #urgent")
    api.get_by_role("button", name="Save").click()
    page.locator('li[data-id="api"] .tag', has_text="#urgent").wait_for()
    assert page.evaluate("window.__sameDocument") is True

    page.reload()
    assert todo_item(page, "api").locator(".tag").all_inner_texts() == ["#backend", "#urgent"]
    stored = todo_get(owner=alice.user, key="api")
    assert (stored.tags, stored.blocked_by, stored.priority) == (["backend", "urgent"], ["schema"], "high")
