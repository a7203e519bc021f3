"""The tools on one todo by its id: put_todo, update_todo, get_todo, complete_todo, reopen_todo and
delete_todo."""

from __future__ import annotations

from typing import Any

from mcp_bridge.tools import Caller, Tool, ToolReply
from todos import rules, selectors, services
from todos.leases import Holder
from todos.tools.arguments import Arguments, fail_on, read
from todos.tools.fields import PUT_INPUT, UPDATE_FIELDS, UPDATE_INPUT, put_fields, update_fields
from todos.tools.holder import HOLDER_FIELDS, holder
from todos.tools.replies import domain_errors, todo_reply, written_reply
from todos.tools.schemas import ID_INPUT, ID_SCHEMA, TODO_JSON, TODO_SCHEMA, WRITTEN_SCHEMA, object_schema

# The writes of one todo also take the holder's arguments: a todo another agent holds is theirs to change.
PUT_TOOL_INPUT = object_schema({**PUT_INPUT["properties"], **HOLDER_FIELDS}, tuple(PUT_INPUT["required"]))
UPDATE_TOOL_INPUT = object_schema({**UPDATE_INPUT["properties"], **HOLDER_FIELDS}, ("id",))
WRITE_ID_INPUT = object_schema({"id": ID_SCHEMA, **HOLDER_FIELDS}, ("id",))
HELD_RULE = (
    "Refused while another agent holds the todo (naming them and when their lease ends) unless you hold it "
    "(leaseToken) or pass force: true, which ends their claim (the answer's endedClaim says whose it was)."
)


def _id_argument(arguments: Any, schema: Any = ID_INPUT) -> tuple[str, dict[str, Any]]:
    values, problems = read(schema, arguments)
    if "id" in values and (problem := rules.id_problem(values["id"])):
        problems["id"] = problem
    fail_on(problems, schema)
    key: str = values["id"]
    return key, values


def _write_argument(caller: Caller, arguments: Any) -> tuple[str, Holder]:
    key, values = _id_argument(arguments, WRITE_ID_INPUT)
    return key, holder(caller, values, key)


@domain_errors
def put_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    fields, problems = put_fields(arguments, PUT_TOOL_INPUT)
    fail_on(problems, PUT_TOOL_INPUT)
    acting = holder(caller, arguments, fields["key"])
    return written_reply(caller, services.todo_put(owner=caller.user, holder=acting, **fields))


@domain_errors
def complete_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    key, acting = _write_argument(caller, arguments)
    return written_reply(caller, services.todo_complete(owner=caller.user, key=key, holder=acting))


@domain_errors
def update_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    key, changes, problems = update_fields(arguments, UPDATE_TOOL_INPUT)
    if not problems and not changes:
        # Most likely a field misplaced or forgotten; the REST API's empty PATCH is a plain no-op instead.
        problems["id"] = f"nothing to change: give {', '.join(UPDATE_FIELDS)} or some of them, along with id"
    fail_on(problems, UPDATE_TOOL_INPUT)
    acting = holder(caller, arguments, key)
    return written_reply(caller, services.todo_update(owner=caller.user, key=key, changes=changes, holder=acting))


@domain_errors
def get_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    key, _ = _id_argument(arguments)
    return todo_reply(caller, selectors.todo_get(owner=caller.user, key=key, include_deleted=True))


@domain_errors
def delete_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    key, acting = _write_argument(caller, arguments)
    return written_reply(caller, services.todo_delete(owner=caller.user, key=key, holder=acting))


@domain_errors
def reopen_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    key, acting = _write_argument(caller, arguments)
    return written_reply(caller, services.todo_reopen(owner=caller.user, key=key, holder=acting))


PUT_TODO = Tool(
    name="put_todo",
    title="Create or replace a todo",
    description="Create a todo, or replace the user's todo with the same id entirely: every field takes "
    "the value given or its default (priority medium, no completedAt, no deadlineAt, no links, tags or "
    "blockedBy), createdAt is kept, and a deleted todo is restored; sent again unchanged, the todo and its "
    "updatedAt stay as they are. To change some fields only, use update_todo. A claim on the todo stays "
    "(a put with completedAt ends it, as complete_todo does). blockedBy lists todos that must be completed "
    f"first (a loop is refused, naming it). Replacing a todo is an edit: {HELD_RULE} "
    f"Returns {TODO_JSON}.",
    input_schema=PUT_TOOL_INPUT,
    output_schema=WRITTEN_SCHEMA,
    handler=put_todo,
    destructive=True,
    idempotent=True,
)

UPDATE_TODO = Tool(
    name="update_todo",
    title="Change some fields of a todo",
    description="Change only the fields given; every other field keeps its value (unlike put_todo, which "
    "replaces them all). null clears an optional field: completedAt null reopens, deadlineAt null removes "
    "the deadline, links, tags or blockedBy null empties them, description null empties it, priority null "
    "makes it medium; name cannot be cleared. The same rules as put_todo (a blockedBy loop is refused, "
    "naming it). Setting completedAt ends any claim. E.g. {\"id\": \"fix-login\", \"priority\": \"high\"}. "
    f"{HELD_RULE} Returns {TODO_JSON}. Fails with `Todo not found` for an unknown or deleted id.",
    input_schema=UPDATE_TOOL_INPUT,
    output_schema=WRITTEN_SCHEMA,
    handler=update_todo,
    destructive=True,
    idempotent=True,
)

GET_TODO = Tool(
    name="get_todo",
    title="Read a todo",
    description=f"One todo by id, deleted ones included (deletedAt is then set). Returns {TODO_JSON}. "
    "Fails with `Todo not found` for an unknown id.",
    input_schema=ID_INPUT,
    output_schema=TODO_SCHEMA,
    handler=get_todo,
    read_only=True,
    idempotent=True,
)

COMPLETE_TODO = Tool(
    name="complete_todo",
    title="Complete a todo",
    description="Mark a todo as done now (completedAt = now) and end any claim on it; a todo already "
    f"completed is returned unchanged. {HELD_RULE} Returns {TODO_JSON}. Fails with `Todo not found` for an "
    "unknown or deleted id.",
    input_schema=WRITE_ID_INPUT,
    output_schema=WRITTEN_SCHEMA,
    handler=complete_todo,
    idempotent=True,
)

REOPEN_TODO = Tool(
    name="reopen_todo",
    title="Reopen a todo",
    description=f"Mark a completed todo as pending again (clears completedAt). {HELD_RULE} Returns {TODO_JSON}. "
    "Fails with `Todo not found` for an unknown or deleted id.",
    input_schema=WRITE_ID_INPUT,
    output_schema=WRITTEN_SCHEMA,
    handler=reopen_todo,
    idempotent=True,
)

DELETE_TODO = Tool(
    name="delete_todo",
    title="Delete a todo",
    description="Delete a todo (it can be restored by put_todo with the same id, or by the user on the "
    f"/list page; it still counts in get_list_usage until the user purges it). {HELD_RULE} Returns the deleted "
    "todo. Fails with `Todo not found` for an unknown or already deleted id.",
    input_schema=WRITE_ID_INPUT,
    output_schema=WRITTEN_SCHEMA,
    handler=delete_todo,
    # Not idempotent in what it answers: a second delete is `Todo not found`, as for every tool but get_todo
    # and put_todo on a deleted todo.
    destructive=True,
)
