"""stdio transport for the MCP bridge: one process, one local user, nothing but protocol on stdout."""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server

from config.mcp.server import StdioState, build_server, fixed_lifespan
from config.mcp.tools import Caller, ToolSet


def serve_stdio(toolset: ToolSet, caller: Caller) -> None:
    server = build_server(toolset, lifespan=fixed_lifespan(StdioState(caller)))

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
