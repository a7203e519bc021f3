"""Shared by the Pillbox end-to-end tests: sessions through the SDK's own client, and reading the answers.

A scenario is an async function taking a ``call(tool, **arguments)`` coroutine, so the same scenario runs
over HTTP (the live server) and over stdio (a ``manage.py mcp pillbox`` subprocess), many calls per session.
"""

from __future__ import annotations

import asyncio
import functools
import re
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest
from django.core.servers.basehttp import WSGIRequestHandler
from django.db.backends.base.base import BaseDatabaseWrapper
from mcp.client import Client

from tests.clients import http_client, run, stdio_client, text_of

SHORT = re.compile(r"[0-9a-f]{12}")
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
DAY = re.compile(r"\d{4}-\d\d-\d\d")
AUTHOR = {"author_name": "Ada Lovelace", "author_email": "ada@example.com"}
PILLBOX_TOOLS = {
    "pill_store", "pill_read", "pill_revise", "pill_discard", "pill_search", "pill_compounds",
    "capsule_store", "capsule_read", "capsule_revise", "capsule_discard", "capsule_search", "capsule_compounds",
    "prescription_open", "prescription_close", "prescription_reopen", "prescription_read", "prescription_context",
    "prescription_discard", "bottle_create", "bottle_context", "bottle_list", "bottle_vinculate",
    "pill_duplicates", "pill_tidy", "pill_tidy_undo",
}


@dataclass(frozen=True)
class Answer:
    text: str
    is_error: bool

    @property
    def ok(self) -> str:
        assert not self.is_error, self.text
        return self.text

    @property
    def fields(self) -> dict[str, str]:
        return fields(self.ok)

    @property
    def code(self) -> str:
        """The error code of a failed call (asserting it failed, in the documented error layout)."""
        assert self.is_error, self.text
        first, second = self.text.split("\n")[:2]
        assert first.startswith("error: ") and second.startswith("message: "), self.text
        return first.removeprefix("error: ")

    @property
    def message(self) -> str:
        assert self.is_error, self.text
        return fields(self.text)["message"]

    @property
    def error_fields(self) -> dict[str, str]:
        assert self.is_error, self.text
        return fields(self.text)


class Call(Protocol):
    def __call__(self, tool: str, /, **arguments: Any) -> Awaitable[Answer]: ...


def fields(text: str) -> dict[str, str]:
    """The ``key: value`` lines of one record (the first occurrence of each key)."""
    found: dict[str, str] = {}
    for line in text.split("\n"):
        key, sep, value = line.partition(": ")
        if sep and key and " " not in key and key not in found:
            found[key] = value
    return found


def records(text: str) -> list[dict[str, str]]:
    """Blank-line separated records of ``key: value`` lines."""
    return [fields(block) for block in text.split("\n\n") if block.strip()]


def caller_for(client: Client) -> Call:
    async def call(tool: str, /, **arguments: Any) -> Answer:
        result = await client.call_tool(tool, arguments)
        text = text_of(result)
        assert "Traceback" not in text, text
        return Answer(text, bool(result.is_error))

    return call


def assert_recent(stamp: str, *, within: timedelta = timedelta(minutes=5)) -> datetime:
    assert ISO.fullmatch(stamp), stamp
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - moment) < within, stamp
    return moment


def short_id(value: str) -> str:
    assert SHORT.fullmatch(value), value
    return value


def millisecond(short: str) -> datetime:
    return datetime.fromtimestamp(int(short, 16) / 1000, tz=UTC)


def full_id(db: Path, table: str, short: str) -> uuid.UUID:
    """The whole UUID of a row of a local bottle database, read straight from the file."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(f"SELECT id FROM pillbox_{table} WHERE id LIKE ?", [short + "%"]).fetchall()
    assert len(rows) == 1, rows
    return uuid.UUID(rows[0][0])


def row(db: Path, table: str, short: str) -> dict[str, Any]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        conn.row_factory = sqlite3.Row
        found = conn.execute(f"SELECT * FROM pillbox_{table} WHERE id LIKE ?", [short + "%"]).fetchone()
    return dict(found)


def local_db(directory: Path) -> Path:
    return directory / ".pillbox" / "pillbox.db"


# ---------------------------------------------------------------- sessions

@pytest.fixture(name="site")
def site_fixture(live_server, monkeypatch) -> str:
    """The live server's URL, answering without the 40 ms Nagle/delayed-ACK stall per keep-alive request.

    Django's test server writes a response's headers and body separately; without TCP_NODELAY every MCP call
    waits for the client's delayed ACK, which would make these scenarios (hundreds of calls) 6x slower.
    """
    monkeypatch.setattr(WSGIRequestHandler, "disable_nagle_algorithm", True)
    return live_server.url


@pytest.fixture(name="local_bottles_over_http")
def local_bottles_over_http_fixture(transactional_db, django_db_blocker, monkeypatch):
    """Let the live server open local bottle databases.

    A Django test case refuses connections to database aliases it was not told about, and a local bottle's
    alias (``bottle:<path>``) is only made when the tool first needs it; its file is a fresh one in the test's
    tmp_path, so there is nothing to isolate.
    """
    real = django_db_blocker._real_ensure_connection
    assert real is not None
    monkeypatch.setattr(BaseDatabaseWrapper, "ensure_connection", real)


@asynccontextmanager
async def http_session(url: str, key: str, *, mode: str = "legacy") -> AsyncIterator[Call]:
    async with http_client(url + "/pillbox/mcp", key=key, mode=mode) as client:
        yield caller_for(client)


@functools.cache
def _template_home() -> Path:
    """A data directory whose global database is already migrated: copying it makes a subprocess start fast."""
    home = Path(tempfile.mkdtemp(prefix="pillbox-e2e-template-"))
    data = home / ".pillbox"

    async def start() -> None:
        async with stdio_client("pillbox", home=home, cwd=home, user="template", PILLBOX_HOME=str(data)) as client:
            await client.list_tools()

    run(start())
    for leftover in data.glob("pillbox.db-*"):
        leftover.unlink()
    return home


def fresh_home(where: Path) -> Path:
    """A new HOME for stdio servers: ``<home>/.pillbox`` is the data directory, with its global database."""
    home = where / "home"
    shutil.copytree(_template_home(), home)
    return home


@asynccontextmanager
async def stdio_session(home: Path, cwd: Path, *, user: str = "alice") -> AsyncIterator[Call]:
    async with stdio_client("pillbox", home=home, cwd=cwd, user=user, PILLBOX_HOME=str(home / ".pillbox")) as client:
        yield caller_for(client)


@asynccontextmanager
async def stdio_sessions(home: Path, *places: tuple[Path, str]) -> AsyncIterator[list[Call]]:
    """Several stdio servers (working directory, user) started at once; each lives in a task of its own,
    since an SDK client must be closed by the task that opened it."""
    loop = asyncio.get_running_loop()
    inboxes: list[asyncio.Queue] = [asyncio.Queue() for _ in places]
    ready: list[asyncio.Future] = [loop.create_future() for _ in places]

    async def serve(index: int, cwd: Path, user: str) -> None:
        try:
            async with stdio_session(home, cwd, user=user) as call:
                ready[index].set_result(call)
                while (job := await inboxes[index].get()) is not None:
                    tool, arguments, answer = job
                    try:
                        answer.set_result(await call(tool, **arguments))
                    except BaseException as exc:  # hand it to the caller, keep serving
                        answer.set_exception(exc)
        except BaseException as exc:
            if not ready[index].done():
                ready[index].set_exception(exc)
            raise

    def proxy(index: int) -> Call:
        async def call(tool: str, /, **arguments: Any) -> Answer:
            answer = loop.create_future()
            await inboxes[index].put((tool, arguments, answer))
            return await answer

        return call

    tasks = [asyncio.create_task(serve(i, cwd, user)) for i, (cwd, user) in enumerate(places)]
    try:
        await asyncio.gather(*ready)
        yield [proxy(i) for i in range(len(places))]
    finally:
        for inbox in inboxes:
            inbox.put_nowait(None)
        await asyncio.gather(*tasks, return_exceptions=True)


# ---------------------------------------------------------------- small steps used by several scenarios


async def open_prescription(call: Call, bottle_id: str, title: str = "Work session") -> str:
    return short_id((await call("prescription_open", bottle_id=bottle_id, title=title, **AUTHOR)).fields["id"])


async def store(call: Call, prescription_id: str, title: str, content: str, compound: str = "note") -> str:
    answer = await call("pill_store", prescription_id=prescription_id, title=title, content=content,
                        compound=compound, **AUTHOR)
    return short_id(answer.fields["id"])


async def new_bottle(call: Call, name: str, scope: str = "global") -> str:
    answer = await call("bottle_create", name=name, display_name=name.replace("-", " ").title(), scope=scope)
    return short_id(answer.fields["id"])


def hit_ids(text: str) -> list[str]:
    return [record["id"] for record in records(text) if "id" in record]
