"""The steps the recall tests share: a bottle stocked over the tools (``stocked``, ``stocked_local``), an ORM
check from inside a scenario (``in_db``), a caller, an answer's header, and a copy of the int8 model file to
tamper with."""

from __future__ import annotations

import shutil
from pathlib import Path

from asgiref.sync import sync_to_async
from django.db import connections

from pillbox.embeddings import backfill, embedders
from tests.pillbox.scenario import Call, new_bottle, open_prescription, store


def header(text: str) -> str:
    """The answer's header lines, less its confidence line (asserted on its own in test_recall_confidence.py)."""
    return "\n".join(line for line in text.split("\n\n")[0].split("\n") if not line.startswith("confidence: "))


def caller(user) -> object:
    from mcp_bridge.tools import Caller

    return Caller(user=user, transport="http", workdir=None)


async def in_db(function, *args):
    """Run an ORM check from inside a scenario (Django refuses database calls in an event loop's thread). The
    worker thread's connections are closed after it: on PostgreSQL each would otherwise keep one of the pool's
    connections for the rest of the test run."""
    def closing(*arguments):
        try:
            return function(*arguments)
        finally:
            connections.close_all()

    return await sync_to_async(closing, thread_sensitive=False)(*args)


async def stocked(call: Call, name: str, pills: list[tuple[str, str]]) -> list[str]:
    bottle = await new_bottle(call, name)
    rx = await open_prescription(call, bottle)
    stored = [await store(call, rx, title, content) for title, content in pills]
    await in_db(backfill.wait_for_backfills)  # a store leaves its vector to the background backfill
    return stored


async def stocked_local(call: Call, name: str, pills: list[tuple[str, str]]) -> list[str]:
    bottle = await new_bottle(call, name, scope="local")
    rx = await open_prescription(call, bottle)
    stored = [await store(call, rx, title, content) for title, content in pills]
    await in_db(backfill.wait_for_backfills)  # a store leaves its vector to the background backfill
    return stored


def copied_model(tmp_path: Path) -> Path:
    """A model cache directory of the test's own, holding a copy of the int8 file."""
    cache = tmp_path / "models"
    cache.mkdir()
    shutil.copyfile(embedders.cache_dir() / embedders.INT8_FILE, cache / embedders.INT8_FILE)
    return cache


def flip_a_byte(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.seek(4096)
        byte = handle.read(1)
        handle.seek(4096)
        handle.write(bytes([byte[0] ^ 1]))
