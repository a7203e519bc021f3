"""Capsules: the caller's list, storing one, one in full, revised or discarded, and its actions (discard,
restore, purge)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import query_parameters, responses
from pillbox import curation, selectors, services
from pillbox.api.actions import action_view, purge_view
from pillbox.api.common import (
    CAPSULE_ID,
    INCLUDE_SUPERSEDED,
    LIST_INPUT,
    PillboxView,
    body_schema,
    documented_body,
    paged,
    read,
    read_query,
)
from pillbox.input_rules import NONBLANK, VISIBLE, require_change
from pillbox.serializers import CapsulePageSerializer, CapsuleSerializer
from pillbox.tools import COMPOUND

CAPSULE_LIST_INPUT: dict[str, Any] = {
    **LIST_INPUT,
    "properties": {"compound": COMPOUND, **LIST_INPUT["properties"], "include_superseded": INCLUDE_SUPERSEDED},
}


class CapsuleListView(PillboxView):
    store_input = body_schema("capsule_store")

    @extend_schema(
        operation_id="capsules_list",
        summary="Your capsules, newest first",
        parameters=query_parameters(CAPSULE_LIST_INPUT, nonblank=NONBLANK, visible=VISIBLE),
        responses=responses({200: CapsulePageSerializer}, 400),
    )
    def get(self, request: Request) -> Response:
        values = read_query(request, CAPSULE_LIST_INPUT, "the list")
        rows = selectors.capsule_list(
            reach=self.reach, compound=values.get("compound"), include_discarded=values["include_discarded"],
            include_superseded=values["include_superseded"],
        )
        return Response(CapsulePageSerializer(paged(rows, values)).data)

    @extend_schema(
        operation_id="capsules_store",
        summary="Store a capsule",
        description="As capsule_store: a capsule named in supersedes that is not yours is 404.",
        request=documented_body(store_input),
        responses=responses({201: CapsuleSerializer}, 400, 404),
    )
    def post(self, request: Request) -> Response:
        capsule = services.capsule_store(reach=self.reach, **read("capsule_store", self.store_input, request.data))
        return Response(CapsuleSerializer(capsule).data, status=status.HTTP_201_CREATED)


class CapsuleDetailView(PillboxView):
    revise_input = body_schema("capsule_revise", without=("id",))

    @extend_schema(
        operation_id="capsules_get",
        summary="A capsule (discarded ones too)",
        parameters=[CAPSULE_ID],
        responses=responses({200: CapsuleSerializer}, 400, 404),
    )
    def get(self, request: Request, capsule_id: str) -> Response:
        return self.capsule(capsule_id)

    @extend_schema(
        operation_id="capsules_revise",
        summary="Change a capsule's title, content or compound, or the capsules it supersedes",
        parameters=[CAPSULE_ID],
        request=documented_body(revise_input),
        responses=responses({200: CapsuleSerializer}, 400, 404),
    )
    def patch(self, request: Request, capsule_id: str) -> Response:
        changes = read("capsule_revise", self.revise_input, request.data)
        supersedes = changes.pop("supersedes", None)
        require_change("capsule_revise", changes, supersedes)
        capsule = services.capsule_revise(reach=self.reach, capsule_id=capsule_id, changes=changes,
                                          supersedes=supersedes)
        return Response(CapsuleSerializer(capsule).data)

    @extend_schema(
        operation_id="capsules_delete",
        summary="Discard a capsule (soft: it can be restored)",
        parameters=[CAPSULE_ID],
        responses=responses({200: CapsuleSerializer}, 400, 404),
    )
    def delete(self, request: Request, capsule_id: str) -> Response:
        return Response(CapsuleSerializer(services.capsule_discard(reach=self.reach, capsule_id=capsule_id)).data)


CAPSULE_ACTIONS = {
    "discard": action_view(
        "capsules_discard",
        CAPSULE_ID,
        CapsuleSerializer,
        "Discard a capsule",
        "Soft delete.",
        lambda view, capsule_id: view.capsule(services.capsule_discard(reach=view.reach, capsule_id=capsule_id).id.hex),
    ),
    "restore": action_view(
        "capsules_restore",
        CAPSULE_ID,
        CapsuleSerializer,
        "Restore a discarded capsule",
        "",
        lambda view, capsule_id: view.capsule(curation.capsule_restore(reach=view.reach, capsule_id=capsule_id).id.hex),
    ),
    "purge": purge_view("capsules_purge", CAPSULE_ID, "capsule", curation.capsule_purge),
}
