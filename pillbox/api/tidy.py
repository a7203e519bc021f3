"""The tidy-up over REST: a bottle's plan of duplicates, a plan applied (a tidy), and a tidy undone — as
pill_duplicates, pill_tidy and pill_tidy_undo, with their rules and errors."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import ShortIdField, body, query_parameters, responses
from pillbox import tidying
from pillbox.api.common import BOTTLE_ID, ID_PATTERN, PillboxView, _id, body_schema, read, read_query
from pillbox.input_rules import NONBLANK, VISIBLE
from pillbox.models import Tidy
from pillbox.serializers import InstantField
from pillbox.tools import TOOLSET

TIDY_ID = _id("tidy_id", "tidy")
PLAN_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"by_meaning": TOOLSET.by_name["pill_duplicates"].input_schema["properties"]["by_meaning"]},
}


class MemberSerializer(serializers.Serializer[tidying.Member]):
    id = ShortIdField()
    title = serializers.CharField()
    created_at = InstantField()
    views = serializers.IntegerField(help_text="How often agents read it.")
    why = serializers.CharField(help_text="The keeper: why it is kept. The others: how each matched the keeper.")


class GroupSerializer(serializers.Serializer[tidying.PlanGroup]):
    number = serializers.IntegerField()
    keeper = MemberSerializer()
    others = MemberSerializer(many=True, help_text="Superseded by the keeper when the group is applied.")


class PlanSerializer(serializers.Serializer[tidying.Plan]):
    plan_id = serializers.SerializerMethodField(help_text="The plan's id for POST /api/pillbox/tidies/; null when "
                                                          "there is nothing to tidy.")
    bottle = serializers.CharField(source="bottle.name")
    looked_at = serializers.IntegerField(help_text="Live pills, superseded by none, that were compared.")
    by_meaning = serializers.BooleanField()
    meaning_note = serializers.CharField(allow_null=True, help_text="Why meaning was not used, when it was asked.")
    groups = GroupSerializer(many=True)

    def get_plan_id(self, plan: tidying.Plan) -> str | None:
        return plan.record.id.hex[:12] if plan.record is not None else None


class TidySerializer(serializers.Serializer[Tidy]):
    id = ShortIdField()
    plan_id = serializers.SerializerMethodField()
    groups = serializers.ListField(child=serializers.IntegerField(), source="group_numbers")
    superseded = serializers.SerializerMethodField(help_text="The pills this tidy superseded (their short ids).")
    applied_at = InstantField()
    undone_at = InstantField(allow_null=True)

    def get_plan_id(self, tidy: Tidy) -> str:
        return tidy.plan_id.hex[:12]

    def get_superseded(self, tidy: Tidy) -> list[str]:
        return sorted(pill[:12] for pill in tidy.after)


class BottleDuplicatesView(PillboxView):
    @extend_schema(
        operation_id="bottles_duplicates",
        summary="A bottle's duplicates: a tidy-up plan",
        description="As pill_duplicates: groups of pills that say the same thing, each with the pill to keep. "
        "Changes nothing; the plan id is for POST /api/pillbox/tidies/.",
        parameters=[BOTTLE_ID, *query_parameters(PLAN_INPUT, nonblank=NONBLANK, visible=VISIBLE)],
        responses=responses({200: PlanSerializer}, 400, 404),
    )
    def get(self, request: Request, bottle_id: str) -> Response:
        values = read_query(request, PLAN_INPUT, "pill_duplicates")
        plan = tidying.duplicates_plan(reach=self.reach, bottle_id=bottle_id, by_meaning=values["by_meaning"])
        return Response(PlanSerializer(plan).data)


class TidyListView(PillboxView):
    @extend_schema(
        operation_id="tidies_apply",
        summary="Apply a tidy-up plan",
        description="As pill_tidy: in one transaction each group's keeper supersedes the others; refused, "
        "changing nothing, when a pill of the plan changed since.",
        request=body(body_schema("pill_tidy"), patterns={"plan_id": ID_PATTERN}),
        responses=responses({201: TidySerializer}, 400, 404),
    )
    def post(self, request: Request) -> Response:
        values = read("pill_tidy", body_schema("pill_tidy"), request.data)
        groups = values.get("groups")
        tidy = tidying.tidy_apply(reach=self.reach, plan_id=values["plan_id"],
                                  groups=None if groups is None else [int(number) for number in groups])
        return Response(TidySerializer(tidy).data, status=status.HTTP_201_CREATED)


class TidyUndoView(PillboxView):
    @extend_schema(
        operation_id="tidies_undo",
        summary="Undo a tidy",
        description="As pill_tidy_undo: every pill it superseded is superseded exactly as before it again.",
        parameters=[TIDY_ID],
        request=None,
        responses=responses({200: TidySerializer}, 400, 404),
    )
    def post(self, request: Request, tidy_id: str) -> Response:
        return Response(TidySerializer(tidying.tidy_undo(reach=self.reach, tidy_id=tidy_id)).data)
