"""Pillbox records as the REST API answers them: short ids and timestamps to the second, as agents read them.

Output only: input is read against the MCP tools' own schemas (``pillbox.api.common``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.base import ShortIdField
from pillbox import ids
from pillbox.models import Bottle, Capsule, Pill, Prescription
from pillbox.search.results import MATCHES, Hit
from pillbox.selectors import BottleSummary
from pillbox.texts import iso, shown_directory

SUPERSEDED_BY = ("The id of the newer one that supersedes it (left out of searches and contexts until that one no "
                 "longer names it); null when none does.")


@extend_schema_field(OpenApiTypes.DATETIME)
class InstantField(serializers.Field[datetime, Any, str, Any]):
    """UTC, to the second (``2026-05-31T10:15:42Z``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(read_only=True, **kwargs)

    def to_representation(self, value: Any) -> str:
        return iso(value)


class DirectoryField(serializers.CharField):
    """A server path, shown only to viewers who may see the server's file system (``hide_paths`` context); null
    for a global bottle, which belongs to no project."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_null=True, **kwargs)

    def get_attribute(self, instance: Any) -> Any:
        scope = instance.get("scope") if isinstance(instance, Mapping) else getattr(
            getattr(instance, "registration", instance), "scope", None)
        return None if scope == Bottle.SCOPE_GLOBAL else super().get_attribute(instance)

    def to_representation(self, value: Any) -> str:
        return shown_directory(str(value), hide_paths=bool(self.context.get("hide_paths")))


class BottleSerializer(serializers.Serializer[Bottle | Mapping[str, Any]]):
    id = ShortIdField()
    name = serializers.CharField(help_text="A slug, unique among your bottles.")
    display_name = serializers.CharField()
    directory = DirectoryField(help_text="Where a local bottle's project lives (staff and local users only); null "
                                         "for a global bottle.")
    scope = serializers.ChoiceField(choices=[Bottle.SCOPE_LOCAL, Bottle.SCOPE_GLOBAL])
    created_at = InstantField()


class RegisteredBottleSerializer(serializers.Serializer[BottleSummary]):
    """A bottle in the caller's registry (``selectors.BottleSummary``)."""

    id = ShortIdField(source="registration.bottle_id")
    name = serializers.CharField(source="registration.name")
    display_name = serializers.CharField(source="registration.display_name")
    scope = serializers.ChoiceField(source="registration.scope", choices=[Bottle.SCOPE_LOCAL, Bottle.SCOPE_GLOBAL])
    directory = DirectoryField(source="registration.directory")
    linked = serializers.BooleanField(help_text="False when its database file no longer exists (unlinked).")
    prescriptions = serializers.IntegerField(help_text="Live prescriptions.")
    pills = serializers.IntegerField(help_text="Live pills.")


class DayCountSerializer(serializers.Serializer[Mapping[str, Any]]):
    day = serializers.DateField()
    pills = serializers.IntegerField()


class BottleDetailSerializer(BottleSerializer):
    prescriptions = serializers.IntegerField(help_text="Live prescriptions.")
    pills_per_day = DayCountSerializer(many=True, help_text="Live pills stored per day (UTC), oldest day first.")


class PrescriptionSerializer(serializers.Serializer[Prescription]):
    id = ShortIdField()
    bottle = ShortIdField(source="bottle_id")
    title = serializers.CharField()
    status = serializers.SerializerMethodField()
    author_name = serializers.CharField(allow_blank=True)
    author_email = serializers.CharField(allow_blank=True)
    started_at = InstantField()
    ended_at = InstantField(allow_null=True)
    deleted_at = InstantField(allow_null=True, help_text="Set when it was discarded (people can restore it).")
    pills = serializers.IntegerField(source="live_pills", help_text="Live pills.")

    @extend_schema_field({"type": "string", "enum": ["open", "closed"]})
    def get_status(self, prescription: Any) -> str:
        return "open" if prescription.ended_at is None else "closed"


class PillSerializer(serializers.Serializer[Pill]):
    id = ShortIdField()
    prescription = ShortIdField(source="prescription_id")
    compound = serializers.CharField()
    title = serializers.CharField()
    content = serializers.CharField()
    author_name = serializers.CharField(allow_blank=True)
    author_email = serializers.CharField(allow_blank=True)
    created_at = InstantField()
    updated_at = InstantField()
    deleted_at = InstantField(allow_null=True, help_text="Set when it was discarded (people can restore it).")
    superseded_by = ShortIdField(source="superseded_by_id", allow_null=True, help_text=SUPERSEDED_BY)


class PillDetailSerializer(PillSerializer):
    """A pill with where it lives (``selectors.PillPage`` as ``context["page"]``)."""

    bottle = serializers.SerializerMethodField()
    prescription_status = serializers.SerializerMethodField(
        help_text="A pill can be revised or discarded only while its prescription is open."
    )

    @extend_schema_field({"type": "string", "pattern": "^[0-9a-f]{12}$"})
    def get_bottle(self, pill: Any) -> str:
        return ids.short(self.context["page"].bottle.id)

    @extend_schema_field({"type": "string", "enum": ["open", "closed"]})
    def get_prescription_status(self, pill: Any) -> str:
        return "open" if self.context["page"].prescription.ended_at is None else "closed"


class CapsuleSerializer(serializers.Serializer[Capsule]):
    id = ShortIdField()
    compound = serializers.CharField()
    title = serializers.CharField()
    content = serializers.CharField()
    created_at = InstantField()
    updated_at = InstantField()
    deleted_at = InstantField(allow_null=True, help_text="Set when it was discarded (people can restore it).")
    superseded_by = ShortIdField(source="superseded_by_id", allow_null=True, help_text=SUPERSEDED_BY)


class HitSerializer(serializers.Serializer[Hit]):
    id = ShortIdField()
    compound = serializers.CharField()
    title = serializers.CharField()
    snippet = serializers.CharField(allow_blank=True)
    bottle = serializers.SerializerMethodField(help_text="The pill's bottle; null for a capsule.")
    bottle_name = serializers.SerializerMethodField(help_text="The pill's bottle's name; null for a capsule.")
    match = serializers.SerializerMethodField(
        help_text="How this row matched the query's meaningful words; null in a listing by compound.")
    superseded_by = serializers.SerializerMethodField(
        help_text="The newer row that supersedes this one (only with include_superseded); null otherwise.")

    @extend_schema_field({"type": ["string", "null"], "pattern": "^[0-9a-f]{12}$"})
    def get_superseded_by(self, hit: Any) -> str | None:
        newer = self.context.get("superseded", {}).get(hit.id)
        return ids.short(newer) if newer else None

    @extend_schema_field({"type": ["string", "null"], "enum": [*MATCHES, None]})
    def get_match(self, hit: Any) -> str | None:
        return hit.match or None

    @extend_schema_field({"type": ["string", "null"], "pattern": "^[0-9a-f]{12}$"})
    def get_bottle(self, hit: Any) -> str | None:
        return ids.short(hit.bottle_id) if hit.bottle_id else None

    @extend_schema_field({"type": ["string", "null"]})
    def get_bottle_name(self, hit: Any) -> str | None:
        return self.context["bottle_names"].get(hit.bottle_id) if hit.bottle_id else None


class CorrectionSerializer(serializers.Serializer[tuple[str, str]]):
    typed = serializers.SerializerMethodField(help_text="The word as the query had it.")
    word = serializers.SerializerMethodField(help_text="The stored word it was read as.")

    def get_typed(self, pair: tuple[str, str]) -> str:
        return pair[0]

    def get_word(self, pair: tuple[str, str]) -> str:
        return pair[1]


class SearchSerializer(serializers.Serializer[Mapping[str, Any]]):
    total = serializers.IntegerField(help_text="How many rows match, beyond the ones shown.")
    used_fuzzy = serializers.BooleanField(help_text="True when typo expansions contributed to the results.")
    used_semantic = serializers.BooleanField(
        help_text="True when a result was found by meaning alone (no word of the query matched it).")
    ignored_terms = serializers.IntegerField(
        help_text="Distinct words of the query beyond the first 32, which were not searched (0 for most queries).")
    # Declared fields leave the class for _declared_fields (DRF's metaclass): no clash with BaseSerializer.partial.
    partial = serializers.BooleanField(  # type: ignore[assignment]
        help_text="True when the search reached its time budget: the results are those found by then.")
    match = serializers.ChoiceField(
        choices=MATCHES, allow_null=True,
        help_text="How the first result matched the query's meaningful words: all words (as typed), corrected "
        "words (all, some through a typo correction), some words, or meaning (none: found by meaning alone); "
        "null without results or for a listing by compound.")
    # A plain string (one of high, medium, low): as a choice field its values would be taken for the todos'
    # priorities (the same three words) in the schema.
    confidence = serializers.CharField(
        allow_null=True,
        help_text="How sure the server is that the first result answers the query: high (every word matched and "
        "meaning agrees), medium, or low (a partial or meaning-only match, to be checked); null without results.")
    corrections = CorrectionSerializer(
        many=True, help_text="The typo corrections the results matched, each as typed and as corrected.")
    time = serializers.CharField(
        allow_null=True,
        help_text="The window of creation times searched and what it was read from (since/until, or the query's "
        "time words), as the tools' time: line ('2026-11-23 → 2026-11-30 UTC (from \"last week\")'); null "
        "for all time.")
    results = HitSerializer(many=True)


def page_of(child: type[serializers.Serializer[Any]], name: str) -> type[serializers.Serializer[Mapping[str, Any]]]:
    """``{"count": <all matching>, "results": [...]}`` for lists cut by ``limit`` and ``offset``."""
    return type(
        name,
        (serializers.Serializer,),
        {
            "count": serializers.IntegerField(help_text="All matching rows, not just this page."),
            "results": child(many=True),
        },
    )


BottlePageSerializer = page_of(RegisteredBottleSerializer, "BottlePageSerializer")
PrescriptionPageSerializer = page_of(PrescriptionSerializer, "PrescriptionPageSerializer")
PillPageSerializer = page_of(PillSerializer, "PillPageSerializer")
CapsulePageSerializer = page_of(CapsuleSerializer, "CapsulePageSerializer")
