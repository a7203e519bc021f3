"""stdio transport for the MCP bridge: one process, one local user, nothing but protocol on stdout.

A local agent starts its stdio servers often and waits for the handshake each time. ``manage.py mcp`` calls
``main`` before anything sets Django up: ``initialize`` and ``tools/list`` are answered from the servers'
definitions (``mcp_bridge/definitions.py``), while Django, the global database and the local user are made
in the background, in the thread the tools run in, and awaited by the first call.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from asgiref.sync import sync_to_async
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.stdio import stdio_server

from mcp_bridge import definitions
from mcp_bridge.server import StdioState, build_server, fixed_lifespan
from mcp_bridge.tools import ToolFailure, ToolSet

if TYPE_CHECKING:
    from mcp_bridge.tools import Caller

logger = logging.getLogger("mcp_bridge")


def serve_stdio(
    toolset: ToolSet, lifespan: Callable[[Server[Any]], AbstractAsyncContextManager[StdioState]]
) -> None:
    server = build_server(toolset, lifespan=lifespan)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def local_username(given: str | None) -> str:
    """The local user a stdio server serves: ``--user``, else $PILLBOX_USER, else the login name ('' if none)."""
    return given or os.environ.get("PILLBOX_USER") or getpass.getuser()


def local_caller(username: str) -> Caller:
    """The stdio caller: the global database migrated when it is behind, the local user found or made."""
    from accounts.services import user_get_or_create
    from base.bootstrap import ensure_global_db
    from mcp_bridge.tools import Caller

    ensure_global_db()
    return Caller(user=user_get_or_create(username=username), transport="stdio", workdir=Path.cwd())


def serve_registered(toolset: ToolSet, caller: Caller) -> None:
    """Serve a registry's own toolset from a process that has already set Django up."""
    serve_stdio(toolset, fixed_lifespan(StdioState(caller)))


class DjangoSetup:
    """Django, the server's registered tools and the caller, made once (again after a failure) off the loop.

    It runs on the thread ``sync_to_async`` gives the stdio tools, so the connection it opens is theirs.
    """

    def __init__(self, server: str, username: str, internal_error_text: str) -> None:
        self.server = server
        self.username = username
        self.internal_error_text = internal_error_text
        self.task: asyncio.Future[tuple[ToolSet, Caller]] | None = None

    def start(self) -> asyncio.Future[tuple[ToolSet, Caller]]:
        if self.task is None or (self.task.done() and (self.task.cancelled() or self.task.exception())):
            self.task = asyncio.ensure_future(sync_to_async(self.load, thread_sensitive=True)())
            self.task.add_done_callback(self.report)
        return self.task

    def load(self) -> tuple[ToolSet, Caller]:
        import django

        django.setup()
        from django.conf import settings
        from django.utils.module_loading import import_string

        toolset: ToolSet = import_string(settings.MCP_SERVERS[self.server])
        caller = local_caller(self.username)
        if toolset.warm_up is not None:
            toolset.warm_up()  # e.g. Pillbox's model starts loading in the background: no call waits for it
        return toolset, caller

    def report(self, task: asyncio.Future[tuple[ToolSet, Caller]]) -> None:
        if not task.cancelled() and (error := task.exception()) is not None:
            logger.error("the %s server could not set up", self.server, exc_info=error)

    async def caller(self) -> Caller:
        try:
            # Shielded: a cancelled call must not cancel the setup other calls wait for.
            return (await asyncio.shield(self.start()))[1]
        except Exception:  # reported once by report(); every call answers the server's own failure text
            raise ToolFailure(self.internal_error_text) from None

    def toolset(self) -> ToolSet:
        assert self.task is not None, "tools run only after caller() returned"
        return self.task.result()[0]

    async def start_once_listed(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Middleware: the setup begins when the tools are listed, so nothing competes with the handshake."""
        result = await call_next(ctx)
        if ctx.method == "tools/list":
            self.start()
        return result

    def lifespan(self) -> Callable[[Server[Any]], AbstractAsyncContextManager[StdioState]]:
        @asynccontextmanager
        async def lifespan(server: Server[Any]) -> AsyncIterator[StdioState]:
            server.middleware.append(self.start_once_listed)
            yield StdioState(start=self.caller)

        return lifespan


def parse(argv: list[str]) -> tuple[str, str | None] | None:
    """``SERVER [--user NAME]``, in either order; None for anything else."""
    argv = [part for arg in argv for part in (arg.split("=", 1) if arg.startswith("--user=") else [arg])]
    match argv:
        case [server]:
            return server, None
        case [server, "--user", user] | ["--user", user, server]:
            return server, user
    return None


def main(argv: list[str]) -> int | None:
    """``manage.py mcp SERVER [--user NAME]`` served before Django is set up; None leaves any other arguments
    (``--help``, Django's own options, an unknown server, no user name) to the management command."""
    parsed = parse(argv)
    servers = definitions.servers()
    if parsed is None or parsed[0] not in servers:
        return None
    server, user = parsed
    username = local_username(user)
    if not username:
        return None
    definition = servers[server]
    setup = DjangoSetup(server, username, definition["internal_error_text"])
    serve_stdio(definitions.deferred_toolset(definition, setup.toolset), setup.lifespan())
    return 0
