"""The home page and the Todos page (/list) for people.

/list opens three ways: the signed link ``get_list_url`` hands out (``?t=``), the seed's ``?uid=&key=``, or a
logged-in session. A page opened by a link or a key has no session behind it, so its forms post those same
credentials back (hidden fields, never anything the visitor did not already hold); the actions work without
JavaScript (POST, then a redirect back) and, with it, answer with the re-rendered list that the page swaps in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from accounts.throttle import auth_failure_limit, failure, too_many
from todos import leases, services
from todos.access import list_key_user, list_link_user
from todos.exceptions import TodoError
from todos.selectors import todo_get, todo_list, todo_next, todo_usage
from todos.timestamps import clock
from webui.forms import TodoForm
from webui.todo_tree import todo_tree

LIST_VERBS = ("add", "edit", "complete", "reopen", "delete", "restore", "purge", "release")
NEXT_SHOWN = 5
# Actions that lose data for good: only a person signed in may take them, never a page opened by a link or key
# (an agent holding the key or link could otherwise do through the page what the API refuses it).
PEOPLE_ONLY_VERBS = frozenset({"purge"})
PARTIAL_HEADER = "X-Requested-With"
PARTIAL_VALUE = "fetch"


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "webui/home.html")


@dataclass
class ListAccess:
    owner: User
    # What the page carries in its links and forms: the credentials it was opened with, nothing else.
    credentials: dict[str, str] = field(default_factory=dict)


def _list_access(request: HttpRequest, params: QueryDict) -> ListAccess | None | HttpResponse:
    """Whose list these parameters open; None when they carry credentials that open nothing.

    Credentials are judged on their own: a bad link is refused even for a logged-in person, who would
    otherwise be shown their own list while believing it is the one the link names.
    """
    token, uid, key = params.get("t"), params.get("uid"), params.get("key")
    if token is not None or uid is not None or key is not None:
        if token is not None:
            access = ListAccess(user, {"t": token}) if (user := list_link_user(token)) else None
        else:
            user = list_key_user(uid=uid, key=key) if uid and key else None
            access = ListAccess(user, {"uid": uid, "key": key}) if user and uid and key else None
        # A good link or key always opens the list; guesses count against the same budget as the MCP endpoints.
        if access is None and (wait := failure(request, kind="auth", limit=auth_failure_limit(), identity=uid)):
            return too_many(wait, f"Too many failed links or keys; try again in {wait} seconds.",
                            content_type="text/plain")
        return access
    if request.user.is_authenticated:
        return ListAccess(request.user)
    return redirect_to_login(reverse("todo-list"))


def _private(response: HttpResponse) -> HttpResponse:
    # The URL may hold a key or a link token. strict-origin: no other site ever sees the path or query (links
    # in descriptions carry rel=noreferrer too), and same-origin form posts still carry a real Origin header,
    # which Django's CSRF check needs (no-referrer would make browsers send `Origin: null`).
    response["Referrer-Policy"] = "strict-origin"
    response["Cache-Control"] = "private, no-store"
    response["X-Robots-Tag"] = "noindex"
    return response


def _list_url(access: ListAccess, *, show_deleted: bool, anchor: str = "") -> str:
    query = dict(access.credentials)
    if show_deleted:
        query["show"] = "deleted"
    url = reverse("todo-list") + (f"?{urlencode(query)}" if query else "")
    return url + (f"#{anchor}" if anchor else "")


def _list_context(
    access: ListAccess,
    *,
    show_deleted: bool,
    add_form: TodoForm | None = None,
    error: str = "",
    failed: str = "",
    edit_form: TodoForm | None = None,
) -> dict[str, object]:
    todos = todo_list(owner=access.owner, include_completed=True, include_deleted=show_deleted)
    claims_at = clock.now()
    for todo in todos:
        # Who is on it, for the page: a claim whose lease ran out is nobody's.
        todo.live_claim = todo.claim_live(claims_at)
    pending = [todo for todo in todos if todo.deleted_at is None and todo.completed_at is None]
    completed = [todo for todo in todos if todo.deleted_at is None and todo.completed_at is not None]
    deleted = [todo for todo in todos if todo.deleted_at is not None]
    return {
        "next": todo_next(owner=access.owner, limit=NEXT_SHOWN),
        "pending": todo_tree(pending),
        "pending_count": len(pending),
        "completed": todo_tree(completed),
        "completed_count": len(completed),
        "deleted": deleted,
        "show_deleted": show_deleted,
        "usage": todo_usage(owner=access.owner),
        "now": timezone.now(),
        "credentials": access.credentials,
        # Purging is for people: a page opened by a link or key offers none.
        "can_purge": not access.credentials,
        "add_form": add_form or TodoForm(),
        "parents": pending,
        "error": error,
        "failed": failed,
        "edit_form": edit_form,
        "toggle_url": _list_url(access, show_deleted=not show_deleted),
        "self_url": _list_url(access, show_deleted=show_deleted),
    }


def _denied(request: HttpRequest) -> HttpResponse:
    return _private(render(request, "webui/list_denied.html", status=403))


def todo_list_page(request: HttpRequest) -> HttpResponse:
    access = _list_access(request, request.GET)
    if isinstance(access, HttpResponse):
        return access
    if access is None:
        return _denied(request)
    context = _list_context(access, show_deleted=request.GET.get("show") == "deleted")
    return _private(render(request, "webui/list.html", context))


def _new_key(owner: User, name: str) -> str:
    """A kebab-case id from the name, as agents are asked to make them, numbered if already taken."""
    base = slugify(name)[:100].strip("-") or "todo"
    candidate, number = base, 1
    while True:
        try:
            todo_get(owner=owner, key=candidate, include_deleted=True)
        except TodoError:
            return candidate
        number += 1
        candidate = f"{base}-{number}"


def _apply(verb: str, owner: User, post: QueryDict) -> tuple[str, TodoForm | None]:
    """Run one action; returns the id it touched and, for add and edit, the form (invalid when refused)."""
    if verb in ("add", "edit"):
        form = TodoForm(post)
        if not form.is_valid():
            return post.get("id", ""), form
        data = form.cleaned_data
        if verb == "add":
            key = data["id"] or _new_key(owner, data["name"])
            if data["id"]:
                try:
                    todo_get(owner=owner, key=key, include_deleted=True)
                    form.add_error("id", "a todo with this id exists already; pick another")
                    return key, form
                except TodoError:
                    pass
            links = data["links"] or ([post["parent"]] if post.get("parent") else [])
            completed_at, blocked_by = None, []
        else:
            key = data["id"]
            current = todo_get(owner=owner, key=key)
            # The page does not edit what a todo waits on; an edit keeps it.
            links, completed_at, blocked_by = data["links"], current.completed_at, current.blocked_by
        services.todo_put(
            owner=owner,
            key=key,
            name=data["name"],
            description=data["description"],
            priority=data["priority"],
            deadline_at=data["deadline"],
            links=links,
            completed_at=completed_at,
            tags=data["tags"],
            blocked_by=blocked_by,
        )
        return key, None
    key = post.get("id", "")
    action = {
        "complete": services.todo_complete,
        "reopen": services.todo_reopen,
        "delete": services.todo_delete,
        "restore": services.todo_restore,
        "purge": services.todo_purge,
    }.get(verb)
    if action is None:  # release: the person hands back whoever's claim it is
        leases.todo_release(owner=owner, key=key, holder=None)
    else:
        action(owner=owner, key=key)
    return key, None


@require_POST
def todo_action(request: HttpRequest, verb: str) -> HttpResponse:
    if verb not in LIST_VERBS:
        raise Http404
    access = _list_access(request, request.POST)
    if isinstance(access, HttpResponse):
        return access
    if access is None:
        return _denied(request)
    if verb in PEOPLE_ONLY_VERBS and (access.credentials or not request.user.is_authenticated):
        return _private(render(request, "webui/list_denied.html", {"people_only": True}, status=403))
    show_deleted = request.POST.get("show") == "deleted"
    partial = request.headers.get(PARTIAL_HEADER) == PARTIAL_VALUE
    error, form = "", None
    try:
        key, form = _apply(verb, access.owner, request.POST)
    except TodoError as exc:
        key, error = request.POST.get("id", ""), exc.message
    refused = bool(error) or (form is not None and not form.is_valid())
    if not refused and not partial:
        anchor = f"todo-{key}" if verb not in ("purge",) else ""
        return HttpResponseRedirect(_list_url(access, show_deleted=show_deleted, anchor=anchor), status=303)
    context = _list_context(
        access,
        show_deleted=show_deleted,
        add_form=form if verb == "add" and refused else None,
        edit_form=form if verb == "edit" and refused else None,
        error=error or ("Check the fields marked below." if refused else ""),
        failed=key if refused else "",
    )
    template = "webui/_list_app.html" if partial else "webui/list.html"
    response = render(request, template, context, status=400 if refused else 200)
    if partial:
        response["X-Partial"] = "todo-app"
    return _private(response)
