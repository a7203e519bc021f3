"""The routes under ``/api/todos/``: the list, each action on a todo, then the todo itself (its id may hold
slashes, so the actions are matched first)."""

from __future__ import annotations

from django.urls import path, re_path

from todos.api.views import ACTIONS, TodoDetailView, TodoListView

urlpatterns = [
    path("", TodoListView.as_view(), name="api-todos"),
    *(
        re_path(rf"^(?P<todo_id>.+)/{verb}/$", view.as_view(), name=f"api-todo-{verb}")
        for verb, view in ACTIONS.items()
    ),
    re_path(r"^(?P<todo_id>.+)/$", TodoDetailView.as_view(), name="api-todo"),
]
