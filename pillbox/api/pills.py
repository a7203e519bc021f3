"""Pills: one in full, revised or discarded, and its actions (discard, restore, purge)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import responses
from pillbox import curation, services
from pillbox.api.actions import action_view, purge_view
from pillbox.api.common import PILL_ID, PillboxView, body_schema, documented_body, read
from pillbox.input_rules import require_change
from pillbox.serializers import PillDetailSerializer


class PillDetailView(PillboxView):
    revise_input = body_schema("pill_revise", without=("id",))

    @extend_schema(
        operation_id="pills_get",
        summary="A pill in full (discarded ones too)",
        parameters=[PILL_ID],
        responses=responses({200: PillDetailSerializer}, 400, 404),
    )
    def get(self, request: Request, pill_id: str) -> Response:
        return self.pill(pill_id)

    @extend_schema(
        operation_id="pills_revise",
        summary="Change a pill's title, content or compound, or the pills it supersedes",
        description="As pill_revise: refused (409 prescription_required) while its prescription is "
        "closed; reopen the prescription first. supersedes: [] brings back every pill it superseded.",
        parameters=[PILL_ID],
        request=documented_body(revise_input),
        responses=responses({200: PillDetailSerializer}, 400, 404, 409),
    )
    def patch(self, request: Request, pill_id: str) -> Response:
        changes = read("pill_revise", self.revise_input, request.data)
        supersedes = changes.pop("supersedes", None)
        require_change("pill_revise", changes, supersedes)
        pill = services.pill_revise(reach=self.reach, pill_id=pill_id, changes=changes, supersedes=supersedes)
        return self.pill(pill.id.hex)

    @extend_schema(
        operation_id="pills_delete",
        summary="Discard a pill (soft: it can be restored)",
        parameters=[PILL_ID],
        responses=responses({200: PillDetailSerializer}, 400, 404, 409),
    )
    def delete(self, request: Request, pill_id: str) -> Response:
        return self.pill(services.pill_discard(reach=self.reach, pill_id=pill_id).id.hex)


PILL_ACTIONS = {
    "discard": action_view(
        "pills_discard",
        PILL_ID,
        PillDetailSerializer,
        "Discard a pill",
        "Soft delete; refused (409) while its prescription is closed.",
        lambda view, pill_id: view.pill(services.pill_discard(reach=view.reach, pill_id=pill_id).id.hex),
        409,
    ),
    "restore": action_view(
        "pills_restore",
        PILL_ID,
        PillDetailSerializer,
        "Restore a discarded pill",
        "Its prescription must not be discarded.",
        lambda view, pill_id: view.pill(curation.pill_restore(reach=view.reach, pill_id=pill_id).id.hex),
    ),
    "purge": purge_view("pills_purge", PILL_ID, "pill", curation.pill_purge),
}
