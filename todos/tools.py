"""The Todos MCP server: the seed's six tools, three extensions and the ``start_workspace`` prompt.

Each tool reads its arguments against its own input schema, calls one service or selector, and answers
with the JSON text the seed shows (compact) plus the same data as structured content. Lists are bare
arrays in the text and ``{"todos": [...]}`` in structured content, whose root must be an object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any, Literal

from django.utils import timezone

from accounts.services import account_for
from mcp_bridge.arguments import Problem, read_arguments
from mcp_bridge.tools import Caller, Credential, Prompt, PromptArgument, Tool, ToolFailure, ToolReply, ToolSet
from todos import rules, selectors, services
from todos.access import list_url
from todos.exceptions import TodoError
from todos.formatting import TODO_KEYS, format_compact, format_todo, format_todos, format_tree, format_usage, to_json
from todos.planning import DUE_RULE, TodoFilter, read_due
from todos.timestamps import read_instant

Arguments = dict[str, Any]

# --- schemas ---------------------------------------------------------------------------------------------

ID_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": rules.ID_MAX,
    "pattern": r"^\S+$",
    "description": "The todo's id, chosen by you when it was created (kebab-case, e.g. `buy-milk`).",
}
INSTANT_INPUT = "ISO 8601 date or date-time (`2026-11-30`, `2026-11-30T09:15:00Z`); no zone means UTC."
# Nullable as anyOf branches of one type each: a `type` array is legal JSON Schema but some clients map tool
# schemas onto single-type dialects (the MCP Inspector's --strict flags it).
NULLABLE_INSTANT = {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}

TODO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "uid": {"type": "string", "description": "The owner's user id."},
        "name": {"type": "string"},
        "description": {"type": "string", "description": "Markdown."},
        "priority": {"type": "string", "enum": list(rules.PRIORITIES)},
        "createdAt": {"type": "string", "format": "date-time"},
        "updatedAt": {"type": "string", "format": "date-time"},
        "completedAt": NULLABLE_INSTANT,
        "deletedAt": NULLABLE_INSTANT,
        "deadlineAt": NULLABLE_INSTANT,
        "links": {"type": "array", "items": {"type": "string"}},
        "tags": {"type": "array", "items": {"type": "string"}, "description": "Present when the todo has tags."},
        "blockedBy": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Present when the todo waits on other todos.",
        },
        "claimedBy": {"type": "string", "description": "Who is working on it; present only while a claim runs."},
        "claimedUntil": {
            "type": "string",
            "format": "date-time",
            "description": "When that claim ends unless renewed; present only while a claim runs.",
        },
    },
    "required": list(TODO_KEYS),
    "additionalProperties": False,
}
LISTED_TODO_SCHEMA: dict[str, Any] = {
    **TODO_SCHEMA,
    "properties": {
        **TODO_SCHEMA["properties"],
        "subtasks": {
            "type": "array",
            "items": {"type": "object"},
            "description": 'view "tree" only: the sub-tasks, nested the same way; present when not empty.',
        },
    },
}
TODO_LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"todos": {"type": "array", "items": LISTED_TODO_SCHEMA}},
    "required": ["todos"],
    "additionalProperties": False,
}
USAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 0, "description": "Todos stored, completed and deleted included."},
        "maxTasks": {"type": "integer", "minimum": 0, "description": "The plan limit."},
        "percentage": {"type": "integer", "minimum": 0, "description": "count / maxTasks, rounded half up."},
    },
    "required": ["count", "maxTasks", "percentage"],
    "additionalProperties": False,
}
URL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"url": {"type": "string", "format": "uri"}},
    "required": ["url"],
    "additionalProperties": False,
}


def _object(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties), "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


NO_INPUT = _object({})
ID_INPUT = _object({"id": ID_SCHEMA}, ("id",))
PUT_INPUT = _object(
    {
        "id": {
            **ID_SCHEMA,
            "description": "Unique among your todos: a descriptive kebab-case id such as "
            "`remodel-basement`. A todo with this id is replaced entirely (and restored if it was deleted).",
        },
        "name": {"type": "string", "minLength": 1, "maxLength": rules.NAME_MAX, "description": "A short title."},
        "description": {
            "type": "string",
            "minLength": 0,
            "maxLength": rules.DESCRIPTION_MAX,
            "description": "Details in Markdown; may be empty.",
        },
        "priority": {"type": "string", "enum": list(rules.PRIORITIES), "default": "medium"},
        "completedAt": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": f"When it was done, or null if pending. {INSTANT_INPUT}",
        },
        "deadlineAt": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": f"Due date, or null. {INSTANT_INPUT}",
        },
        "links": {
            "type": "array",
            "items": {**ID_SCHEMA, "description": "The id of a related todo."},
            "maxItems": rules.LINKS_MAX,
            "default": [],
            "description": "Ids of related todos; a sub-task lists its root todo's id. Duplicates are dropped.",
        },
        "tags": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": rules.TAG_MAX, "description": "One word."},
            "maxItems": rules.TAGS_MAX,
            "default": [],
            "description": f'Labels to filter by, e.g. ["backend", "needs-review"]: each {rules.TAG_RULE}; '
            "stored in lowercase, duplicates dropped.",
        },
        "blockedBy": {
            "type": "array",
            "items": {**ID_SCHEMA, "description": "The id of a todo that must be completed first."},
            "maxItems": rules.BLOCKERS_MAX,
            "default": [],
            "description": 'Ids of your todos that must be completed before this one, e.g. ["design-schema"]. '
            "Until they all are, this todo is blocked and next_todos leaves it out. A loop of todos waiting on "
            "each other is refused.",
        },
    },
    ("id", "name", "description"),
)
BY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": rules.CLAIMER_MAX,
    "pattern": r"^\S+$",
    "description": "A short name for yourself that tells you apart from the user's other agents, e.g. "
    "`claude-code@shop` or `codex-task-42`; use the same one for every claim. Default: your MCP client's name, "
    "which other windows of the same client share (over HTTP connections that do not send it, `by` is required).",
}
DUE_HELP = "`today`, `tomorrow` and `this week` are UTC days and the ISO week (Monday to Sunday); `overdue` is now."
FILTERS: dict[str, Any] = {
    "dueBefore": {
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "description": "Only todos with a deadline before this: an ISO 8601 date or date-time, or `today` (due by "
        f"the end of today, overdue included), `tomorrow`, `this week`, `overdue` (past due). {DUE_HELP} E.g. "
        "`this week` (due by Sunday night) or `2026-12-24`.",
    },
    "dueAfter": {
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "description": "Only todos with a deadline at or after this: an ISO 8601 date or date-time, or `today` "
        "(due today or later), `tomorrow`, `this week`, `overdue` (not yet past due). E.g. `2026-12-01` with "
        "dueBefore `2027-01-01`: due in December.",
    },
    "priority": {
        "type": "string",
        "enum": list(rules.PRIORITIES),
        "description": "Only todos of this priority, e.g. `high`.",
    },
    "under": {
        **ID_SCHEMA,
        "description": "Only this todo and its sub-tasks at any depth (a todo's parent is the first of its links "
        "that names another of your todos). Usually a root todo's id, e.g. `remodel-basement`.",
    },
    "tag": {
        "type": "string",
        "minLength": 1,
        "maxLength": rules.TAG_MAX,
        "description": "Only todos with this tag (any case), e.g. `backend`.",
    },
}
VIEW: dict[str, Any] = {
    "type": "string",
    "enum": ["json", "compact", "tree"],
    "default": "json",
    "description": "`json` (the default): an array of Todos. `compact`: one line per todo, "
    "`id · priority · due · name`, then #tags and [done], [deleted] or [blocked by ...], and @who while "
    "someone holds a claim on it; sub-tasks indented "
    "under their parent; usually a fifth to a third of the JSON's characters. `tree`: the JSON with sub-tasks "
    'nested under `subtasks` of their parent, e.g. `[{"id":"remodel-basement",…,"subtasks":[{"id":"drywall",…}]}]`.',
}
LIST_INPUT = _object(
    {
        "includeCompleted": {"type": "boolean", "default": False, "description": "Also return completed todos."},
        "includeDeleted": {"type": "boolean", "default": False, "description": "Also return deleted todos."},
        **FILTERS,
        "view": VIEW,
    }
)
NEXT_INPUT = _object(
    {
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 200,
            "default": 10,
            "description": "Most todos to return, e.g. 3 for the next three steps.",
        },
        **FILTERS,
        "view": VIEW,
        "includeClaimed": {
            "type": "boolean",
            "default": False,
            "description": "Also return todos someone else has claimed (they carry claimedBy and claimedUntil).",
        },
        "by": {
            **BY_SCHEMA,
            "description": "The name you claim with: todos you claimed stay in the answer. Default: your MCP "
            "client's name.",
        },
    }
)
SEARCH_INPUT = _object(
    {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1000,
            "description": "Words to look for in names and descriptions; typos and word fragments are fine.",
        },
        "includeCompleted": {"type": "boolean", "default": False, "description": "Also search completed todos."},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 20,
            "description": "Most results to return.",
        },
        **FILTERS,
        "view": VIEW,
    },
    ("query",),
)

CLAIM_INPUT = _object(
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
RELEASE_INPUT = _object({"id": ID_SCHEMA, "by": BY_SCHEMA}, ("id",))


def _nullable(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A put_todo field as update_todo takes it: optional, no default (absent means unchanged), null allowed."""
    inner = {key: value for key, value in spec.items() if key not in ("default", "description")}
    branches = inner.pop("anyOf", None) or [inner]
    return {"anyOf": [*(b for b in branches if b.get("type") != "null"), {"type": "null"}],
            "description": spec.get("description", "")}


CLEARED = {
    "description": "empty",
    "priority": "medium",
    "completedAt": "pending",
    "deadlineAt": "no deadline",
    "links": "none",
    "tags": "none",
    "blockedBy": "none",
}
UPDATE_INPUT = _object(
    {
        "id": {**ID_SCHEMA, "description": "The id of the todo to change."},
        "name": {**PUT_INPUT["properties"]["name"], "description": "A short title (it cannot be null)."},
        **{
            name: {**_nullable(spec), "description": f"{spec.get('description', 'One of low, medium, high.')} "
                   f"null: {CLEARED[name]}."}
            for name, spec in PUT_INPUT["properties"].items()
            if name in CLEARED
        },
    },
    ("id",),
)
UPDATE_FIELDS = {
    "name": "name",
    "description": "description",
    "priority": "priority",
    "completedAt": "completed_at",
    "deadlineAt": "deadline_at",
    "links": "links",
    "tags": "tags",
    "blockedBy": "blocked_by",
}

# --- reading arguments -----------------------------------------------------------------------------------


def _wording(problem: Problem, schema: Mapping[str, Any]) -> str:
    if problem.kind == "enum":
        spec = schema["properties"][problem.field]
        allowed = next((branch["enum"] for branch in spec.get("anyOf", ()) if "enum" in branch), None) or spec["enum"]
        return f"{problem.field} must be one of {', '.join(allowed)}"
    return f"{problem.field} {problem.detail}"


def read(
    schema: Mapping[str, Any], arguments: Any, *, multiline: tuple[str, ...] = ()
) -> tuple[Arguments, dict[str, str]]:
    """The arguments with defaults applied and nulls dropped, and one problem sentence per bad field."""
    values, problems = read_arguments(schema, arguments, multiline=multiline)
    found: dict[str, str] = {}
    for problem in problems:
        found.setdefault(problem.field, _wording(problem, schema))
    if isinstance(arguments, Mapping):
        known = schema.get("properties", {})
        for name in arguments:
            if name not in known:
                # An unknown argument is usually a misspelt one: refusing beats silently dropping it.
                expected = ", ".join(known) or "no arguments"
                found.setdefault(str(name), f"{name} is not an argument of this tool (it takes {expected})")
    return values, found


def fail_on(problems: Mapping[str, str], schema: Mapping[str, Any] = NO_INPUT) -> None:
    """One sentence for every bad field, in the order the schema lists them (unknown arguments last)."""
    if problems:
        order = {name: position for position, name in enumerate(schema.get("properties", {}))}
        fields = sorted(problems, key=lambda name: order.get(name, len(order)))
        raise ToolFailure("; ".join(problems[name] for name in fields))


def _id_argument(arguments: Any) -> str:
    values, problems = read(ID_INPUT, arguments)
    if "id" in values and (problem := rules.id_problem(values["id"])):
        problems["id"] = problem
    fail_on(problems, ID_INPUT)
    key: str = values["id"]
    return key


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


# --- replies ---------------------------------------------------------------------------------------------


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


# --- tools -----------------------------------------------------------------------------------------------


@domain_errors
def get_list_usage(caller: Caller, arguments: Arguments) -> ToolReply:
    fail_on(read(NO_INPUT, arguments)[1])
    data = format_usage(selectors.todo_usage(owner=caller.user))
    return ToolReply(to_json(data), structured=data)


@domain_errors
def get_list_url(caller: Caller, arguments: Arguments) -> ToolReply:
    fail_on(read(NO_INPUT, arguments)[1])
    url = list_url(
        user=caller.user,
        credential=caller.credential or Credential(kind="stdio" if caller.transport == "stdio" else "session"),
        presented_uid=caller.presented_uid,
        presented_key=caller.presented_key,
    )
    return ToolReply(url, structured={"url": url})


def _field_rules(values: Mapping[str, Any], problems: dict[str, str]) -> None:
    """The rules of ids, links, tags and blockers past what the schema checks, recorded under each field."""
    if "id" in values and (problem := rules.id_problem(values["id"])):
        problems.setdefault("id", problem)
    for name, check in (("links", rules.links_problems), ("tags", rules.tags_problems),
                        ("blockedBy", rules.blockers_problems)):
        if name in values and (found := check(values[name])):
            problems.setdefault(name, "; ".join(found))


def update_fields(arguments: Any) -> tuple[str, dict[str, Any], dict[str, str]]:
    """``update_todo``'s arguments: the id, the changes as ``services.todo_update`` takes them (a field sent as
    null takes its cleared value), and one sentence per bad field (shared with the REST API)."""
    values, problems = read(UPDATE_INPUT, arguments, multiline=("description",))
    _field_rules(values, problems)
    given = arguments if isinstance(arguments, Mapping) else {}
    cleared = [name for name in UPDATE_FIELDS if name in given and given[name] is None]
    if "name" in cleared:
        problems["name"] = "name cannot be cleared: give a new name, or leave name out to keep it"
    instants = {name: read_instant(values, name, problems) for name in ("completedAt", "deadlineAt")}
    changes = {UPDATE_FIELDS[name]: services.DEFAULTS[UPDATE_FIELDS[name]] for name in cleared if name != "name"}
    for name, field in UPDATE_FIELDS.items():
        if name in values:
            changes[field] = instants[name] if name in instants else values[name]
    return values.get("id", ""), changes, problems


def put_fields(arguments: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """``put_todo``'s arguments as ``services.todo_put`` takes them, and one sentence per bad field (shared with
    the REST API, so both refuse the same input in the same words; each raises its own error)."""
    values, problems = read(PUT_INPUT, arguments, multiline=("description",))
    _field_rules(values, problems)
    completed_at = read_instant(values, "completedAt", problems)
    deadline_at = read_instant(values, "deadlineAt", problems)
    if problems:
        return {}, problems
    fields = {name: values[name] for name in ("name", "description", "priority", "links", "tags")}
    return {
        **fields,
        "key": values["id"],
        "completed_at": completed_at,
        "deadline_at": deadline_at,
        "blocked_by": values["blockedBy"],
    }, problems


def filter_fields(values: Mapping[str, Any], problems: dict[str, str]) -> TodoFilter:
    """The filters among read arguments, as the selectors take them; a bad one is recorded in ``problems``
    under its name (shared with the REST API)."""
    now = timezone.now()
    bounds = {}
    for name, side in (("dueBefore", "before"), ("dueAfter", "after")):
        if name in values and name not in problems:
            bounds[name] = read_due(values[name], side=side, now=now)
            if bounds[name] is None:
                problems[name] = f"{name} must be {DUE_RULE}"
    under = values.get("under")
    if under is not None and "under" not in problems and (problem := rules.id_problem(under, field="under")):
        problems["under"] = problem
    tag = values.get("tag")
    if tag is not None and "tag" not in problems and (problem := rules.tag_problem(tag)):
        problems["tag"] = problem
    return TodoFilter(
        due_before=bounds.get("dueBefore"),
        due_after=bounds.get("dueAfter"),
        priority=values.get("priority"),
        under=under,
        tag=tag.lower() if tag is not None else None,
    )


def read_listing(schema: Mapping[str, Any], arguments: Any) -> tuple[Arguments, TodoFilter]:
    values, problems = read(schema, arguments)
    filters = filter_fields(values, problems)
    fail_on(problems, schema)
    return values, filters


@domain_errors
def put_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    fields, problems = put_fields(arguments)
    fail_on(problems, PUT_INPUT)
    return todo_reply(caller, services.todo_put(owner=caller.user, **fields))


@domain_errors
def list_todos(caller: Caller, arguments: Arguments) -> ToolReply:
    values, filters = read_listing(LIST_INPUT, arguments)
    todos = selectors.todo_list(
        owner=caller.user,
        include_completed=values["includeCompleted"],
        include_deleted=values["includeDeleted"],
        filters=filters,
    )
    return todos_reply(caller, todos, values["view"])


@domain_errors
def search_todos(caller: Caller, arguments: Arguments) -> ToolReply:
    values, filters = read_listing(SEARCH_INPUT, arguments)
    todos = selectors.todo_search(
        owner=caller.user,
        query=values["query"],
        include_completed=values["includeCompleted"],
        limit=values["limit"],
        filters=filters,
    )
    # Ranked: the best match first in every view (a sub-task is not moved under its parent).
    return todos_reply(caller, todos, values["view"], ranked=True)


@domain_errors
def next_todos(caller: Caller, arguments: Arguments) -> ToolReply:
    values, filters = read_listing(NEXT_INPUT, arguments)
    todos = selectors.todo_next(
        owner=caller.user,
        limit=values["limit"],
        filters=filters,
        claimer=claimer(caller, values, required=False),
        include_claimed=values["includeClaimed"],
    )
    # Indenting sub-tasks under their parent would reorder them; here the order is the answer.
    return todos_reply(caller, todos, values["view"], nest=False)


@domain_errors
def complete_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    return todo_reply(caller, services.todo_complete(owner=caller.user, key=_id_argument(arguments)))


@domain_errors
def update_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    key, changes, problems = update_fields(arguments)
    if not problems and not changes:
        # Most likely a field misplaced or forgotten; the REST API's empty PATCH is a plain no-op instead.
        problems["id"] = f"nothing to change: give {', '.join(UPDATE_FIELDS)} or some of them, along with id"
    fail_on(problems, UPDATE_INPUT)
    return todo_reply(caller, services.todo_update(owner=caller.user, key=key, changes=changes))


@domain_errors
def claim_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    values, problems = read(CLAIM_INPUT, arguments)
    _field_rules(values, problems)
    fail_on(problems, CLAIM_INPUT)
    by = claimer(caller, values)
    assert by is not None
    todo = services.todo_claim(owner=caller.user, key=values["id"], by=by, minutes=values["minutes"])
    return todo_reply(caller, todo)


@domain_errors
def release_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    values, problems = read(RELEASE_INPUT, arguments)
    _field_rules(values, problems)
    fail_on(problems, RELEASE_INPUT)
    return todo_reply(caller, services.todo_release(owner=caller.user, key=values["id"], by=claimer(caller, values)))


@domain_errors
def get_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    return todo_reply(caller, selectors.todo_get(owner=caller.user, key=_id_argument(arguments), include_deleted=True))


@domain_errors
def delete_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    return todo_reply(caller, services.todo_delete(owner=caller.user, key=_id_argument(arguments)))


@domain_errors
def reopen_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    return todo_reply(caller, services.todo_reopen(owner=caller.user, key=_id_argument(arguments)))


TODO_JSON = (
    "a Todo as JSON: {id, uid, name, description, priority, createdAt, updatedAt, completedAt, deletedAt, "
    "deadlineAt, links}, then tags and blockedBy when not empty and claimedBy and claimedUntil while someone "
    "holds a claim on it, timestamps in UTC like 2026-11-30T09:15:42.123Z"
)
CLAIMS_HELP = (
    "Several agents and the user may share this list: claim a todo with claim_todo before starting work on it, "
    "claim it again before the lease ends on long work, and complete_todo it when done or release_todo it when "
    "handing it back unfinished."
)
FILTER_HELP = (
    "Narrow with dueBefore/dueAfter (ISO 8601, or today, tomorrow, this week, overdue), priority, under (a todo "
    'and its sub-tasks) and tag; view "compact" answers one short line per todo, view "tree" nests sub-tasks.'
)

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="get_list_usage",
        title="List usage",
        description="How full the user's list is: {count, maxTasks, percentage}. count includes completed and "
        "deleted todos; creating a todo fails once count reaches maxTasks (deleted todos can be purged by the "
        "user on the /list page).",
        input_schema=NO_INPUT,
        output_schema=USAGE_SCHEMA,
        handler=get_list_usage,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="get_list_url",
        title="List page URL",
        description="The address of the web page where the user sees and checks off their todos; it opens "
        "without logging in. Give it to the user when they want to see the list in a browser. The text is the "
        "bare URL.",
        input_schema=NO_INPUT,
        output_schema=URL_SCHEMA,
        handler=get_list_url,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="put_todo",
        title="Create or replace a todo",
        description="Create a todo, or replace the user's todo with the same id entirely: every field takes "
        "the value given or its default (priority medium, no completedAt, no deadlineAt, no links, tags or "
        "blockedBy), createdAt is kept, and a deleted todo is restored; sent again unchanged, the todo and its "
        "updatedAt stay as they are. To change some fields only, use update_todo. A claim on the todo stays "
        "(a put with completedAt ends it, as complete_todo does). blockedBy lists todos that must be completed "
        "first (a loop is refused, naming it). "
        f"Returns {TODO_JSON}.",
        input_schema=PUT_INPUT,
        output_schema=TODO_SCHEMA,
        handler=put_todo,
        destructive=True,
        idempotent=True,
    ),
    Tool(
        name="list_todos",
        title="List todos",
        description="The user's todos as a JSON array: pending ones first, by priority (high to low), then "
        "deadline (soonest first, none last), then creation; then completed ones (newest completion first) if "
        f"includeCompleted; then deleted ones (newest deletion first) if includeDeleted. {FILTER_HELP}",
        input_schema=LIST_INPUT,
        output_schema=TODO_LIST_SCHEMA,
        handler=list_todos,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="search_todos",
        title="Search todos",
        description="Fuzzy search over the names and descriptions of the user's todos (typos, partial words "
        "and any word order are fine; names count more than descriptions). Returns a JSON array, best match "
        "first, or [] when nothing resembles the query. Deleted todos are never searched; completed ones only "
        f"with includeCompleted. {FILTER_HELP} Every view keeps the ranking: a sub-task is not moved under its "
        "parent (compact names the parent at the end of its line: (in: Parent name)).",
        input_schema=SEARCH_INPUT,
        output_schema=TODO_LIST_SCHEMA,
        handler=search_todos,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="next_todos",
        title="What to do next",
        description="The todos to work on next, in the order to take them: pending and not blocked (every "
        "blockedBy todo completed), overdue ones first, then by priority (high to low), soonest deadline (none "
        f"last) and age (oldest first). At most limit (10) todos. Todos someone else has claimed are left out "
        f"(includeClaimed to see them); yours stay. {FILTER_HELP} The compact view keeps that order, one line "
        f"per todo, without indenting sub-tasks (a sub-task names its parent at the end). {CLAIMS_HELP}",
        input_schema=NEXT_INPUT,
        output_schema=TODO_LIST_SCHEMA,
        handler=next_todos,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="complete_todo",
        title="Complete a todo",
        description="Mark a todo as done now (completedAt = now) and end any claim on it; a todo already "
        f"completed is returned unchanged. Returns {TODO_JSON}. Fails with `Todo not found` for an unknown or "
        "deleted id.",
        input_schema=ID_INPUT,
        output_schema=TODO_SCHEMA,
        handler=complete_todo,
        idempotent=True,
    ),
    Tool(
        name="update_todo",
        title="Change some fields of a todo",
        description="Change only the fields given; every other field keeps its value (unlike put_todo, which "
        "replaces them all). null clears an optional field: completedAt null reopens, deadlineAt null removes "
        "the deadline, links, tags or blockedBy null empties them, description null empties it, priority null "
        "makes it medium; name cannot be cleared. The same rules as put_todo (a blockedBy loop is refused, "
        "naming it). Setting completedAt ends any claim. E.g. {\"id\": \"fix-login\", \"priority\": \"high\"}. "
        f"Returns {TODO_JSON}. Fails with `Todo not found` for an unknown or deleted id.",
        input_schema=UPDATE_INPUT,
        output_schema=TODO_SCHEMA,
        handler=update_todo,
        destructive=True,
        idempotent=True,
    ),
    Tool(
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
    ),
    Tool(
        name="release_todo",
        title="Hand a claimed todo back",
        description="End your claim on a todo you are not going to finish now, so another agent or the user "
        "can take it. A todo nobody holds is returned as it is; someone else's live claim is refused, naming "
        "them (the user can release any claim on the /list page). Returns the todo.",
        input_schema=RELEASE_INPUT,
        output_schema=TODO_SCHEMA,
        handler=release_todo,
        idempotent=True,
    ),
    Tool(
        name="get_todo",
        title="Read a todo",
        description=f"One todo by id, deleted ones included (deletedAt is then set). Returns {TODO_JSON}. "
        "Fails with `Todo not found` for an unknown id.",
        input_schema=ID_INPUT,
        output_schema=TODO_SCHEMA,
        handler=get_todo,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="delete_todo",
        title="Delete a todo",
        description="Delete a todo (it can be restored by put_todo with the same id, or by the user on the "
        "/list page; it still counts in get_list_usage until the user purges it). Returns the deleted todo. "
        "Fails with `Todo not found` for an unknown or already deleted id.",
        input_schema=ID_INPUT,
        output_schema=TODO_SCHEMA,
        handler=delete_todo,
        # Not idempotent in what it answers: a second delete is `Todo not found`, as for every tool but get_todo
        # and put_todo on a deleted todo.
        destructive=True,
    ),
    Tool(
        name="reopen_todo",
        title="Reopen a todo",
        description=f"Mark a completed todo as pending again (clears completedAt). Returns {TODO_JSON}. "
        "Fails with `Todo not found` for an unknown or deleted id.",
        input_schema=ID_INPUT,
        output_schema=TODO_SCHEMA,
        handler=reopen_todo,
        idempotent=True,
    ),
)

# --- prompt ----------------------------------------------------------------------------------------------

PREMISE_MAX = 2000


def start_workspace(arguments: Mapping[str, str]) -> list[tuple[Literal["user", "assistant"], str]]:
    premise = arguments.get("premise")
    if not isinstance(premise, str) or not premise.strip():
        raise ToolFailure("premise is required")
    if problem := rules.text_problem("premise", premise, low=1, high=PREMISE_MAX, multiline=True):
        raise ToolFailure(problem)
    text = (
        f"Let's start a workspace for this premise:\n\n{premise.strip()}\n\n"
        "1. Create the root todo with put_todo. Give it a short, descriptive kebab-case id derived from the "
        "premise (lowercase words joined by hyphens, e.g. `remodel-basement`), a name that states the goal, "
        "and a description that records the premise.\n"
        "2. Show me the root todo's id.\n"
        "3. Ask me for the sub-tasks. Create each one with put_todo, with its own kebab-case id and "
        '`links: ["<root id>"]` so it hangs under the root todo.\n'
        "4. Other agents and I may work on this list too: before you start on a todo, claim it with claim_todo "
        "(renew the claim on long work), and complete_todo it when done or release_todo it if you stop."
    )
    return [("user", text)]


PROMPTS = (
    Prompt(
        name="start_workspace",
        title="Start a workspace",
        description="Start a workspace from a premise: create a root todo, show its id, then add the "
        "sub-tasks the user names, each linked to the root.",
        arguments=(
            PromptArgument(
                name="premise", description='The goal of the workspace, e.g. "we are going to remodel the basement".'
            ),
        ),
        render=start_workspace,
    ),
)

TOOLSET = ToolSet(
    name="todos",
    version="0.1.0",
    instructions="The user's to-do list. Todos have ids you choose (kebab-case); put_todo creates or replaces "
    "one and update_todo changes some of its fields, list_todos and search_todos find them, next_todos says what "
    "to do next, complete_todo checks one off. claim_todo marks one as yours while you work on it (others' "
    "next_todos skip it), release_todo hands it back. Sub-tasks list their root todo's id in links; blockedBy "
    "makes a todo wait on others. "
    "get_list_url gives the user a web page with their list.",
    internal_error_text="Internal error: the todo list could not be reached; try again",
    tools=TOOLS,
    prompts=PROMPTS,
)
