"""Bottles: the caller's registry, a bottle's page, its prescriptions, and opening a prescription in it."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import query_parameters, responses
from pillbox import selectors, services
from pillbox.api.common import BOTTLE_ID, LIST_INPUT, PillboxView, body_schema, documented_body, paged, read, read_query
from pillbox.input_rules import NONBLANK, VISIBLE
from pillbox.serializers import (
    BottleDetailSerializer,
    BottlePageSerializer,
    BottleSerializer,
    PrescriptionPageSerializer,
    PrescriptionSerializer,
)


class BottleListView(PillboxView):
    @extend_schema(
        operation_id="bottles_list",
        summary="Your bottles (the registry)",
        responses=responses({200: BottlePageSerializer}),
    )
    def get(self, request: Request) -> Response:
        rows = selectors.bottle_summaries(reach=self.reach)
        return Response(BottlePageSerializer({"count": len(rows), "results": rows}, context=self.shown).data)

    @extend_schema(
        operation_id="bottles_create",
        summary="Create a bottle",
        description="As bottle_create. Over HTTP a local bottle is only for staff on a server with PILLBOX_ROOT; "
        "everyone else uses scope global.",
        request=documented_body(body_schema("bottle_create")),
        responses=responses({201: BottleSerializer}, 400, 409),
    )
    def post(self, request: Request) -> Response:
        values = read("bottle_create", body_schema("bottle_create"), request.data)
        bottle = services.bottle_create(reach=self.reach, **values)
        return Response(BottleSerializer(bottle, context=self.shown).data, status=status.HTTP_201_CREATED)


class BottleDetailView(PillboxView):
    @extend_schema(
        operation_id="bottles_get",
        summary="A bottle, its live prescriptions and pills per day",
        parameters=[BOTTLE_ID],
        responses=responses({200: BottleDetailSerializer}, 400, 404),
    )
    def get(self, request: Request, bottle_id: str) -> Response:
        page = selectors.bottle_page(reach=self.reach, bottle_id=bottle_id)
        data = {
            **{
                name: getattr(page.bottle, name)
                for name in ("id", "name", "display_name", "directory", "scope", "created_at")
            },
            "prescriptions": len(page.prescriptions),
            "pills_per_day": [{"day": day, "pills": count} for day, count in page.pills_per_day],
        }
        return Response(BottleDetailSerializer(data, context=self.shown).data)


class BottlePrescriptionsView(PillboxView):
    @extend_schema(
        operation_id="bottles_prescriptions",
        summary="A bottle's prescriptions, newest first",
        parameters=[BOTTLE_ID, *query_parameters(LIST_INPUT, nonblank=NONBLANK, visible=VISIBLE)],
        responses=responses({200: PrescriptionPageSerializer}, 400, 404),
    )
    def get(self, request: Request, bottle_id: str) -> Response:
        values = read_query(request, LIST_INPUT, "the list")
        page = selectors.bottle_page(
            reach=self.reach, bottle_id=bottle_id, include_discarded=values["include_discarded"]
        )
        return Response(PrescriptionPageSerializer(paged(page.prescriptions, values)).data)

    @extend_schema(
        operation_id="prescriptions_open",
        summary="Open a prescription in this bottle",
        description="As prescription_open: always a new prescription.",
        parameters=[BOTTLE_ID],
        request=documented_body(body_schema("prescription_open", without=("bottle_id",))),
        responses=responses({201: PrescriptionSerializer}, 400, 404),
    )
    def post(self, request: Request, bottle_id: str) -> Response:
        values = read("prescription_open", body_schema("prescription_open", without=("bottle_id",)), request.data)
        prescription = services.prescription_open(reach=self.reach, bottle_id=bottle_id, **values)
        return self.prescription(prescription.id.hex, status.HTTP_201_CREATED)
