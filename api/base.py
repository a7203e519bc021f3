"""The REST API's plumbing: who is calling, how errors read, the OpenAPI schema's hooks, the API's 404.

The API is another interface over the same core as MCP: the same credentials (an API key as
``Authorization: Bearer pbx_…`` or ``?uid=&key=``, an OAuth token where it was issued for the URL), plus the
web pages' session, for which DRF checks the CSRF token on every write. Errors are JSON objects shaped like
the MCP errors: ``{"error": <code>, "message": <sentence>, "details": {<field>: <text>}}``.

Each app's views (``todos.api``, ``pillbox.api``) translate their own domain errors into ``ApiError``; this
module knows nothing about either app. Their URLs are mounted by ``api.urls`` (Django's ``include`` imports a
module at once), so importing this module (as DRF does for the exception handler, as every endpoint does) never
imports their views.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, OpenApiRequest, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.auth import mcp_caller
from accounts.caller import Caller
from accounts.throttle import give_back, take_slot
from base.invisible import format_class
from base.jsonbody import SafeJSONParser

UNAUTHORIZED_MESSAGE = "Send Authorization: Bearer <API key>, or ?uid=&key=, or sign in"


# --- who is calling -----------------------------------------------------------------------------------------


class KeyAuthentication(BaseAuthentication):
    """The MCP endpoints' credentials (``accounts.auth.mcp_caller``); ``request.auth`` is the ``Caller``.

    Requests carrying none of them are left to the session authentication that follows.
    """

    def authenticate(self, request: Request) -> tuple[Any, Caller] | None:
        raw = request._request
        scheme, _, token = raw.headers.get("Authorization", "").partition(" ")
        if not (scheme.lower() == "bearer" and token.strip()) and not (raw.GET.get("uid") or raw.GET.get("key")):
            return None
        found = mcp_caller(raw)
        if isinstance(found, HttpResponse):
            if found.status_code == status.HTTP_429_TOO_MANY_REQUESTS:  # too many failed credentials from here
                refusal = ApiError(
                    status.HTTP_429_TOO_MANY_REQUESTS, "rate_limited", json.loads(found.content)["message"]
                )
                refusal.wait = int(found["Retry-After"])
                raise refusal
            raw.api_credentials_rejected = True  # type: ignore[attr-defined]  # a mark, read by getattr below
            # The refusal names what was recognised (API key, OAuth token, uid and key) and that it was refused.
            raise exceptions.AuthenticationFailed(json.loads(found.content)["message"])
        return found.user, found

    def authenticate_header(self, request: Request) -> str:
        # Present (rather than DRF's 403 for sessions) so that a missing login is a 401 with a challenge.
        if getattr(request._request, "api_credentials_rejected", False):
            return 'Bearer realm="api", error="invalid_token"'
        return 'Bearer realm="api"'


# drf-spectacular registers each extension in its __init_subclass__, which it leaves unannotated.
class KeyAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = KeyAuthentication
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (`pbx_…`, from `manage.py createkey` or the account page); the seed's "
            "`?uid=<uid>&key=<key>` query form works too.",
        }


class IsPerson(BasePermission):
    """Purging (a real delete) is for people in the browser, not for programs holding a key."""

    message = "Purging is for people: sign in to the web pages to purge (API keys and tokens cannot)"

    def has_permission(self, request: Request, view: APIView) -> bool:
        return bool(request.user and request.user.is_authenticated and request.auth is None)


def user_of(request: Request) -> User:
    """The key's user or the signed-in person: the views' IsAuthenticated let no one else in."""
    user = request.user
    if not user.is_authenticated:
        raise exceptions.NotAuthenticated()
    return user


def caller_of(request: Request) -> Caller:
    """The ``Caller`` the core's access rules take: the key's, or one made for the signed-in person."""
    if isinstance(request.auth, Caller):
        return request.auth
    return Caller(user=user_of(request), transport="http", workdir=settings.PILLBOX_ROOT, request=request._request)


# --- errors -------------------------------------------------------------------------------------------------


class ApiError(exceptions.APIException):
    """A domain error as the API answers it: a status, the MCP error code, its sentence and per-field details."""

    def __init__(self, status_code: int, code: str, message: str, details: Mapping[str, object] | None = None):
        super().__init__(message, code)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.details = {str(key): str(value) for key, value in (details or {}).items()}
        self.wait: int | None = None  # seconds, for a 429's Retry-After


_CODES: dict[type[exceptions.APIException], str] = {
    exceptions.NotAuthenticated: "unauthorized",
    exceptions.AuthenticationFailed: "unauthorized",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "invalid_input",
    exceptions.ParseError: "invalid_input",
    exceptions.ValidationError: "validation_error",
    exceptions.Throttled: "rate_limited",
}


def error_body(code: str, message: str, details: Mapping[str, str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": code, "message": message}
    if details:
        body["details"] = dict(details)
    return body


def exception_handler(exc: Exception, context: Mapping[str, Any]) -> Response | None:
    """Every API error in the one shape; anything unexpected is left to Django (logged, a plain 500)."""
    if isinstance(exc, ApiError):
        response = Response(error_body(exc.code, exc.message, exc.details), status=exc.status_code)
        if exc.wait:
            response["Retry-After"] = str(exc.wait)
        return response
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    if not isinstance(exc, exceptions.APIException):
        return None
    code = next((name for kind, name in _CODES.items() if isinstance(exc, kind)), "error")
    if isinstance(exc, exceptions.NotAuthenticated):
        message = UNAUTHORIZED_MESSAGE
    elif isinstance(exc.detail, str):
        message = str(exc.detail)
    else:
        message = "The request cannot be read"
    details = None
    if isinstance(exc.detail, Mapping):
        details = {
            str(key): " ".join(map(str, value)) if isinstance(value, list) else str(value)
            for key, value in exc.detail.items()
        }
    response = Response(error_body(code, message, details), status=exc.status_code)
    if auth_header := getattr(exc, "auth_header", None):
        response["WWW-Authenticate"] = auth_header
    if wait := getattr(exc, "wait", None):
        response["Retry-After"] = str(int(wait))
    return response


class ErrorSerializer(serializers.Serializer[Mapping[str, Any]]):
    error = serializers.CharField(help_text="A code: not_found, validation_error, invalid_input, unauthorized, …")
    message = serializers.CharField(help_text="One sentence saying what went wrong and what to do.")
    details = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        help_text="Per field: what is wrong with it, or the id asked for.",
    )


def responses(ok: Mapping[int, Any], *errors: int) -> dict[int, Any]:
    """An operation's documented answers: its successes, the errors it names, 401 and 429 (too many failed
    credentials from one address: ``accounts.auth``), which every operation may answer."""
    return {**ok, **{code: ErrorSerializer for code in (*errors, 401, 429)}}


# --- reading input ------------------------------------------------------------------------------------------

_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def query_arguments(request: Request, schema: Mapping[str, Any], *, rename: Mapping[str, str] = {}) -> dict[str, Any]:
    """The query parameters the schema names, with booleans and integers read from their text.

    A value that does not read as its type is passed on as text, so ``read_arguments`` names the problem. Other
    parameters (``uid`` and ``key`` among them) are ignored.
    """
    found: dict[str, Any] = {}
    for name, spec in schema.get("properties", {}).items():
        raw = request.query_params.get(rename.get(name, name))
        if raw is None:
            continue
        kind = spec.get("type")
        if kind == "boolean":
            lowered = raw.strip().lower()
            found[name] = True if lowered in _TRUE else False if lowered in _FALSE else raw
        elif kind == "integer":
            try:
                found[name] = int(raw)
            except ValueError:
                found[name] = raw
        else:
            found[name] = raw
    return found


# Characters the core refuses in text: control characters; newline and tab are
# allowed in multi-line fields. The MCP schemas leave this to the sentence the tool answers; the API's documented
# schema says it, so that clients (and schemathesis) know which strings will be accepted.
# (Lone surrogates are refused too, but cannot travel in UTF-8, and a surrogate range is not a portable regex.)
REFUSED = r"\u0000-\u001f\u007f-\u009f"
REFUSED_MULTILINE = r"\u0000-\u0008\u000b-\u001f\u007f-\u009f"
MULTILINE = ("content", "description")


def documented(
    schema: Mapping[str, Any],
    *,
    nonblank: Collection[str] = (),
    visible: Collection[str] = (),
    patterns: Mapping[str, str] = {},
) -> dict[str, Any]:
    """A copy of a JSON schema whose strings say which characters are refused (and, for ``nonblank`` fields, that
    they need more than whitespace; for ``visible`` ones, that invisible formatting characters are refused too);
    ``patterns`` replaces a field's pattern (``name[]`` for an array's items)."""

    def string(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        spec = dict(spec)
        kinds = spec.get("type")
        if isinstance(spec.get("anyOf"), list):  # a nullable field: its branches say it
            spec["anyOf"] = [string(name, b) if isinstance(b, Mapping) else b for b in spec["anyOf"]]
        elif spec.get("type") == "array" and isinstance(spec.get("items"), Mapping):
            spec["items"] = string(f"{name}[]", spec["items"])
        elif (kinds == "string" or (isinstance(kinds, list) and "string" in kinds)) and "enum" not in spec:
            if name in patterns:
                spec["pattern"] = patterns[name]
            elif "pattern" not in spec:
                lookahead = r"(?=[\s\S]*\S)" if name in nonblank else ""
                refused = REFUSED_MULTILINE if name in MULTILINE else REFUSED
                if name in visible:
                    refused += format_class()
                spec["pattern"] = f"^{lookahead}[^{refused}]*$"
        return spec

    copy = dict(schema)
    copy["properties"] = {name: string(name, spec) for name, spec in schema.get("properties", {}).items()}
    return copy


def body(schema: Mapping[str, Any], **documenting: Any) -> OpenApiRequest:
    """A JSON request body documented by the JSON schema that reads it (the MCP tool's)."""
    return OpenApiRequest(documented(schema, **documenting))


def query_parameters(
    schema: Mapping[str, Any], *, rename: Mapping[str, str] = {}, **documenting: Any
) -> list[OpenApiParameter]:
    """The query parameters of a JSON schema, documented with its exact types and bounds."""
    parameters = []
    for name, spec in documented(schema, **documenting).get("properties", {}).items():
        raw = {key: value for key, value in spec.items() if key != "description"}
        parameters.append(OpenApiParameter(rename.get(name, name), raw, description=spec.get("description", "")))
    return parameters


def require_bodies(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular hook: a body whose schema requires fields is itself required (a raw JSON schema body is
    otherwise documented as optional)."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            content = operation.get("requestBody", {}).get("content", {}) if isinstance(operation, dict) else {}
            schemas = [media.get("schema", {}) for media in content.values()]
            if any(schema.get("required") or schema.get("minProperties") for schema in schemas):
                operation["requestBody"]["required"] = True
    return result


# --- views --------------------------------------------------------------------------------------------------


class ApiView(APIView):
    """The base of every API view: key or session, signed in, JSON in."""

    authentication_classes = [KeyAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [SafeJSONParser]
    _slot_of: object = None  # the user whose in-flight slot this request holds

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        """After authentication, permissions and the rate: one of the user's in-flight slots, shared with the MCP
        endpoints (``MCP_USER_CONCURRENCY``), held until the answer is made, so that one user's slow requests
        cannot take every thread that serves everyone."""
        super().initial(request, *args, **kwargs)
        user_id = request.user.pk
        refusal = take_slot(user_id, "requests (MCP and REST API together)")
        if refusal is not None:
            error = ApiError(status.HTTP_429_TOO_MANY_REQUESTS, "rate_limited", refusal.message)
            error.wait = refusal.retry_after
            raise error
        self._slot_of = user_id

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        if self._slot_of is not None:
            give_back(self._slot_of)
            self._slot_of = None
        return super().finalize_response(request, response, *args, **kwargs)


@extend_schema_field({"type": "string", "pattern": "^[0-9a-f]{12}$", "example": "019e1d521a89"})
class ShortIdField(serializers.Field[UUID, Any, str, Any]):
    """A UUID shown as agents see it: its first 12 hex digits."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(read_only=True, **kwargs)

    def to_representation(self, value: UUID) -> str:
        return value.hex[:12]


def not_found(request: HttpRequest, unmatched: str = "") -> JsonResponse:
    """Unknown URLs under /api/ answer in the API's shape, pointing at the slash a URL may be missing."""
    message = f"There is no API endpoint at {request.path}; see /api/docs/"
    if not request.path.endswith("/"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not not_found:
            message = f"There is no API endpoint at {request.path}; the API's URLs end with a slash: {request.path}/"
    return JsonResponse(error_body("not_found", message), status=status.HTTP_404_NOT_FOUND)

