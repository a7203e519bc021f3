"""Real MCP clients for end-to-end tests: the SDK's own client over Streamable HTTP and over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


def run(awaitable: Awaitable[T]) -> T:
    return asyncio.run(awaitable)  # type: ignore[arg-type]


@asynccontextmanager
async def http_client(
    url: str, *, key: str | None = None, mode: str = "legacy", name: str | None = None
) -> AsyncIterator[Client]:
    """``name``: the clientInfo name the client gives itself (the SDK's own by default)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(
            streamable_http_client(url, http_client=http), mode=mode, client_info=_info(name)
        ) as client:
            yield client


def stdio_params(
    server: str, *, home: Path, cwd: Path, user: str | None = "alice", **env: str
) -> StdioServerParameters:
    args = [str(ROOT / "manage.py"), "mcp", server]
    if user:
        args += ["--user", user]
    environment = {**os.environ, "PILLBOX_HOME": str(home), "HOME": str(home), "PYTHONUNBUFFERED": "1", **env}
    environment.pop("DATABASE_URL", None)
    environment.pop("PILLBOX_ROOT", None)
    # pytest-django exports the full settings module; an agent's process gets the slim stdio settings that
    # manage.py picks for `mcp`, and so must the servers under test.
    environment.pop("DJANGO_SETTINGS_MODULE", None)
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(cwd), env=environment)


@asynccontextmanager
async def stdio_client(server: str, *, home: Path, cwd: Path, user: str | None = "alice", mode: str = "legacy",
                       name: str | None = None, **env: str) -> AsyncIterator[Client]:
    params = stdio_params(server, home=home, cwd=cwd, user=user, **env)
    async with Client(params, mode=mode, client_info=_info(name)) as client:
        yield client


def stdio_calls(server: str, *, home: Path, cwd: Path, calls: list[tuple[str, dict[str, Any]]],
                user: str | None = "alice", **env: str) -> list[tuple[bool, str]]:
    """Each call in one stdio session of ``server``: (is_error, text) of every answer."""
    async def scenario() -> list[tuple[bool, str]]:
        async with stdio_client(server, home=home, cwd=cwd, user=user, **env) as client:
            answers = []
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                answers.append((bool(result.is_error), text_of(result)))
            return answers

    return run(scenario())


def _info(name: str | None) -> Implementation | None:
    return Implementation(name=name, version="1.0") if name else None


def text_of(result: Any) -> str:
    return "".join(getattr(item, "text", "") for item in result.content)


def json_of(result: Any) -> Any:
    return json.loads(text_of(result))
