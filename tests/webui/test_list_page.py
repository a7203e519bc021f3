"""/list through Django's test client: who may open it, every action without JavaScript, the fragment the
page swaps in with JavaScript, CSRF, isolation between users, and Markdown rendered inert."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from todos import services
from todos.access import list_url
from todos.models import Todo
from todos.selectors import todo_get
from webui.todo_tree import todo_tree

XSS = (
    "Hello **there**\n\n<script>window.__xss = 1; alert('script')</script>\n\n"
    "<img src=x onerror=\"alert('img')\">\n\n[click me](javascript:alert('link'))\n\n"
    "<a href=\"JaVaScRiPt:alert('caps')\">caps</a> <svg onload=alert('svg')></svg>"
    "<iframe src=\"javascript:alert('frame')\"></iframe>"
)


def _link(person) -> str:
    return list_url(user=person.user).removeprefix("http://127.0.0.1:8000")


def _token(person, link: str | None = None) -> str:
    """The token of ``link``, or of a new link (every get_list_url call makes its own)."""
    return parse_qs(urlsplit(link or _link(person)).query)["t"][0]


def _put(person, key: str, name: str, **fields) -> Todo:
    return services.todo_put(owner=person.user, key=key, name=name, description=fields.pop("description", ""), **fields)


def _hidden(html: str, name: str) -> set[str]:
    return set(re.findall(rf'<input type="hidden" name="{name}" value="([^"]*)"', html))


def test_list_page_opened_by_link_posts_the_link_back_and_never_a_key(alice):
    _put(alice, "a", "Alice's plan")
    link = _link(alice)
    page = Client().get(link)
    html = page.content.decode()
    assert page.status_code == 200
    assert _hidden(html, "t") == {_token(alice, link)}
    assert alice.key not in html and 'name="key"' not in html and 'name="uid"' not in html
    assert page["Referrer-Policy"] == "strict-origin" and "no-store" in page["Cache-Control"]


def test_list_page_opened_by_key_posts_that_key_back(alice):
    page = Client().get("/list", {"uid": alice.uid, "key": alice.key})
    html = page.content.decode()
    assert _hidden(html, "key") == {alice.key} and _hidden(html, "uid") == {alice.uid}
    assert 'name="t"' not in html


def test_list_page_opened_by_session_carries_no_credentials(alice):
    client = Client()
    client.force_login(alice.user)
    html = client.get("/list").content.decode()
    assert not _hidden(html, "t") and not _hidden(html, "key") and alice.key not in html


def test_list_page_refuses_anonymous_and_bad_credentials(alice):
    assert Client().get("/list")["Location"].startswith("/accounts/login/")
    assert Client().get("/list", {"uid": alice.uid, "key": "pbx_wrong"}).status_code == 403
    assert Client().get("/list", {"uid": "nobody", "key": alice.key}).status_code == 403
    assert Client().post("/list/add", {"name": "x"})["Location"].startswith("/accounts/login/")
    assert Client().post("/list/add", {"name": "x", "t": "forged"}).status_code == 403
    assert Client().get("/list/add").status_code == 405


def test_list_actions_work_without_javascript_and_redirect_back_with_the_link(alice):
    client, token = Client(), _token(alice)
    response = client.post(
        "/list/add",
        {
            "t": token,
            "name": "Buy oat milk",
            "priority": "high",
            "description": "2 litres",
            "deadline": "2030-01-02T09:30",
        },
    )
    assert response.status_code == 303
    assert response["Location"] == f"/list?t={token.replace(':', '%3A')}#todo-buy-oat-milk"
    todo = todo_get(owner=alice.user, key="buy-oat-milk")
    assert (todo.priority, todo.description, todo.deadline_at) == (
        "high",
        "2 litres",
        datetime(2030, 1, 2, 9, 30, tzinfo=UTC),
    )

    client.post("/list/add", {"t": token, "name": "Pour it", "parent": "buy-oat-milk", "priority": "low"})
    assert todo_get(owner=alice.user, key="pour-it").links == ["buy-oat-milk"]
    client.post("/list/add", {"t": token, "name": "Buy oat milk", "priority": "medium"})
    assert todo_get(owner=alice.user, key="buy-oat-milk-2").name == "Buy oat milk"

    assert client.post("/list/complete", {"t": token, "id": "buy-oat-milk"}).status_code == 303
    assert todo_get(owner=alice.user, key="buy-oat-milk").completed_at is not None
    client.post(
        "/list/edit",
        {
            "t": token,
            "id": "buy-oat-milk",
            "name": "Buy soy milk",
            "priority": "low",
            "description": "",
            "deadline": "",
            "links": "",
        },
    )
    edited = todo_get(owner=alice.user, key="buy-oat-milk")
    assert (edited.name, edited.priority, edited.deadline_at) == ("Buy soy milk", "low", None)
    assert edited.completed_at is not None  # editing keeps it done
    client.post("/list/reopen", {"t": token, "id": "buy-oat-milk"})
    assert todo_get(owner=alice.user, key="buy-oat-milk").completed_at is None

    client.post("/list/delete", {"t": token, "id": "buy-oat-milk"})
    assert todo_get(owner=alice.user, key="buy-oat-milk", include_deleted=True).deleted_at is not None
    page = client.get(_link(alice)).content.decode()
    assert "Buy soy milk" not in page
    response = client.post("/list/restore", {"t": token, "id": "buy-oat-milk", "show": "deleted"})
    assert "show=deleted" in response["Location"]
    assert todo_get(owner=alice.user, key="buy-oat-milk").deleted_at is None

    client.post("/list/delete", {"t": token, "id": "pour-it"})
    assert "Pour it" in client.get(_link(alice) + "&show=deleted").content.decode()
    # Purging is for people signed in, never for the holder of a link.
    assert client.post("/list/purge", {"t": token, "id": "pour-it"}).status_code == 403
    assert Todo.objects.filter(owner=alice.user, key="pour-it").exists()
    person = Client()
    person.force_login(alice.user)
    person.post("/list/purge", {"id": "pour-it"})
    assert not Todo.objects.filter(owner=alice.user, key="pour-it").exists()


def test_list_purge_only_takes_deleted_todos(alice):
    _put(alice, "live", "Still wanted")
    person = Client()
    person.force_login(alice.user)
    response = person.post("/list/purge", {"id": "live"})
    assert response.status_code == 400 and "Todo not found" in response.content.decode()
    assert Todo.objects.filter(owner=alice.user, key="live").exists()


def test_list_actions_by_key_and_by_session(alice):
    Client().post("/list/add", {"uid": alice.uid, "key": alice.key, "name": "By key"})
    client = Client()
    client.force_login(alice.user)
    response = client.post("/list/add", {"name": "By session"})
    assert response["Location"] == "/list#todo-by-session"
    assert {t.key for t in Todo.objects.filter(owner=alice.user)} == {"by-key", "by-session"}


def test_list_fragment_for_javascript(alice):
    response = Client().post(
        "/list/add", {"t": _token(alice), "name": "Fetch me"}, headers={"X-Requested-With": "fetch"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and response["X-Partial"] == "todo-app"
    assert html.lstrip().startswith('<div id="todo-app">') and "<html" not in html and "Fetch me" in html


def test_list_refusals_show_why_and_keep_what_was_typed(alice):
    client, token = Client(), _token(alice)
    response = client.post("/list/add", {"t": token, "name": "", "description": "kept text", "deadline": "soon"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "kept text" in html and "must be a date" in html and "This field is required" in html
    _put(alice, "taken", "Taken")
    response = client.post("/list/add", {"t": token, "id": "taken", "name": "Other"})
    assert response.status_code == 400 and "exists already" in response.content.decode()
    assert todo_get(owner=alice.user, key="taken").name == "Taken"
    response = client.post(
        "/list/edit",
        {"t": token, "id": "taken", "name": "x" * 256, "priority": "high"},
        headers={"X-Requested-With": "fetch"},
    )
    assert response.status_code == 400 and "at most 255 characters" in response.content.decode()


def test_list_limit_is_explained(alice):
    alice.user.account.max_tasks = 1
    alice.user.account.save()
    _put(alice, "one", "One")
    response = Client().post("/list/add", {"t": _token(alice), "name": "Two"})
    assert response.status_code == 400 and "limit" in response.content.decode()


def test_list_actions_never_reach_another_users_todos(alice, bob):
    _put(alice, "shared-id", "Alice's")
    _put(bob, "shared-id", "Bob's")
    _put(bob, "bobs-only", "Bob's only")
    client = Client()
    client.post("/list/complete", {"t": _token(alice), "id": "shared-id"})
    assert todo_get(owner=bob.user, key="shared-id").completed_at is None
    assert todo_get(owner=alice.user, key="shared-id").completed_at is not None
    for verb in ("complete", "delete", "edit"):
        response = client.post(f"/list/{verb}", {"t": _token(alice), "id": "bobs-only", "name": "Mine now"})
        assert response.status_code == 400
    assert todo_get(owner=bob.user, key="bobs-only").name == "Bob's only"
    assert not Todo.objects.filter(owner=alice.user, key="bobs-only").exists()
    # A session as Alice with Bob's link acts on Bob's list: the link names the list, as the page said.
    page = Client().get(_link(bob)).content.decode()
    assert "Bob&#x27;s only" in page and "Alice" not in page


def test_list_posts_need_csrf(alice):
    client = Client(enforce_csrf_checks=True)
    assert client.post("/list/add", {"t": _token(alice), "name": "Forged"}).status_code == 403
    page = client.get(_link(alice)).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
    response = client.post("/list/add", {"t": _token(alice), "name": "Real", "csrfmiddlewaretoken": token})
    assert response.status_code == 303
    assert [t.name for t in Todo.objects.filter(owner=alice.user)] == ["Real"]


def test_list_renders_markdown_and_neutralises_html(alice):
    _put(alice, "xss", "Payload", description=XSS)
    html = Client().get(_link(alice)).content.decode()
    body = html.split('<div id="todo-app">', 1)[1].split("</main>", 1)[0]
    rendered = re.search(r'<div class="md">(.*?)</div>', body, re.S)[1]
    assert "<strong>there</strong>" in rendered and "click me" in rendered
    tags = re.findall(r"<[a-zA-Z][^>]*>", body)  # the edit form shows the raw text escaped, which is inert
    assert not [tag for tag in tags if re.match(r"<(script|img|svg|iframe)", tag, re.I)]
    assert not [tag for tag in tags if re.search(r"\son\w+=", tag, re.I)]
    assert not [tag for tag in tags if "javascript:" in tag.lower()]
    assert "window.__xss" not in rendered  # the script element went with its content


def test_list_shows_sub_tasks_under_their_root_overdue_and_usage(alice):
    _put(alice, "root", "Launch the site", priority="low")
    _put(alice, "child", "Write the copy", links=["root"], deadline_at=datetime.now(UTC) - timedelta(days=1))
    _put(alice, "later", "Later", deadline_at=datetime.now(UTC) + timedelta(days=3))
    html = Client().get(_link(alice)).content.decode()
    root = html.index('id="todo-root"')
    sub = html.index('<ul class="subtasks">', root)
    assert sub < html.index('id="todo-child"') < html.index("</ul>", sub)
    assert re.search(r'class="todo pending overdue" id="todo-child"', html)
    assert not re.search(r'overdue" id="todo-later"', html)
    assert "3 of 1200 todos used (0%)" in html


def test_todo_tree_survives_link_cycles():
    todos = [Todo(key="a", links=["b"]), Todo(key="b", links=["a"]), Todo(key="c", links=["a", "zzz"])]
    roots = todo_tree(todos)
    flat = []

    def walk(nodes):
        for node in nodes:
            flat.append(node.todo.key)
            walk(node.children)

    walk(roots)
    assert sorted(flat) == ["a", "b", "c"]
    assert [node.todo.key for node in roots] == ["a"]


@pytest.mark.parametrize("verb", ["nope", "list"])
def test_list_unknown_action_is_404(alice, verb):
    assert Client().post(f"/list/{verb}", {"t": _token(alice)}).status_code == 404
