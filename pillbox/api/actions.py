"""The POST actions on a record (close, reopen, discard, restore) and the purges only signed-in people may make:
each a view class of its own, made from its name, its id parameter and what it runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import IsPerson, responses
from pillbox.api.common import PillboxView


def action_view(
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


def purge_view(name: str, parameter: OpenApiParameter, noun: str, purge: Callable[..., object]) -> type[PillboxView]:
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
