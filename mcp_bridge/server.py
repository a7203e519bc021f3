"""The MCP bridge: one low-level SDK ``Server`` per ``ToolSet``, the same for every transport.

The caller travels as the request's lifespan state: the HTTP view passes it to ``serve_one`` per request,
the stdio runner enters a lifespan that yields it once for the process.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import close_old_connections
from mcp.server import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from mcp_bridge.http_loop import run_beside_loop
from mcp_bridge.tools import Caller, Tool, ToolFailure, ToolReply, ToolSet

logger = logging.getLogger("mcp_bridge")

# Roots are how a stdio client tells us its project directory; the SDK marks them deprecated for protocol
# 2026-07-28, but clients of every older version still send them, and the warning on stderr would only reach
# the person as noise in their client's log.
warnings.filterwarnings("ignore", message="The roots capability is deprecated", category=MCPDeprecationWarning)


def tool_listing(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=dict(tool.input_schema),
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,
            idempotent_hint=tool.idempotent,
            open_world_hint=False,
        ),
    )


ROOTS_TIMEOUT = 5


@dataclass
class StdioState:
    """A stdio process's one caller; its working directory may be replaced by the client's first root.

    A process that answered the handshake before setting Django up has no caller yet: ``start`` makes it on the
    first call (and raises ``ToolFailure`` with the text to answer when it cannot).
    """

    caller: Caller | None = None
    start: Callable[[], Awaitable[Caller]] | None = None
    roots_checked: bool = False


def _file_root(uri: str) -> Path | None:
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    path = Path(unquote(parts.path))
    return path if path.is_dir() else None


async def resolve_caller(ctx: Any) -> Caller:
    state: Caller | StdioState = ctx.lifespan_context
    if not isinstance(state, StdioState):
        return state
    if state.caller is None:
        assert state.start is not None
        state.caller = await state.start()
    if not state.roots_checked:
        state.roots_checked = True
        if ctx.session.check_client_capability(types.ClientCapabilities(roots=types.RootsCapability())):
            try:
                with anyio.fail_after(ROOTS_TIMEOUT):
                    roots = (await ctx.session.list_roots()).roots
            except Exception:  # a client that declares roots but cannot list them keeps the process directory
                logger.warning("the client declared roots but did not list them", exc_info=True)
                roots = []
            for root in roots:
                if (path := _file_root(str(root.uri))) is not None:
                    state.caller = replace(state.caller, workdir=path)
                    break
    return state.caller


def run_tool(toolset: ToolSet, tool: Tool, caller: Caller, arguments: dict[str, Any]) -> ToolReply:
    """Run one handler synchronously; every failure becomes a tool result, never a trace."""
    # No request signals fire in a stdio process: drop connections a failed call left unusable, or that outlived
    # CONN_MAX_AGE. An HTTP call runs inside its request, whose signals do that.
    tidy = caller.transport != "http"
    if tidy:
        close_old_connections()
    try:
        reply = tool.handler(caller, arguments)
    except ToolFailure as failure:
        return ToolReply(failure.text, is_error=True)
    except Exception:
        logger.exception("tool %s failed", tool.name)
        return ToolReply(toolset.internal_error_text, is_error=True)
    finally:
        if tidy:
            close_old_connections()
    return reply if isinstance(reply, ToolReply) else ToolReply(str(reply))


def build_server(
    toolset: ToolSet,
    *,
    lifespan: Callable[[Server[Any]], AbstractAsyncContextManager[Any]] | None = None,
) -> Server[Any]:
    listing = types.ListToolsResult(tools=[tool_listing(tool) for tool in toolset.tools])
    run = sync_to_async(run_tool, thread_sensitive=True)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = toolset.by_name.get(params.name)
        if tool is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        try:
            caller = await resolve_caller(ctx)
        except ToolFailure as failure:
            return types.CallToolResult(content=[types.TextContent(type="text", text=failure.text)], is_error=True)
        arguments = dict(params.arguments or {})
        if (client := ctx.session.client_params) is not None and client.client_info.name:
            caller = replace(caller, client_name=client.client_info.name)
        if caller.transport == "http":
            reply = run_beside_loop(run_tool, toolset, tool, caller, arguments)
        else:
            reply = await run(toolset, tool, caller, arguments)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=reply.text)],
            structured_content=reply.structured,
            is_error=reply.is_error,
        )

    handlers: dict[str, Any] = {"on_list_tools": list_tools, "on_call_tool": call_tool}
    if toolset.prompts:
        prompts = {prompt.name: prompt for prompt in toolset.prompts}
        prompt_listing = types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=prompt.name,
                    title=prompt.title,
                    description=prompt.description,
                    arguments=[
                        types.PromptArgument(name=a.name, description=a.description, required=a.required)
                        for a in prompt.arguments
                    ],
                )
                for prompt in toolset.prompts
            ]
        )

        async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
            return prompt_listing

        async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
            prompt = prompts.get(params.name)
            if prompt is None:
                raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
            try:
                await resolve_caller(ctx)  # a stdio process renders its prompts once Django is set up
                messages = prompt.render(dict(params.arguments or {}))
            except ToolFailure as failure:
                raise MCPError(code=types.INVALID_PARAMS, message=failure.text) from None
            return types.GetPromptResult(
                description=prompt.description,
                messages=[
                    types.PromptMessage(role=role, content=types.TextContent(type="text", text=text))
                    for role, text in messages
                ],
            )

        handlers.update(on_list_prompts=list_prompts, on_get_prompt=get_prompt)

    extra: dict[str, Any] = {"lifespan": lifespan} if lifespan is not None else {}
    server: Server[Any] = Server(
        toolset.name, version=toolset.version, instructions=toolset.instructions, **extra, **handlers
    )
    # OpenTelemetry is a no-op without an exporter, but it still costs every call a span object.
    server.middleware.clear()

    async def discover(ctx: Any, params: types.RequestParams) -> types.DiscoverResult:
        # The SDK's own answer names only the stateless versions; this server also serves the handshake ones,
        # and says so in the same list as its -32022 errors (clients keep the versions they know).
        return types.DiscoverResult(
            supported_versions=list(KNOWN_PROTOCOL_VERSIONS),
            capabilities=server.get_capabilities(protocol_version=ctx.protocol_version),
            instructions=server.instructions,
        )

    server.add_request_handler("server/discover", types.RequestParams, discover)
    return server


def fixed_lifespan(state: Any) -> Callable[[Server[Any]], AbstractAsyncContextManager[Any]]:
    @asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[Any]:
        yield state

    return lifespan
