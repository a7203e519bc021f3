"""What the planning scenarios share: the seed's bytes for a todo, instants as the tools write them, and
calls that must answer or be refused."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from mcp.client import Client

from tests.todos.helpers import TODO_KEYS, Answer, call


def seed_json(todo: dict[str, Any]) -> str:
    """The seed's exact bytes for a todo: its eleven keys in order, compact separators, readable non-ASCII."""
    return json.dumps({key: todo[key] for key in TODO_KEYS}, ensure_ascii=False, separators=(",", ":"))


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


async def ok(client: Client, tool: str, /, **arguments: Any) -> Answer:
    answer = await call(client, tool, **arguments)
    assert not answer.is_error, (tool, arguments, answer.text)
    return answer


async def refused(client: Client, tool: str, /, **arguments: Any) -> str:
    answer = await call(client, tool, **arguments)
    assert answer.is_error, (tool, arguments, answer.text)
    assert "\n" not in answer.text and "Traceback" not in answer.text
    return answer.text
