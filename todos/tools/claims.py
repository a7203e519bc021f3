"""The claims tools: claim_todo and release_todo, who the claimer is (``by`` or the MCP client's name), and
the advice on claiming that next_todos repeats."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_bridge.tools import Caller, Tool, ToolFailure, ToolReply
from todos import rules, services
from todos.tools.arguments import Arguments, fail_on, field_rules, read
from todos.tools.replies import domain_errors, todo_reply
from todos.tools.schemas import ID_SCHEMA, TODO_SCHEMA, object_schema

BY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": rules.CLAIMER_MAX,
    "pattern": r"^\S+$",
    "description": "A short name for yourself that tells you apart from the user's other agents, e.g. "
    "`claude-code@shop` or `codex-task-42`; use the same one for every claim. Default: your MCP client's name, "
    "which other windows of the same client share (over HTTP connections that do not send it, `by` is required).",
}
CLAIM_INPUT = object_schema(
    {
        "id": ID_SCHEMA,
        "by": BY_SCHEMA,
        "minutes": {
            "type": "integer",
            "minimum": 1,
            "maximum": rules.CLAIM_MINUTES_MAX,
            "default": rules.CLAIM_MINUTES,
            "description": "How long the claim lasts from now unless renewed (at most 1440, 24 hours).",
        },
    },
    ("id",),
)
RELEASE_INPUT = object_schema({"id": ID_SCHEMA, "by": BY_SCHEMA}, ("id",))
CLAIMS_HELP = (
    "Several agents and the user may share this list: claim a todo with claim_todo before starting work on it, "
    "claim it again before the lease ends on long work, and complete_todo it when done or release_todo it when "
    "handing it back unfinished."
)


def claimer(caller: Caller, values: Mapping[str, Any], *, required: bool = True) -> str | None:
    """``by`` as given, else the MCP client's name from the connection, else (when required) a refusal saying
    what to send."""
    if values.get("by") is not None:
        given: str = values["by"]
        return given
    name = rules.claimer_name(caller.client_name) if caller.client_name else None
    if name is None and required:
        raise ToolFailure(
            "by is required here: this connection does not tell the client's name; give a short name for "
            "yourself, e.g. claude-code@shop, and use it for every claim"
        )
    return name


@domain_errors
def claim_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    values, problems = read(CLAIM_INPUT, arguments)
    field_rules(values, problems)
    fail_on(problems, CLAIM_INPUT)
    by = claimer(caller, values)
    assert by is not None
    todo = services.todo_claim(owner=caller.user, key=values["id"], by=by, minutes=values["minutes"])
    return todo_reply(caller, todo)


@domain_errors
def release_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    values, problems = read(RELEASE_INPUT, arguments)
    field_rules(values, problems)
    fail_on(problems, RELEASE_INPUT)
    return todo_reply(caller, services.todo_release(owner=caller.user, key=values["id"], by=claimer(caller, values)))


CLAIM_TODO = Tool(
    name="claim_todo",
    title="Claim a todo (I am working on it)",
    description="Tell the user's other agents and the user that you are working on a pending todo, for "
    "minutes (30) from now: it then shows claimedBy and claimedUntil, and next_todos leaves it out for "
    "everyone else. Claim before you start; on work longer than the lease, claim it again (same by) to "
    "renew it from now; complete_todo when done ends the claim, release_todo hands it back unfinished. If "
    "someone else holds a live claim, it fails naming them and when their lease ends: pick another todo. A "
    "lease that ran out is free to claim. Not for completed todos (reopen first). Returns the claimed todo.",
    input_schema=CLAIM_INPUT,
    output_schema=TODO_SCHEMA,
    handler=claim_todo,
)

RELEASE_TODO = Tool(
    name="release_todo",
    title="Hand a claimed todo back",
    description="End your claim on a todo you are not going to finish now, so another agent or the user "
    "can take it. A todo nobody holds is returned as it is; someone else's live claim is refused, naming "
    "them (the user can release any claim on the /list page). Returns the todo.",
    input_schema=RELEASE_INPUT,
    output_schema=TODO_SCHEMA,
    handler=release_todo,
    idempotent=True,
)
