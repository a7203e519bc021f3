"""A to-do item, owned by one user, named by the agent.

The agent's id (``key``) is unique per owner only: two users may both have ``buy-milk``, so every read and
write is scoped by owner and the row's own primary key never leaves the server.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class Priority(models.TextChoices):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class TodoQuerySet(models.QuerySet["Todo"]):
    def alive(self) -> TodoQuerySet:
        return self.filter(deleted_at__isnull=True)

    def owned_by(self, owner: User) -> TodoQuerySet:
        return self.filter(owner=owner)


class Todo(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="todos")
    key = models.CharField("id", max_length=128, help_text="The id the agent chose; unique per owner.")
    name = models.CharField(max_length=255)
    description = models.TextField(blank=True, help_text="Markdown.")
    priority = models.CharField(max_length=6, choices=Priority.choices, default=Priority.MEDIUM)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    links = models.JSONField(
        default=list, blank=True, help_text="Ids of related todos (sub-tasks point at their root)."
    )
    tags = models.JSONField(default=list, blank=True, help_text="Lowercase words, at most 20.")
    blocked_by = models.JSONField(
        default=list, blank=True, help_text="Ids of the owner's todos that must be completed before this one."
    )

    # Who is working on it, until when: a lease an agent or person takes with claim_todo and renews, releases or
    # ends by completing. Past claimed_until the claim is over, whatever these columns still say.
    claimed_by = models.CharField(max_length=64, blank=True, default="", help_text="Who claimed it (a short name).")
    claimed_until = models.DateTimeField(null=True, blank=True, help_text="When the claim ends unless renewed.")
    # The SHA-256 of the lease token the claim answered its holder (shown once, never stored): renewing, releasing
    # and writing as the holder present it. Empty when nobody holds the todo.
    claim_token_hash = models.CharField(max_length=64, blank=True, default="", editable=False)

    # Unfiltered on purpose: admin, dumpdata and the plan count must see deleted todos too.
    objects = TodoQuerySet.as_manager()

    # Not a column: the blockers still open, set by todos.selectors' plan for the formatters and the page.
    open_blockers: list[str]
    # Not a column: whether someone's claim still runs, set by the /list page's view for its template.
    live_claim: bool
    # Not a column: the lease token of a claim just begun (todos.services' claims), for its holder's one answer.
    lease_token: str | None
    # Not a column: the claim a forced write ended (holder, lease end), for the answer that says so.
    ended_claim: tuple[str, datetime] | None

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="todos_todo_owner_key")]
        indexes = [models.Index(fields=["owner", "deleted_at", "completed_at"], name="todos_todo_owner_state")]

    def claim_live(self, now: datetime) -> bool:
        return bool(self.claimed_by) and self.claimed_until is not None and self.claimed_until > now

    def __str__(self) -> str:
        return f"{self.key}: {self.name}"
