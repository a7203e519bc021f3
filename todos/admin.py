"""Operators' view of every user's todos, deleted ones included and marked. Deleting and restoring go through the
services (they stamp ``updatedAt``, which the search cache relies on); the admin's own delete is the purge."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from todos import services
from todos.models import Todo


class StateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("pending", "pending"), ("completed", "completed"), ("deleted", "deleted")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value == "deleted":
            return queryset.filter(deleted_at__isnull=False)
        if value in ("pending", "completed"):
            return queryset.filter(deleted_at__isnull=True, completed_at__isnull=value == "pending")
        return queryset


@admin.register(Todo)
class TodoAdmin(admin.ModelAdmin):
    list_display = ("key", "name", "owner", "priority", "state", "deadline_at", "claimed_by", "updated_at")
    list_filter = (StateFilter, "priority", "deadline_at", "updated_at")
    search_fields = ("key", "name", "description", "owner__username", "owner__account__uid")
    list_select_related = ("owner",)
    ordering = ("-updated_at",)
    date_hierarchy = "created_at"
    actions = ["delete_todos", "restore_todos"]

    @admin.display(description="state", ordering="deleted_at")
    def state(self, todo: Todo) -> str:
        if todo.deleted_at is not None:
            return f"✗ deleted {todo.deleted_at:%Y-%m-%d %H:%M}"
        return "✓ completed" if todo.completed_at is not None else "pending"

    @admin.action(description="Delete selected todos (soft: they can be restored)")
    def delete_todos(self, request: HttpRequest, queryset: QuerySet) -> None:
        todos = list(queryset.filter(deleted_at__isnull=True).select_related("owner"))
        for todo in todos:
            services.todo_delete(owner=todo.owner, key=todo.key)
        self.message_user(request, f"Deleted {len(todos)} todo{'' if len(todos) == 1 else 's'}.", messages.SUCCESS)

    @admin.action(description="Restore selected deleted todos")
    def restore_todos(self, request: HttpRequest, queryset: QuerySet) -> None:
        todos = list(queryset.filter(deleted_at__isnull=False).select_related("owner"))
        for todo in todos:
            services.todo_restore(owner=todo.owner, key=todo.key)
        self.message_user(request, f"Restored {len(todos)} todo{'' if len(todos) == 1 else 's'}.", messages.SUCCESS)

    # Users and their agents write todos; operators look, delete, restore and purge.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Todo | None = None) -> bool:
        return False
