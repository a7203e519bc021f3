"""What a Todos tool answers: one todo or a list of them (in the view asked for), and domain errors turned
into the sentence the agent reads."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.utils import timezone

from accounts.services import account_for
from mcp_bridge.tools import Caller, ToolFailure, ToolReply
from todos.exceptions import TodoError
from todos.formatting import format_compact, format_todo, format_todos, format_tree, to_json
from todos.tools.arguments import Arguments


def _uid(caller: Caller) -> str:
    return account_for(caller.user).uid


def todo_reply(caller: Caller, todo: Any) -> ToolReply:
    data = format_todo(todo, uid=_uid(caller))
    return ToolReply(to_json(data), structured=data)


def todos_reply(caller: Caller, todos: list[Any], view: str = "json", *, nest: bool = True,
                ranked: bool = False) -> ToolReply:
    """The seed's JSON array, or the view asked for. Structured content always carries the todos as JSON (nested
    for ``tree``), for programs; the compact text is for the model to read. ``nest=False``: compact keeps the
    answer's order; ``ranked``: a search's ranking, which no view regroups under parents (not even tree)."""
    uid = _uid(caller)
    nest = nest and not ranked
    if view == "tree" and not ranked:
        tree = format_tree(todos, uid=uid)
        return ToolReply(to_json(tree), structured={"todos": tree})
    data = format_todos(todos, uid=uid)
    text = format_compact(todos, now=timezone.now(), nest=nest) if view == "compact" else to_json(data)
    return ToolReply(text, structured={"todos": data})


ToolHandler = Callable[[Caller, Arguments], ToolReply]


def domain_errors(handler: ToolHandler) -> ToolHandler:
    """Domain errors already carry the sentence the agent should read."""

    @wraps(handler)
    def wrapper(caller: Caller, arguments: Arguments) -> ToolReply:
        try:
            return handler(caller, arguments)
        except TodoError as error:
            raise ToolFailure(error.message) from None

    return wrapper
