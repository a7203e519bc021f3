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
from config.mcp.arguments import Problem, read_arguments
from config.mcp.tools import Caller, Credential, Prompt, PromptArgument, Tool, ToolFailure, ToolReply, ToolSet
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
    "`id · priority · due · name`, then #tags and [done], [deleted] or [blocked by ...]; sub-tasks indented "
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

# --- reading arguments -----------------------------------------------------------------------------------


def _wording(problem: Problem, schema: Mapping[str, Any]) -> str:
    if problem.kind == "enum":
        allowed = schema["properties"][problem.field]["enum"]
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


def put_fields(arguments: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """``put_todo``'s arguments as ``services.todo_put`` takes them, and one sentence per bad field (shared with
    the REST API, so both refuse the same input in the same words; each raises its own error)."""
    values, problems = read(PUT_INPUT, arguments, multiline=("description",))
    if "id" in values and (problem := rules.id_problem(values["id"])):
        problems.setdefault("id", problem)
    if "links" in values and (link_problems := rules.links_problems(values["links"])):
        problems.setdefault("links", "; ".join(link_problems))
    if "tags" in values and (tag_problems := rules.tags_problems(values["tags"])):
        problems.setdefault("tags", "; ".join(tag_problems))
    if "blockedBy" in values and (blocker_problems := rules.blockers_problems(values["blockedBy"])):
        problems.setdefault("blockedBy", "; ".join(blocker_problems))
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
    todos = selectors.todo_next(owner=caller.user, limit=values["limit"], filters=filters)
    # Indenting sub-tasks under their parent would reorder them; here the order is the answer.
    return todos_reply(caller, todos, values["view"], nest=False)


@domain_errors
def complete_todo(caller: Caller, arguments: Arguments) -> ToolReply:
    return todo_reply(caller, services.todo_complete(owner=caller.user, key=_id_argument(arguments)))


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
    "deadlineAt, links}, then tags and blockedBy when not empty, timestamps in UTC like 2026-11-30T09:15:42.123Z"
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
        "updatedAt stay as they are. To change one field, read the todo with get_todo first and send all its "
        "fields back. blockedBy lists todos that must be completed first (a loop is refused, naming it). "
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
        f"last) and age (oldest first). At most limit (10) todos. {FILTER_HELP} The compact view keeps that "
        "order, one line per todo, without indenting sub-tasks (a sub-task names its parent at the end).",
        input_schema=NEXT_INPUT,
        output_schema=TODO_LIST_SCHEMA,
        handler=next_todos,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        name="complete_todo",
        title="Complete a todo",
        description="Mark a todo as done now (completedAt = now); a todo already completed is returned "
        f"unchanged. Returns {TODO_JSON}. Fails with `Todo not found` for an unknown or deleted id.",
        input_schema=ID_INPUT,
        output_schema=TODO_SCHEMA,
        handler=complete_todo,
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
        '`links: ["<root id>"]` so it hangs under the root todo.'
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
    "one, list_todos and search_todos find them, next_todos says what to do next, complete_todo checks one "
    "off. Sub-tasks list their root todo's id in links; blockedBy makes a todo wait on others. "
    "get_list_url gives the user a web page with their list.",
    internal_error_text="Internal error: the todo list could not be reached; try again",
    tools=TOOLS,
    prompts=PROMPTS,
)
