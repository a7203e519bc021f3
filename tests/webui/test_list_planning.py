"""/list and planning: tags shown and editable, blocked todos marked, the "next" section, edits keep blockers."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

from django.test import Client

from todos import services
from todos.access import list_url
from todos.models import Todo
from todos.selectors import todo_get


def _link(person) -> str:
    return list_url(user=person.user).removeprefix("http://127.0.0.1:8000")


def _token(person) -> str:
    return parse_qs(urlsplit(_link(person)).query)["t"][0]


def _put(person, key: str, name: str, **fields) -> Todo:
    return services.todo_put(owner=person.user, key=key, name=name, description=fields.pop("description", ""), **fields)


def _next_section(html: str) -> list[str]:
    section = re.search(r'<section class="next".*?</section>', html, re.S)
    assert section, "no next section"
    return re.findall(r'<li><a href="#todo-([^"]+)">', section.group(0))


def test_list_shows_tags_blocked_state_and_what_is_next(alice):
    _put(alice, "schema", "Design the schema", tags=["db", "backend"])
    _put(alice, "api", "Build the API", priority="high", blocked_by=["schema"])
    _put(alice, "late", "Late one", priority="low", deadline_at=datetime.now(UTC) - timedelta(days=1))
    _put(alice, "done", "Done one", priority="high")
    services.todo_complete(owner=alice.user, key="done")
    html = Client().get(_link(alice)).content.decode()
    assert _next_section(html) == ["late", "schema"]  # overdue first; the blocked API and the done one are not next
    start = html.index('id="todo-schema"')
    schema = html[start : html.index('id="todo-', start + 1)]
    assert '<span class="tag">#db</span>' in schema and '<span class="tag">#backend</span>' in schema
    assert re.search(r'class="todo pending blocked" id="todo-api"', html)
    assert re.search(r'blocked by <a href="#todo-schema">schema</a>', html)
    services.todo_complete(owner=alice.user, key="schema")
    html = Client().get(_link(alice)).content.decode()
    assert _next_section(html) == ["late", "api"] and "blocked by" not in html


def test_list_without_pending_todos_has_no_next_section(alice):
    assert 'class="next"' not in Client().get(_link(alice)).content.decode()


def test_list_adds_and_edits_tags_and_an_edit_keeps_what_a_todo_waits_on(alice):
    client, token = Client(), _token(alice)
    response = client.post("/list/add", {"t": token, "id": "first", "name": "First", "tags": "#Backend, ui ui"})
    assert response.status_code == 303
    assert todo_get(owner=alice.user, key="first").tags == ["backend", "ui"]
    _put(alice, "second", "Second", blocked_by=["first"])
    response = client.post("/list/edit", {"t": token, "id": "second", "name": "Second, renamed", "tags": "later"})
    assert response.status_code == 303
    second = todo_get(owner=alice.user, key="second")
    assert (second.name, second.tags, second.blocked_by) == ("Second, renamed", ["later"], ["first"])
    # The edit form shows the tags as the person would type them.
    html = client.get(_link(alice)).content.decode()
    assert re.search(r'name="tags" value="later"', html) and re.search(r'name="tags" value="backend, ui"', html)
    # A blocker deleted since does not stop an edit (it no longer holds anything up).
    services.todo_delete(owner=alice.user, key="first")
    assert client.post("/list/edit", {"t": token, "id": "second", "name": "Again"}).status_code == 303
    assert todo_get(owner=alice.user, key="second").tags == []


def test_list_refuses_bad_tags_and_keeps_what_was_typed(alice):
    client, token = Client(), _token(alice)
    response = client.post("/list/add", {"t": token, "name": "Tagged", "tags": "ok, no/slash"})
    html = response.content.decode()
    assert response.status_code == 400 and "must be a lowercase word" in html and "no/slash" in html
    assert not Todo.objects.filter(owner=alice.user).exists()
    many = ", ".join(f"t{number}" for number in range(21))
    response = client.post("/list/add", {"t": token, "name": "Tagged", "tags": many})
    assert response.status_code == 400 and "at most 20 items, got 21" in response.content.decode()
