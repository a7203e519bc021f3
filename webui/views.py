from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from todos.access import list_key_user, list_link_user
from todos.selectors import todo_list, todo_usage


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "webui/home.html")


def _list_owner(request: HttpRequest) -> AbstractBaseUser | None | HttpResponse:
    """The user whose list this request opens; None when it carries credentials that open nothing.

    Credentials in the URL are judged on their own: a bad link is refused even for a logged-in person,
    who would otherwise be shown their own list while believing it is the one the link names.
    """
    token, uid, key = request.GET.get("t"), request.GET.get("uid"), request.GET.get("key")
    if token is not None:
        return list_link_user(token)
    if uid is not None or key is not None:
        return list_key_user(uid=uid, key=key) if uid and key else None
    if request.user.is_authenticated:
        return request.user
    return redirect_to_login(request.get_full_path())


def todo_list_page(request: HttpRequest) -> HttpResponse:
    owner = _list_owner(request)
    if isinstance(owner, HttpResponse):
        return owner
    if owner is None:
        response = render(request, "webui/list_denied.html", status=403)
    else:
        todos = todo_list(owner=owner, include_completed=True)
        context = {
            "pending": [todo for todo in todos if todo.completed_at is None],
            "completed": [todo for todo in todos if todo.completed_at is not None],
            "usage": todo_usage(owner=owner),
        }
        response = render(request, "webui/list.html", context)
    # The URL may hold a key or a link token: keep it out of Referer headers and shared caches.
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "private, no-store"
    response["X-Robots-Tag"] = "noindex"
    return response
