"""Prescriptions: one in full, its pills, storing a pill in it, and its actions (close, reopen, discard,
restore, purge)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import ApiError, query_parameters, responses
from pillbox import curation, selectors, services
from pillbox.api.actions import action_view, purge_view
from pillbox.api.common import (
    INCLUDE_SUPERSEDED,
    LIST_INPUT,
    PRESCRIPTION_ID,
    PillboxView,
    body_schema,
    documented_body,
    paged,
    read,
    read_query,
)
from pillbox.input_rules import NONBLANK, VISIBLE
from pillbox.serializers import PillDetailSerializer, PillPageSerializer, PrescriptionSerializer

PILL_LIST_INPUT: dict[str, Any] = {
    **LIST_INPUT, "properties": {**LIST_INPUT["properties"], "include_superseded": INCLUDE_SUPERSEDED},
}


class PrescriptionDetailView(PillboxView):
    @extend_schema(
        operation_id="prescriptions_get",
        summary="A prescription (discarded ones too)",
        parameters=[PRESCRIPTION_ID],
        responses=responses({200: PrescriptionSerializer}, 400, 404),
    )
    def get(self, request: Request, prescription_id: str) -> Response:
        return self.prescription(prescription_id)

    @extend_schema(
        operation_id="prescriptions_delete",
        summary="Discard a prescription with its pills",
        parameters=[PRESCRIPTION_ID],
        responses=responses({200: PrescriptionSerializer}, 400, 404),
    )
    def delete(self, request: Request, prescription_id: str) -> Response:
        prescription, _ = services.prescription_discard(reach=self.reach, prescription_id=prescription_id)
        return self.prescription(prescription.id.hex)


class PrescriptionPillsView(PillboxView):
    @extend_schema(
        operation_id="prescriptions_pills",
        summary="A prescription's pills, newest first",
        description="A discarded prescription lists the pills discarded with it.",
        parameters=[PRESCRIPTION_ID, *query_parameters(PILL_LIST_INPUT, nonblank=NONBLANK, visible=VISIBLE)],
        responses=responses({200: PillPageSerializer}, 400, 404),
    )
    def get(self, request: Request, prescription_id: str) -> Response:
        values = read_query(request, PILL_LIST_INPUT, "the list")
        page = selectors.prescription_page(
            reach=self.reach, prescription_id=prescription_id, include_discarded=values["include_discarded"],
            include_superseded=values["include_superseded"],
        )
        return Response(PillPageSerializer(paged(page.pills, values)).data)

    @extend_schema(
        operation_id="pills_store",
        summary="Store a pill in this prescription",
        description="As pill_store; the prescription must be open (409 prescription_required).",
        parameters=[PRESCRIPTION_ID],
        request=documented_body(body_schema("pill_store", without=("prescription_id",))),
        responses=responses({201: PillDetailSerializer}, 400, 404, 409),
    )
    def post(self, request: Request, prescription_id: str) -> Response:
        values = read("pill_store", body_schema("pill_store", without=("prescription_id",)), request.data)
        # Someone else's prescription is a 404 here, as everywhere in the API (pill_store would say it is closed).
        page = selectors.prescription_page(reach=self.reach, prescription_id=prescription_id)
        if page.prescription.deleted_at is not None:
            raise ApiError(
                status.HTTP_404_NOT_FOUND,
                "not_found",
                f"The prescription {page.prescription.id.hex[:12]} is discarded; restore it first.",
            )
        pill = services.pill_store(reach=self.reach, prescription_id=page.prescription.id.hex, **values)
        return self.pill(pill.id.hex, status.HTTP_201_CREATED)


def _rx(service: Callable[..., Any]) -> Callable[[PillboxView, str], Response]:
    def run(view: PillboxView, prescription_id: str) -> Response:
        found = service(reach=view.reach, prescription_id=prescription_id)
        return view.prescription((found[0] if isinstance(found, tuple) else found).id.hex)

    return run


PRESCRIPTION_ACTIONS = {
    "close": action_view(
        "prescriptions_close",
        PRESCRIPTION_ID,
        PrescriptionSerializer,
        "Close a prescription",
        "Idempotent: closing a closed one changes nothing.",
        _rx(services.prescription_close),
    ),
    "reopen": action_view(
        "prescriptions_reopen",
        PRESCRIPTION_ID,
        PrescriptionSerializer,
        "Reopen a prescription",
        "So its pills can be added to, revised or discarded.",
        _rx(services.prescription_reopen),
    ),
    "discard": action_view(
        "prescriptions_discard",
        PRESCRIPTION_ID,
        PrescriptionSerializer,
        "Discard a prescription with its pills",
        "Soft delete; it is closed too.",
        _rx(services.prescription_discard),
    ),
    "restore": action_view(
        "prescriptions_restore",
        PRESCRIPTION_ID,
        PrescriptionSerializer,
        "Restore a discarded prescription",
        "With the pills discarded with it.",
        _rx(curation.prescription_restore),
    ),
    "purge": purge_view(
        "prescriptions_purge", PRESCRIPTION_ID, "prescription and its pills", curation.prescription_purge
    ),
}
