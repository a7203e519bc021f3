"""The claims tools: claim_todo, claim_next and release_todo, and the advice on claiming that next_todos repeats."""

from __future__ import annotations

from typing import Any

from mcp_bridge.tools import Caller, Tool, ToolReply
from todos import leases, rules
from todos.tools.arguments import Arguments, fail_on, field_rules, read
from todos.tools.filters import FILTERS, filter_fields
from todos.tools.holder import BY_SCHEMA, LEASE_SCHEMA, claimer, lease_token, remember, required_claimer
from todos.tools.replies import claim_reply, domain_errors, todo_reply
from todos.tools.schemas import CLAIMED_SCHEMA, ID_SCHEMA, TODO_SCHEMA, object_schema

MINUTES_SCHEMA: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "maximum": rules.CLAIM_MINUTES_MAX,
    "default": rules.CLAIM_MINUTES,
    "description": "How long the claim lasts from now unless renewed (at most 1440, 24 hours).",
}
CLAIM_INPUT = object_schema(
    {"id": ID_SCHEMA, "by": BY_SCHEMA, "minutes": MINUTES_SCHEMA, "leaseToken": LEASE_SCHEMA}, ("id",)
)
RELEASE_INPUT = object_schema({"id": ID_SCHEMA, "by": BY_SCHEMA, "leaseToken": LEASE_SCHEMA}, ("id",))
CLAIM_NEXT_INPUT = object_schema(
    {
        "by": BY_SCHEMA,
        "minutes": MINUTES_SCHEMA,
        "tag": FILTERS["tag"],
        "under": {**FILTERS["under"], "description": "Only a sub-task of this todo (at any depth), e.g. the root "
                  "todo of a workspace: `remodel-basement`."},
        "priority": FILTERS["priority"],
    }
)
CLAIM_NEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todo": {"anyOf": [CLAIMED_SCHEMA, {"type": "null"}],
                 "description": "The todo now yours, with its leaseToken; null when no todo is free."},
    },
    "required": ["todo"],
    "additionalProperties": False,
}
NO_FREE_TODO = "No free todo."
CLAIMS_HELP = (
    "Several agents and the user may share this list: take work with claim_next (it claims the next free todo "
    "in one call; claim_todo claims one by id), keep the leaseToken it answers, renew with claim_todo before the "
    "lease ends on long work, and complete_todo it when done or release_todo it when handing it back unfinished."
)


@domain_errors
def claim_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    values, problems = read(CLAIM_INPUT, arguments)
    field_rules(values, problems)
    fail_on(problems, CLAIM_INPUT)
    by = required_claimer(caller, values)
    token = lease_token(caller, values, values["id"], by=by)
    todo = leases.todo_claim(owner=caller.user, key=values["id"], by=by, minutes=values["minutes"], token=token)
    remember(caller, todo, by)
    return claim_reply(caller, todo)


@domain_errors
def claim_next(caller: Caller, arguments: Arguments) -> ToolReply:
    values, problems = read(CLAIM_NEXT_INPUT, arguments)
    filters = filter_fields(values, problems)
    fail_on(problems, CLAIM_NEXT_INPUT)
    by = required_claimer(caller, values)
    todo = leases.todo_claim_next(owner=caller.user, by=by, minutes=values["minutes"], filters=filters)
    if todo is None:
        return ToolReply(NO_FREE_TODO, structured={"todo": None})
    remember(caller, todo, by)
    reply = claim_reply(caller, todo)
    return ToolReply(reply.text, structured={"todo": reply.structured})


@domain_errors
def release_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    values, problems = read(RELEASE_INPUT, arguments)
    field_rules(values, problems)
    fail_on(problems, RELEASE_INPUT)
    token = lease_token(caller, values, values["id"], by=claimer(caller, values, required=False))
    todo = leases.todo_release(owner=caller.user, key=values["id"], holder=leases.Holder(token=token))
    return todo_reply(caller, todo)


CLAIM_TODO = Tool(
    name="claim_todo",
    title="Claim a todo (I am working on it)",
    description="Tell the user's other agents and the user that you are working on a pending todo, for "
    "minutes (30) from now: it then shows claimedBy and claimedUntil, next_todos leaves it out for everyone "
    "else, and their writes of it are refused. A new claim answers a leaseToken, once: keep it, it proves the "
    "claim is yours (renew, release and write with it). On work longer than the lease, claim it again with "
    "leaseToken to renew it from now. complete_todo when done ends the claim, release_todo hands it back "
    "unfinished. If someone else holds a live claim, it fails naming them and when their lease ends: pick "
    "another todo (claim_next takes the next free one for you). A lease that ran out is free to claim. Not for "
    "completed todos (reopen first). Returns the claimed todo, with leaseToken when the claim is new.",
    input_schema=CLAIM_INPUT,
    output_schema=CLAIMED_SCHEMA,
    handler=claim_todo,
)

CLAIM_NEXT = Tool(
    name="claim_next",
    title="Take the next free todo",
    description="Claim, in one call, the todo next_todos would put first among those nobody holds (optionally "
    "only with a tag, under a parent todo, or of a priority), for minutes (30) from now. Two agents calling at "
    "once never get the same todo. Returns the claimed todo with its leaseToken (keep it: renew, release and "
    f"write with it), or `{NO_FREE_TODO}` when no todo is free; structured content is {{todo}} (null then).",
    input_schema=CLAIM_NEXT_INPUT,
    output_schema=CLAIM_NEXT_SCHEMA,
    handler=claim_next,
)

RELEASE_TODO = Tool(
    name="release_todo",
    title="Hand a claimed todo back",
    description="End your claim on a todo you are not going to finish now, so another agent or the user "
    "can take it: give the leaseToken your claim answered. A todo nobody holds is returned as it is; someone "
    "else's live claim is refused, naming them (the user can release any claim on the /list page). Returns the "
    "todo.",
    input_schema=RELEASE_INPUT,
    output_schema=TODO_SCHEMA,
    handler=release_todo,
    idempotent=True,
)
