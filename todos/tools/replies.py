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
from todos.formatting import (
    HELD_BY_YOU,
    format_compact,
    format_ended_claim,
    format_todo,
    format_todos,
    format_tree,
    to_json,
)
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


def claim_reply(caller: Caller, todo: Any) -> ToolReply:
    """The claimed todo; with its leaseToken when the lease is new (the only time the token is shown)."""
    data = format_todo(todo, uid=_uid(caller))
    if token := getattr(todo, "lease_token", None):
        data["leaseToken"] = token
    return ToolReply(to_json(data), structured=data)


def written_reply(caller: Caller, todo: Any) -> ToolReply:
    """The written todo; with endedClaim when the write forced another agent's claim to end."""
    data = format_todo(todo, uid=_uid(caller))
    if ended := getattr(todo, "ended_claim", None):
        data["endedClaim"] = format_ended_claim(*ended)
    return ToolReply(to_json(data), structured=data)


def next_reply(caller: Caller, todos: list[Any], held: list[Any], view: str) -> ToolReply:
    """next_todos' answer: the todos to take in their order, then apart the ones the caller holds (``held by you``)."""
    reply = todos_reply(caller, todos, view, nest=False)
    if not held:
        return reply
    data = format_todos(held, uid=_uid(caller))
    apart = format_compact(held, now=timezone.now(), nest=False) if view == "compact" else to_json(data)
    structured = {**(reply.structured or {}), "heldByYou": data}
    return ToolReply(f"{reply.text}\n{HELD_BY_YOU}\n{apart}", structured=structured)


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
