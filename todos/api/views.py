"""The REST API's views: list, search and create; read, replace, change and delete one todo; claim, release
and the other actions on it. Domain errors become ``ApiError`` with their HTTP status."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.services import account_for
from api.base import ApiError, ApiView, IsPerson, body, query_arguments, responses, user_of
from todos import leases, rules, selectors, services
from todos.api.schemas import (
    API_CLAIM_INPUT,
    API_LIST_INPUT,
    API_RELEASE_INPUT,
    API_SEARCH_INPUT,
    ID_PATTERN,
    ID_PATTERNS,
    LIST_PARAMETERS,
    PATCH_DOC,
    PUT_DOC,
    REPLACE_DOC,
    TODO_ID,
)
from todos.exceptions import (
    BlockerConflict,
    Claimed,
    LimitReached,
    NotClaimable,
    NotFound,
    TodoError,
    ValidationFailed,
)
from todos.formatting import format_todo, format_todos
from todos.models import Todo
from todos.serializers import TodoSerializer
from todos.tools.arguments import read
from todos.tools.fields import PUT_INPUT, UPDATE_INPUT, put_fields, update_fields
from todos.tools.filters import filter_fields
from todos.tools.listing import SEARCH_INPUT

_ERRORS: dict[type[TodoError], tuple[int, str]] = {
    NotFound: (status.HTTP_404_NOT_FOUND, "not_found"),
    ValidationFailed: (status.HTTP_400_BAD_REQUEST, "validation_error"),
    LimitReached: (status.HTTP_409_CONFLICT, "limit_reached"),
    BlockerConflict: (status.HTTP_409_CONFLICT, "conflict"),
    Claimed: (status.HTTP_409_CONFLICT, "claimed"),
    NotClaimable: (status.HTTP_409_CONFLICT, "conflict"),
}


def fail_on(problems: Mapping[str, str], schema: Mapping[str, Any]) -> None:
    """One sentence for every bad field, in the schema's order, as the MCP tools word them."""
    if problems:
        order = {name: position for position, name in enumerate(schema.get("properties", {}))}
        fields = sorted(problems, key=lambda name: order.get(name, len(order)))
        raise ApiError(
            status.HTTP_400_BAD_REQUEST,
            "validation_error",
            "; ".join(problems[name] for name in fields),
            {name: problems[name] for name in fields},
        )


def _key(todo_id: str) -> str:
    if problem := rules.id_problem(todo_id):
        raise ApiError(status.HTTP_400_BAD_REQUEST, "validation_error", problem, {"id": problem})
    return todo_id


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, Mapping):
        raise ApiError(status.HTTP_400_BAD_REQUEST, "invalid_input", "The request body must be a JSON object")
    return dict(request.data)


class TodosView(ApiView):
    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, TodoError):
            code, name = _ERRORS.get(type(exc), (status.HTTP_400_BAD_REQUEST, "validation_error"))
            exc = ApiError(code, name, exc.message)
        return super().handle_exception(exc)

    def answer(self, todo: Todo, code: int = status.HTTP_200_OK) -> Response:
        return Response(format_todo(todo, uid=account_for(user_of(self.request)).uid), status=code)

    def put_todo(self, arguments: Mapping[str, Any]) -> Response:
        """``put_todo``: create, or replace every field (201 when it was created)."""
        fields, problems = put_fields(arguments)
        fail_on(problems, PUT_INPUT)
        todo = services.todo_put(owner=user_of(self.request), **fields)
        # A replace always stamps a later updatedAt than the createdAt it keeps.
        return self.answer(todo, status.HTTP_201_CREATED if todo.created_at == todo.updated_at else status.HTTP_200_OK)


class TodoListView(TodosView):
    @extend_schema(
        operation_id="todos_list",
        summary="List or search todos",
        description="Pending todos first (priority high to low, then soonest deadline, then oldest), then completed "
        "ones with includeCompleted (newest completion first), then deleted ones with includeDeleted. With q, a "
        "fuzzy search instead, as the search_todos tool. dueBefore, dueAfter, priority, under and tag narrow "
        "either, as they narrow the tools' answers.",
        parameters=LIST_PARAMETERS,
        responses=responses({200: TodoSerializer(many=True)}, 400, 404),
    )
    def get(self, request: Request) -> Response:
        uid = account_for(user_of(request)).uid
        if "q" in request.query_params:
            arguments = query_arguments(request, API_SEARCH_INPUT, rename={"query": "q"})
            values, problems = read(API_SEARCH_INPUT, arguments)
            filters = filter_fields(values, problems)
            problems = {
                ("q" if name == "query" else name): text.replace("query", "q", 1) if name == "query" else text
                for name, text in problems.items()
            }
            fail_on(problems, {"properties": {"q": {}, **API_SEARCH_INPUT["properties"]}})
            todos = selectors.todo_search(
                owner=user_of(request),
                query=values["query"],
                include_completed=values["includeCompleted"],
                limit=values["limit"],
                filters=filters,
            )
            return Response(format_todos(todos, uid=uid))
        # limit only cuts search results, but a bad one is refused here too rather than silently ignored.
        listing = {
            **API_LIST_INPUT,
            "properties": {**API_LIST_INPUT["properties"], "limit": SEARCH_INPUT["properties"]["limit"]},
        }
        values, problems = read(listing, query_arguments(request, listing))
        filters = filter_fields(values, problems)
        fail_on(problems, listing)
        todos = selectors.todo_list(
            owner=user_of(request),
            include_completed=values["includeCompleted"],
            include_deleted=values["includeDeleted"],
            filters=filters,
        )
        return Response(format_todos(todos, uid=uid))

    @extend_schema(
        operation_id="todos_put",
        summary="Create or replace a todo (id in the body)",
        description="As the put_todo tool: creates the todo, or replaces every field of the todo with this id "
        "(createdAt is kept, a deleted todo is restored). 201 when created, 200 when replaced.",
        request=body(PUT_DOC, patterns=ID_PATTERNS),
        responses=responses({200: TodoSerializer, 201: TodoSerializer}, 400, 409),
    )
    def post(self, request: Request) -> Response:
        return self.put_todo(_body(request))


class TodoDetailView(TodosView):
    @extend_schema(
        operation_id="todos_get",
        summary="Read a todo (deleted ones too)",
        parameters=[TODO_ID],
        responses=responses({200: TodoSerializer}, 400, 404),
    )
    def get(self, request: Request, todo_id: str) -> Response:
        return self.answer(selectors.todo_get(owner=user_of(request), key=_key(todo_id), include_deleted=True))

    @extend_schema(
        operation_id="todos_replace",
        summary="Create or replace the todo with this id",
        description="As put_todo, with the id in the URL: every field takes the value given or its default. "
        "201 when created, 200 when replaced.",
        parameters=[TODO_ID],
        request=body(REPLACE_DOC, patterns=ID_PATTERNS),
        responses=responses({200: TodoSerializer, 201: TodoSerializer}, 400, 409),
    )
    def put(self, request: Request, todo_id: str) -> Response:
        body = _body(request)
        if "id" in body and body["id"] != todo_id:
            problem = "id in the body must be the id in the URL (or be left out)"
            raise ApiError(status.HTTP_400_BAD_REQUEST, "validation_error", problem, {"id": problem})
        return self.put_todo({**body, "id": todo_id})

    @extend_schema(
        operation_id="todos_destroy",
        summary="Delete a todo (soft: it can be restored)",
        parameters=[TODO_ID],
        responses=responses({200: TodoSerializer}, 400, 404),
    )
    def delete(self, request: Request, todo_id: str) -> Response:
        return self.answer(services.todo_delete(owner=user_of(request), key=_key(todo_id)))

    @extend_schema(
        operation_id="todos_update",
        summary="Change some fields of a todo",
        description="As the update_todo tool: only the fields given change; null clears an optional field "
        "(completedAt, deadlineAt, links, tags, blockedBy, description, priority); the same rules as a put. "
        "404 for a deleted todo.",
        parameters=[TODO_ID],
        request=body(PATCH_DOC, patterns=ID_PATTERNS),
        responses=responses({200: TodoSerializer}, 400, 404, 409),
    )
    def patch(self, request: Request, todo_id: str) -> Response:
        body = _body(request)
        if "id" in body and body["id"] != todo_id:
            problem = "id in the body must be the id in the URL (or be left out)"
            raise ApiError(status.HTTP_400_BAD_REQUEST, "validation_error", problem, {"id": problem})
        key, changes, problems = update_fields({**body, "id": _key(todo_id)})
        fail_on(problems, UPDATE_INPUT)
        return self.answer(services.todo_update(owner=user_of(request), key=key, changes=changes))


def _claim_body(request: Request, schema: Mapping[str, Any]) -> dict[str, Any]:
    values, problems = read(schema, _body(request))
    fail_on(problems, schema)
    return values


class TodoClaimView(TodosView):
    @extend_schema(
        operation_id="todos_claim",
        summary="Claim a todo (someone is working on it)",
        description="As the claim_todo tool: the todo is `by`'s for `minutes` (30, at most 1440) from now, and a "
        "new claim answers `leaseToken` once; the holder renews with it. 409 `claimed`, naming the holder and "
        "when their lease ends, while someone else's claim runs; 409 `conflict` for a completed todo.",
        parameters=[TODO_ID],
        request=body(API_CLAIM_INPUT, patterns={"by": ID_PATTERN}),
        responses=responses({200: TodoSerializer}, 400, 404, 409),
    )
    def post(self, request: Request, todo_id: str) -> Response:
        values = _claim_body(request, API_CLAIM_INPUT)
        todo = leases.todo_claim(
            owner=user_of(request), key=_key(todo_id), by=values["by"], minutes=values["minutes"],
            token=values.get("leaseToken"),
        )
        answer = format_todo(todo, uid=account_for(user_of(request)).uid)
        if todo.lease_token:
            answer["leaseToken"] = todo.lease_token
        return Response(answer)


class TodoReleaseView(TodosView):
    @extend_schema(
        operation_id="todos_release",
        summary="Hand a claimed todo back",
        description="Ends the claim on the todo (with by or leaseToken, only the holder's own: 409 otherwise); a "
        "todo nobody holds is returned as it is.",
        parameters=[TODO_ID],
        request=body(API_RELEASE_INPUT, patterns={"by": ID_PATTERN}),
        responses=responses({200: TodoSerializer}, 400, 404, 409),
    )
    def post(self, request: Request, todo_id: str) -> Response:
        values = _claim_body(request, API_RELEASE_INPUT)
        # With by or a leaseToken the caller releases as an agent; without, as the person the API key stands for.
        agent = values.get("by") is not None or values.get("leaseToken") is not None
        holder = leases.Holder(token=values.get("leaseToken")) if agent else None
        return self.answer(leases.todo_release(owner=user_of(request), key=_key(todo_id), holder=holder))


def _action(verb: str, service: Callable[..., Todo], summary: str, description: str) -> type[TodosView]:
    @extend_schema(
        operation_id=f"todos_{verb}",
        summary=summary,
        description=description,
        parameters=[TODO_ID],
        request=None,
        responses=responses({200: TodoSerializer}, 400, 404),
    )
    def post(self: TodosView, request: Request, todo_id: str) -> Response:
        return self.answer(service(owner=user_of(request), key=_key(todo_id)))

    return type(f"Todo{verb.title()}View", (TodosView,), {"post": post})


class TodoPurgeView(TodosView):
    permission_classes = [IsPerson]

    @extend_schema(
        operation_id="todos_purge",
        summary="Purge a deleted todo for good (people only)",
        description="Frees its place in the plan. Only a deleted todo can be purged, and only by a "
        "signed-in person (session and CSRF token), never with an API key.",
        parameters=[TODO_ID],
        request=None,
        responses=responses({204: None}, 400, 403, 404),
    )
    def post(self, request: Request, todo_id: str) -> Response:
        services.todo_purge(owner=user_of(request), key=_key(todo_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


ACTIONS: dict[str, type[TodosView]] = {
    "complete": _action(
        "complete",
        services.todo_complete,
        "Complete a todo",
        "completedAt = now; a completed todo is returned unchanged; 404 for a deleted one.",
    ),
    "reopen": _action("reopen", services.todo_reopen, "Reopen a completed todo", "Clears completedAt."),
    "delete": _action(
        "delete",
        services.todo_delete,
        "Delete a todo (soft)",
        "The same as DELETE on the todo: it can be restored, and counts in the plan until purged.",
    ),
    "restore": _action(
        "restore",
        services.todo_restore,
        "Restore a deleted todo",
        "Brings it back as it was; a live todo is returned unchanged.",
    ),
    "purge": TodoPurgeView,
    "claim": TodoClaimView,
    "release": TodoReleaseView,
}
