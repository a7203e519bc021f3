"""The Todo as the REST API documents it. The JSON itself is ``todos.formatting``'s, the same as MCP's."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from todos import rules
from todos.formatting import format_todo
from todos.models import Todo


class TodoSerializer(serializers.Serializer[Todo]):
    """Read-only; its fields are what the schema shows, ``format_todo`` is what is sent."""

    id = serializers.CharField(help_text="Chosen by the agent or person who created it; unique per user.")
    uid = serializers.CharField(help_text="The owner's user id.")
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True, help_text="Markdown.")
    priority = serializers.ChoiceField(choices=list(rules.PRIORITIES))
    createdAt = serializers.DateTimeField()  # noqa: N815 (the seed's JSON keys)
    updatedAt = serializers.DateTimeField()  # noqa: N815
    completedAt = serializers.DateTimeField(allow_null=True)  # noqa: N815
    deletedAt = serializers.DateTimeField(allow_null=True)  # noqa: N815
    deadlineAt = serializers.DateTimeField(allow_null=True)  # noqa: N815
    links = serializers.ListField(child=serializers.CharField(), help_text="Ids of related todos.")
    tags = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Lowercase words; present when not empty."
    )
    blockedBy = serializers.ListField(  # noqa: N815
        child=serializers.CharField(),
        required=False,
        help_text="Ids of todos to be completed first; present when not empty.",
    )

    claimedBy = serializers.CharField(  # noqa: N815
        required=False, help_text="Who is working on it; present only while a claim runs."
    )
    claimedUntil = serializers.DateTimeField(  # noqa: N815
        required=False, help_text="When that claim ends unless renewed; present only while a claim runs."
    )

    def to_representation(self, instance: Todo) -> dict[str, Any]:
        return format_todo(instance, uid=self.context["uid"])
