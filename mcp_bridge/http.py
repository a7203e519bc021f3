"""Streamable HTTP for the MCP bridge, as a plain Django view: stateless, JSON responses, WSGI or ASGI.

Protocol validation, negotiation and dispatch are the SDK's (``serve_one``, ``classify_inbound_request``);
this module only speaks HTTP: method, Origin, size, authentication, media types, batches, statuses.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
import mcp_types as types
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.runner import serve_one
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    classify_inbound_request,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types.jsonrpc import jsonrpc_message_adapter
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, KNOWN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_bridge.http_loop import run_here
from mcp_bridge.limits import Refusal, in_flight, rate_refusal
from mcp_bridge.page import endpoint_page, wants_page
from mcp_bridge.tools import Caller

logger = logging.getLogger("mcp_bridge")

DEFAULT_VERSION = "2025-03-26"  # the spec's reading of a request without MCP-Protocol-Version
BATCH_VERSIONS = frozenset({"2024-11-05", "2025-03-26"})
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
# Every version this endpoint serves: the -32022 errors and server/discover name the same list.
SUPPORTED_VERSIONS = list(KNOWN_PROTOCOL_VERSIONS)
THROTTLED = -32000  # implementation-defined server error: the HTTP 429 carries it with Retry-After

Authenticator = Callable[[HttpRequest], "Caller | HttpResponse"]

@dataclass
class _HttpDispatchContext:
    """One POST's dispatch context: JSON responses leave no room for server-to-client messages."""

    transport: TransportContext
    request_id: types.RequestId | None
    message_metadata: ServerMessageMetadata
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = False

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


def _json(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> HttpResponse:
    response = HttpResponse(json.dumps(body, separators=(",", ":")), status=status, content_type="application/json")
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _error(code: int, message: str, request_id: Any = None, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _readable_id(decoded: Any) -> Any:
    """The request's id when it can be read (a JSON-RPC id is a string or an integer), else None."""
    request_id = decoded.get("id") if isinstance(decoded, dict) else None
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


def _unsupported_version(requested: str, request_id: Any) -> HttpResponse:
    data = {"supported": SUPPORTED_VERSIONS, "requested": requested}
    return _json(_error(types.UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", request_id, data), 400)


def _throttled(refusal: Refusal, decoded: Any) -> HttpResponse:
    """429 with Retry-After for HTTP-aware clients and proxies, and a JSON-RPC error body with the request's id,
    which the SDK's client hands to the caller as the error (a bare 429 would reach it as a nameless failure)."""
    body = _error(THROTTLED, refusal.message, _readable_id(decoded), {"retryAfter": refusal.retry_after})
    return _json(body, status=429, headers={"Retry-After": str(refusal.retry_after)})


def _origin_allowed(origin: str) -> bool:
    """DNS-rebinding protection: a browser page may only reach us from our own site or from loopback."""
    parts = urlsplit(origin)
    if parts.hostname is None:
        return False
    if parts.hostname in LOCAL_HOSTS:
        return True
    site = urlsplit(settings.SITE_URL)
    allowed = {(site.scheme, site.hostname, site.port)}
    allowed.update(("https", host, None) for host in getattr(settings, "MCP_ALLOWED_ORIGIN_HOSTS", ()))
    return (parts.scheme, parts.hostname, parts.port) in allowed


def _read_body(request: HttpRequest, limit: int) -> bytes | None:
    """The body, or None when it is over the limit (declared or actual)."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        return None
    body = request.read(limit + 1)
    return None if len(body) > limit else body


class McpEndpoint:
    def __init__(self, server_factory: Callable[[], Server[Any]], authenticate: Authenticator) -> None:
        self._server_factory = server_factory
        self._server: Server[Any] | None = None
        self._authenticate = authenticate

    @property
    def server(self) -> Server[Any]:
        if self._server is None:
            self._server = self._server_factory()
        return self._server

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            if wants_page(request):
                return endpoint_page(request)
            return HttpResponse(status=405, headers={"Allow": "POST"})
        origin = request.headers.get("Origin")
        if origin and not _origin_allowed(origin):
            return _json(_error(types.INVALID_REQUEST, "Origin not allowed"), status=403)
        body = _read_body(request, settings.MCP_MAX_BODY_BYTES)
        if body is None:
            return _json(_error(types.INVALID_REQUEST, "Request body is over 1 MiB"), status=413)
        caller = self._authenticate(request)
        if isinstance(caller, HttpResponse):
            return caller
        content_type = request.headers.get("Content-Type", "")
        if not content_type.lower().startswith("application/json"):
            return _json(_error(types.INVALID_REQUEST, "Content-Type must be application/json"), status=415)
        accept = request.headers.get("Accept", "")
        if accept and not any(kind in accept for kind in ("application/json", "*/*", "application/*")):
            return _json(_error(types.INVALID_REQUEST, "Accept must allow application/json"), status=406)
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            return _json(_error(types.PARSE_ERROR, "Parse error"), status=400)

        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in KNOWN_PROTOCOL_VERSIONS:
            return _unsupported_version(version, _readable_id(decoded))
        batch_cap = settings.MCP_MAX_BATCH
        if isinstance(decoded, list) and len(decoded) > batch_cap and (version or DEFAULT_VERSION) in BATCH_VERSIONS:
            message = f"A batch may hold at most {batch_cap} messages, got {len(decoded)}; split it into smaller ones"
            return _json(_error(types.INVALID_REQUEST, message, data={"maxBatch": batch_cap}), status=400)
        cost = len(decoded) if isinstance(decoded, list) else 1
        if refusal := rate_refusal(caller.user.pk, max(cost, 1)):
            return _throttled(refusal, decoded)
        with in_flight(caller.user.pk) as refusal:
            if refusal:
                return _throttled(refusal, decoded)
            if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                return run_here(self._modern(request, caller, decoded))
            return run_here(self._legacy(request, caller, decoded, version or DEFAULT_VERSION))

    def _dispatch_context(self, request: HttpRequest, request_id: Any) -> _HttpDispatchContext:
        return _HttpDispatchContext(
            transport=TransportContext(kind="streamable-http", can_send_request=False),
            request_id=request_id,
            message_metadata=ServerMessageMetadata(request_context=request),
        )

    async def _answer(
        self, request: HttpRequest, caller: Caller, message: types.JSONRPCRequest, connection: Connection
    ) -> dict[str, Any]:
        try:
            result = await serve_one(
                self.server,
                self._dispatch_context(request, message.id),
                message.method,
                message.params,
                connection=connection,
                lifespan_state=caller,
            )
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                logger.exception("MCP request %s failed", message.method)
                error = types.ErrorData(code=types.INTERNAL_ERROR, message="Internal server error")
            return {"jsonrpc": "2.0", "id": message.id, "error": error.model_dump(mode="json", exclude_none=True)}
        return {"jsonrpc": "2.0", "id": message.id, "result": result}

    async def _modern(self, request: HttpRequest, caller: Caller, decoded: Any) -> HttpResponse:
        if isinstance(decoded, dict) and "id" not in decoded:
            return HttpResponse(status=202)
        try:
            message = types.JSONRPCRequest.model_validate(decoded)
        except ValidationError:
            return _json(_error(types.INVALID_REQUEST, "Body must be a single JSON-RPC request"), status=400)
        headers = {key.lower(): value for key, value in request.headers.items()}
        route = classify_inbound_request(decoded, headers=headers)
        if isinstance(route, InboundLadderRejection):
            if route.code == types.UNSUPPORTED_PROTOCOL_VERSION and isinstance(route.data, dict):
                return _unsupported_version(str(route.data.get("requested")), message.id)
            status = ERROR_CODE_HTTP_STATUS.get(route.code, 400)
            return _json(_error(route.code, route.message, message.id, route.data), status=status)
        connection = Connection.from_envelope(route.protocol_version, route.client_info, route.client_capabilities)
        reply = await self._answer(request, caller, message, connection)
        status = ERROR_CODE_HTTP_STATUS.get(reply["error"]["code"], 200) if "error" in reply else 200
        return _json(reply, status=status)

    async def _legacy(self, request: HttpRequest, caller: Caller, decoded: Any, version: str) -> HttpResponse:
        if isinstance(decoded, list):
            if version not in BATCH_VERSIONS:
                return _json(_error(types.INVALID_REQUEST, f"Batches are not part of protocol {version}"), 400)
            if not decoded:
                return _json(_error(types.INVALID_REQUEST, "Empty batch"), status=400)
            replies = await self._batch(request, caller, decoded, version)
            return _json(replies) if replies else HttpResponse(status=202)
        reply = await self._legacy_one(request, caller, decoded, version)
        if reply is None:
            return HttpResponse(status=202)
        unreadable = reply.get("error", {}).get("code") == types.INVALID_REQUEST
        return _json(reply, status=400 if unreadable else 200)

    async def _batch(
        self, request: HttpRequest, caller: Caller, items: list[Any], version: str
    ) -> list[dict[str, Any]]:
        """Answer a batch in order within the request's time budget; what the budget leaves is refused by id,
        so one request cannot hold a worker for long whatever its messages ask."""
        budget = settings.MCP_REQUEST_BUDGET_SECONDS
        deadline = time.monotonic() + budget
        replies: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            if index and time.monotonic() >= deadline:
                message = (f"Not run: this batch used up the {budget:g} s of work one HTTP request may take; send "
                           "the remaining requests again")
                replies += [_error(THROTTLED, message, request_id) for rest in items[index:]
                            if (request_id := _readable_id(rest)) is not None]
                break
            if reply := await self._legacy_one(request, caller, item, version):
                replies.append(reply)
        return replies

    async def _legacy_one(
        self, request: HttpRequest, caller: Caller, item: Any, version: str
    ) -> dict[str, Any] | None:
        try:
            message = jsonrpc_message_adapter.validate_python(item, by_name=False)
        except ValidationError:
            request_id = item.get("id") if isinstance(item, dict) and isinstance(item.get("id"), str | int) else None
            return _error(types.INVALID_REQUEST, "Invalid JSON-RPC message", request_id)
        if not isinstance(message, types.JSONRPCRequest):
            return None  # notifications and responses need no answer on a stateless server
        connection = Connection.from_envelope(version, None, None)
        return await self._answer(request, caller, message, connection)


def mcp_endpoint(server_factory: Callable[[], Server[Any]], authenticate: Authenticator) -> Callable[..., Any]:
    return csrf_exempt(McpEndpoint(server_factory, authenticate))
