"""The Pillbox REST API: bottles, prescriptions, pills, capsules and search, for programs and the web pages.

Request bodies are the MCP tools' input schemas (the record's id comes from the URL instead), read by the
tools' own checks, so an API client reads the same error codes and sentences as an agent. Ids in answers are
the 12-digit short ids; URLs take a short id, a full UUID or any prefix of at least 8 hex digits. A record
another user owns, or in a bottle the caller has not registered, is a 404 like one that does not exist.
Discarded records are listed on request and can be restored; purging is for signed-in people only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import ApiError, ApiView, IsPerson, body, caller_of, query_arguments, query_parameters, responses
from mcp_bridge.arguments import Problem, read_arguments
from pillbox import selectors, services, texts
from pillbox.access import Reach, hides_server_paths, reach_for
from pillbox.databases import GLOBAL
from pillbox.exceptions import PillboxError, ValidationFailed
from pillbox.search.engine import search
from pillbox.search.targets import Target
from pillbox.serializers import (
    BottleDetailSerializer,
    BottlePageSerializer,
    BottleSerializer,
    CapsulePageSerializer,
    CapsuleSerializer,
    PillDetailSerializer,
    PillPageSerializer,
    PrescriptionPageSerializer,
    PrescriptionSerializer,
    SearchSerializer,
)

# The tools' own checks: the blank-field rule and the wording of every problem (invalid_input, validation_error,
# the content-over-limit advice), so the API cannot drift from what agents read.
from pillbox.tools import (
    COMPOUND,
    FUZZY,
    NONBLANK,
    QUERY,
    TOOLSET,
    _blank_problems,
    _limit,
    _problems_error,
    _require_change,
)

_STATUS = {
    "not_found": status.HTTP_404_NOT_FOUND,
    "prescription_required": status.HTTP_409_CONFLICT,
    "already_exists": status.HTTP_409_CONFLICT,
    "incompatible_db": status.HTTP_409_CONFLICT,
    "internal_error": status.HTTP_500_INTERNAL_SERVER_ERROR,
}
# What ids.normalise accepts: 8-32 hex digits, dashes anywhere (a UUID as usually written).
_ID_PATTERN = r"^(?:[0-9A-Fa-f]-?){8,32}$"
SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
LIST_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "include_discarded": {"type": "boolean", "default": False, "description": "Also list discarded ones."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 100, "description": "Page size."},
        "offset": {
            "type": "integer",
            "minimum": 0,
            "maximum": 1_000_000_000,
            "default": 0,
            "description": "How many to skip.",
        },
    },
}
CAPSULE_LIST_INPUT: dict[str, Any] = {
    **LIST_INPUT,
    "properties": {"compound": COMPOUND, **LIST_INPUT["properties"]},
}
SEARCH_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "q": QUERY,
        "kind": {
            "type": "string",
            "enum": ["pills", "capsules"],
            "default": "pills",
            "description": "Search pills (every reachable bottle, or one) or capsules.",
        },
        "compound": COMPOUND,
        "bottle": {
            "type": "string",
            "pattern": _ID_PATTERN,
            "description": "Pills only: search this bottle alone (short id, UUID or 8+ digit prefix).",
        },
        "limit": _limit(20, 100, "results"),
        "fuzzy": FUZZY,
    },
}


def _id(name: str, noun: str) -> OpenApiParameter:
    return OpenApiParameter(
        name,
        OpenApiTypes.STR,
        OpenApiParameter.PATH,
        pattern=_ID_PATTERN,
        description=f"The {noun}'s id: 12 hex digits as shown, a full UUID, or a prefix of 8+.",
    )


BOTTLE_ID, PRESCRIPTION_ID = _id("bottle_id", "bottle"), _id("prescription_id", "prescription")
PILL_ID, CAPSULE_ID = _id("pill_id", "pill"), _id("capsule_id", "capsule")


def body_schema(tool: str, *, without: tuple[str, ...] = ()) -> dict[str, Any]:
    """A tool's input schema as a request body: the fields the URL carries left out, nothing else taken."""
    schema = TOOLSET.by_name[tool].input_schema
    properties = {name: spec for name, spec in schema["properties"].items() if name not in without}
    body: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required := [name for name in schema.get("required", ()) if name not in without]:
        body["required"] = required
    if tool.endswith("_revise"):
        body["minProperties"] = 1
    return body


def documented_body(schema: Mapping[str, Any]) -> Any:
    return body(schema, nonblank=NONBLANK, patterns={"name": SLUG_PATTERN})


def read(tool: str, schema: Mapping[str, Any], data: Any, *, strict: bool = True) -> dict[str, Any]:
    """The tool's checks and wording; ``strict`` (request bodies) also refuses a field the schema does not name,
    which is usually a misspelt one."""
    values, problems = read_arguments(schema, data, multiline=("content",))
    problems += _blank_problems(values)
    if strict and isinstance(data, Mapping):
        known = schema.get("properties", {})
        problems += [
            Problem(str(name), "type", f"is not a field of this request (it takes {', '.join(known)})")
            for name in data
            if name not in known
        ]
    if problems:
        raise _problems_error(tool, problems, data if isinstance(data, dict) else {})
    return values


def _page(rows: list[Any], values: Mapping[str, Any]) -> dict[str, Any]:
    start = values["offset"]
    return {"count": len(rows), "results": rows[start : start + values["limit"]]}


def _query(request: Request, schema: Mapping[str, Any], what: str) -> dict[str, Any]:
    return read(what, schema, query_arguments(request, schema), strict=False)


class PillboxView(ApiView):
    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, PillboxError):
            message, fields = texts.visible(exc, hide_paths=hides_server_paths(caller_of(self.request)))
            exc = ApiError(_STATUS.get(exc.code, status.HTTP_400_BAD_REQUEST), exc.code, message, fields)
        return super().handle_exception(exc)

    @cached_property
    def reach(self) -> Reach:
        return reach_for(caller_of(self.request))

    @property
    def shown(self) -> dict[str, bool]:
        return {"hide_paths": self.reach.hide_paths}

    def prescription(self, prescription_id: str, code: int = status.HTTP_200_OK) -> Response:
        page = selectors.prescription_page(reach=self.reach, prescription_id=prescription_id)
        # The serializer reads live_pills, which the listings' annotated rows carry: this row is given it here.
        live = sum(1 for pill in page.pills if pill.deleted_at is None)
        page.prescription.live_pills = live  # type: ignore[attr-defined]
        return Response(PrescriptionSerializer(page.prescription).data, status=code)

    def pill(self, pill_id: str, code: int = status.HTTP_200_OK) -> Response:
        page = selectors.pill_page(reach=self.reach, pill_id=pill_id)
        return Response(PillDetailSerializer(page.pill, context={"page": page}).data, status=code)

    def capsule(self, capsule_id: str, code: int = status.HTTP_200_OK) -> Response:
        capsule = selectors.capsule_find_any(reach=self.reach, capsule_id=capsule_id)
        return Response(CapsuleSerializer(capsule).data, status=code)


# ---------------------------------------------------------------- bottles


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
        parameters=[BOTTLE_ID, *query_parameters(LIST_INPUT, nonblank=NONBLANK)],
        responses=responses({200: PrescriptionPageSerializer}, 400, 404),
    )
    def get(self, request: Request, bottle_id: str) -> Response:
        values = _query(request, LIST_INPUT, "the list")
        page = selectors.bottle_page(
            reach=self.reach, bottle_id=bottle_id, include_discarded=values["include_discarded"]
        )
        return Response(PrescriptionPageSerializer(_page(page.prescriptions, values)).data)

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


# ---------------------------------------------------------------- prescriptions


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
        parameters=[PRESCRIPTION_ID, *query_parameters(LIST_INPUT, nonblank=NONBLANK)],
        responses=responses({200: PillPageSerializer}, 400, 404),
    )
    def get(self, request: Request, prescription_id: str) -> Response:
        values = _query(request, LIST_INPUT, "the list")
        page = selectors.prescription_page(
            reach=self.reach, prescription_id=prescription_id, include_discarded=values["include_discarded"]
        )
        return Response(PillPageSerializer(_page(page.pills, values)).data)

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


# ---------------------------------------------------------------- pills


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
        summary="Change a pill's title, content or compound",
        description="As pill_revise: refused (409 prescription_required) while its prescription is "
        "closed; reopen the prescription first.",
        parameters=[PILL_ID],
        request=documented_body(revise_input),
        responses=responses({200: PillDetailSerializer}, 400, 404, 409),
    )
    def patch(self, request: Request, pill_id: str) -> Response:
        changes = read("pill_revise", self.revise_input, request.data)
        _require_change("pill_revise", changes)
        pill = services.pill_revise(reach=self.reach, pill_id=pill_id, changes=changes)
        return self.pill(pill.id.hex)

    @extend_schema(
        operation_id="pills_delete",
        summary="Discard a pill (soft: it can be restored)",
        parameters=[PILL_ID],
        responses=responses({200: PillDetailSerializer}, 400, 404, 409),
    )
    def delete(self, request: Request, pill_id: str) -> Response:
        return self.pill(services.pill_discard(reach=self.reach, pill_id=pill_id).id.hex)


# ---------------------------------------------------------------- capsules


class CapsuleListView(PillboxView):
    store_input = body_schema("capsule_store")

    @extend_schema(
        operation_id="capsules_list",
        summary="Your capsules, newest first",
        parameters=query_parameters(CAPSULE_LIST_INPUT, nonblank=NONBLANK),
        responses=responses({200: CapsulePageSerializer}, 400),
    )
    def get(self, request: Request) -> Response:
        values = _query(request, CAPSULE_LIST_INPUT, "the list")
        rows = selectors.capsule_list(
            reach=self.reach, compound=values.get("compound"), include_discarded=values["include_discarded"]
        )
        return Response(CapsulePageSerializer(_page(rows, values)).data)

    @extend_schema(
        operation_id="capsules_store",
        summary="Store a capsule",
        request=documented_body(store_input),
        responses=responses({201: CapsuleSerializer}, 400),
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
        summary="Change a capsule's title, content or compound",
        parameters=[CAPSULE_ID],
        request=documented_body(revise_input),
        responses=responses({200: CapsuleSerializer}, 400, 404),
    )
    def patch(self, request: Request, capsule_id: str) -> Response:
        changes = read("capsule_revise", self.revise_input, request.data)
        _require_change("capsule_revise", changes)
        capsule = services.capsule_revise(reach=self.reach, capsule_id=capsule_id, changes=changes)
        return Response(CapsuleSerializer(capsule).data)

    @extend_schema(
        operation_id="capsules_delete",
        summary="Discard a capsule (soft: it can be restored)",
        parameters=[CAPSULE_ID],
        responses=responses({200: CapsuleSerializer}, 400, 404),
    )
    def delete(self, request: Request, capsule_id: str) -> Response:
        return Response(CapsuleSerializer(services.capsule_discard(reach=self.reach, capsule_id=capsule_id)).data)


# ---------------------------------------------------------------- actions


def _action(
    name: str,
    parameter: OpenApiParameter,
    serializer: Any,
    summary: str,
    description: str,
    run: Callable[[PillboxView, str], Response],
    *errors: int,
) -> type[PillboxView]:
    @extend_schema(
        operation_id=name,
        summary=summary,
        description=description,
        parameters=[parameter],
        request=None,
        responses=responses({200: serializer}, 400, 404, *errors),
    )
    def post(self: PillboxView, request: Request, **kwargs: str) -> Response:
        return run(self, kwargs[parameter.name])

    return type("".join(part.title() for part in name.split("_")) + "View", (PillboxView,), {"post": post})


def _purge(name: str, parameter: OpenApiParameter, noun: str, purge: Callable[..., object]) -> type[PillboxView]:
    @extend_schema(
        operation_id=name,
        summary=f"Purge a {noun} for good (people only)",
        description="A real delete, for signed-in people (session and CSRF token), never with an API "
        "key: agents only ever discard.",
        parameters=[parameter],
        request=None,
        responses=responses({204: None}, 400, 403, 404),
    )
    def post(self: PillboxView, request: Request, **kwargs: str) -> Response:
        purge(reach=self.reach, **{parameter.name: kwargs[parameter.name]})
        return Response(status=status.HTTP_204_NO_CONTENT)

    return type(
        "".join(part.title() for part in name.split("_")) + "View",
        (PillboxView,),
        {"post": post, "permission_classes": [IsPerson]},
    )


def _rx(service: Callable[..., Any]) -> Callable[[PillboxView, str], Response]:
    def run(view: PillboxView, prescription_id: str) -> Response:
        found = service(reach=view.reach, prescription_id=prescription_id)
        return view.prescription((found[0] if isinstance(found, tuple) else found).id.hex)

    return run


PRESCRIPTION_ACTIONS = {
    "close": _action(
        "prescriptions_close",
        PRESCRIPTION_ID,
        PrescriptionSerializer,
        "Close a prescription",
        "Idempotent: closing a closed one changes nothing.",
        _rx(services.prescription_close),
    ),
    "reopen": _action(
        "prescriptions_reopen",
        PRESCRIPTION_ID,
        PrescriptionSerializer,
        "Reopen a prescription",
        "So its pills can be added to, revised or discarded.",
        _rx(services.prescription_reopen),
    ),
    "discard": _action(
        "prescriptions_discard",
        PRESCRIPTION_ID,
        PrescriptionSerializer,
        "Discard a prescription with its pills",
        "Soft delete; it is closed too.",
        _rx(services.prescription_discard),
    ),
    "restore": _action(
        "prescriptions_restore",
        PRESCRIPTION_ID,
        PrescriptionSerializer,
        "Restore a discarded prescription",
        "With the pills discarded with it.",
        _rx(services.prescription_restore),
    ),
    "purge": _purge("prescriptions_purge", PRESCRIPTION_ID, "prescription and its pills", services.prescription_purge),
}
PILL_ACTIONS = {
    "discard": _action(
        "pills_discard",
        PILL_ID,
        PillDetailSerializer,
        "Discard a pill",
        "Soft delete; refused (409) while its prescription is closed.",
        lambda view, pill_id: view.pill(services.pill_discard(reach=view.reach, pill_id=pill_id).id.hex),
        409,
    ),
    "restore": _action(
        "pills_restore",
        PILL_ID,
        PillDetailSerializer,
        "Restore a discarded pill",
        "Its prescription must not be discarded.",
        lambda view, pill_id: view.pill(services.pill_restore(reach=view.reach, pill_id=pill_id).id.hex),
    ),
    "purge": _purge("pills_purge", PILL_ID, "pill", services.pill_purge),
}
CAPSULE_ACTIONS = {
    "discard": _action(
        "capsules_discard",
        CAPSULE_ID,
        CapsuleSerializer,
        "Discard a capsule",
        "Soft delete.",
        lambda view, capsule_id: view.capsule(services.capsule_discard(reach=view.reach, capsule_id=capsule_id).id.hex),
    ),
    "restore": _action(
        "capsules_restore",
        CAPSULE_ID,
        CapsuleSerializer,
        "Restore a discarded capsule",
        "",
        lambda view, capsule_id: view.capsule(services.capsule_restore(reach=view.reach, capsule_id=capsule_id).id.hex),
    ),
    "purge": _purge("capsules_purge", CAPSULE_ID, "capsule", services.capsule_purge),
}


# ---------------------------------------------------------------- search


class SearchView(PillboxView):
    @extend_schema(
        operation_id="pillbox_search",
        summary="Search pills or capsules",
        description="As pill_search and capsule_search: give q, compound, or both. Prefixes match, accents and "
        "case are ignored, misspelled words are corrected (used_fuzzy is then true, corrections names them), rows "
        "close in meaning join (used_semantic), and match says how the first result matched the query.",
        parameters=query_parameters(SEARCH_INPUT, nonblank=NONBLANK),
        responses=responses({200: SearchSerializer}, 400, 404),
    )
    def get(self, request: Request) -> Response:
        values = _query(request, SEARCH_INPUT, "pillbox_search")
        query, compound = values.get("q"), values.get("compound")
        if not query and not compound:
            raise ValidationFailed("Give a query (q), a compound, or both.", q="required unless compound is given")
        if values["kind"] == "capsules":
            targets = [Target(alias=GLOBAL, kind="capsule", owner_id=self.reach.user.pk)]
            names: dict[Any, str] = {}
        else:
            dbs = selectors.narrowed_dbs(self.reach, values.get("bottle"))
            targets = [Target(alias=alias, kind="pill", bottles=frozenset(bottles)) for alias, bottles in dbs.items()]
            names = selectors.bottle_names(self.reach)
        found = search(targets, query=query, compound=compound, limit=values["limit"], fuzzy=values["fuzzy"])
        data = {"total": found.total, "used_fuzzy": found.used_fuzzy, "used_semantic": found.used_semantic,
                "match": found.match or None, "corrections": found.corrections, "ignored_terms": found.ignored_terms,
                "partial": found.partial, "results": found.hits}
        return Response(SearchSerializer(data, context={"bottle_names": names}).data)


def _actions(prefix: str, parameter: str, actions: Mapping[str, type[PillboxView]]) -> list[Any]:
    return [
        path(f"{prefix}/<str:{parameter}>/{verb}/", view.as_view(), name=f"api-{prefix}-{verb}")
        for verb, view in actions.items()
    ]


urlpatterns = [
    path("bottles/", BottleListView.as_view(), name="api-bottles"),
    path("bottles/<str:bottle_id>/", BottleDetailView.as_view(), name="api-bottle"),
    path("bottles/<str:bottle_id>/prescriptions/", BottlePrescriptionsView.as_view(), name="api-bottle-prescriptions"),
    path("prescriptions/<str:prescription_id>/", PrescriptionDetailView.as_view(), name="api-prescription"),
    path("prescriptions/<str:prescription_id>/pills/", PrescriptionPillsView.as_view(), name="api-prescription-pills"),
    *_actions("prescriptions", "prescription_id", PRESCRIPTION_ACTIONS),
    path("pills/<str:pill_id>/", PillDetailView.as_view(), name="api-pill"),
    *_actions("pills", "pill_id", PILL_ACTIONS),
    path("capsules/", CapsuleListView.as_view(), name="api-capsules"),
    path("capsules/<str:capsule_id>/", CapsuleDetailView.as_view(), name="api-capsule"),
    *_actions("capsules", "capsule_id", CAPSULE_ACTIONS),
    path("search/", SearchView.as_view(), name="api-pillbox-search"),
]
