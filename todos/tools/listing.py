"""The tools that answer a list of todos: list_todos, search_todos (ranked) and next_todos (in the order to
take them)."""

from __future__ import annotations

from mcp_bridge.tools import Caller, Tool, ToolReply
from todos import selectors
from todos.tools.arguments import Arguments
from todos.tools.claims import CLAIMS_HELP
from todos.tools.filters import FILTER_HELP, FILTERS, VIEW, read_listing
from todos.tools.holder import BY_SCHEMA, claimer
from todos.tools.replies import domain_errors, next_reply, todos_reply
from todos.tools.schemas import NEXT_LIST_SCHEMA, TODO_LIST_SCHEMA, object_schema

LIST_INPUT = object_schema(
    {
        "includeCompleted": {"type": "boolean", "default": False, "description": "Also return completed todos."},
        "includeDeleted": {"type": "boolean", "default": False, "description": "Also return deleted todos."},
        **FILTERS,
        "view": VIEW,
    }
)
NEXT_INPUT = object_schema(
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
            "description": "The name you claim with: the todos you hold are shown apart, under `held by you`. "
            "Default: your MCP client's name (over HTTP: your API key's or OAuth client's name).",
        },
    }
)
SEARCH_INPUT = object_schema(
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
    found = selectors.todo_next_apart(
        owner=caller.user,
        limit=values["limit"],
        filters=filters,
        claimer=claimer(caller, values, required=False),
        include_claimed=values["includeClaimed"],
    )
    # Indenting sub-tasks under their parent would reorder them; here the order is the answer.
    return next_reply(caller, found.todos, found.held, values["view"])


LIST_TODOS = Tool(
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
)

SEARCH_TODOS = Tool(
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
)

NEXT_TODOS = Tool(
    name="next_todos",
    title="What to do next",
    description="The todos to work on next, in the order to take them (the order of the /list page's Next): "
    "pending and not blocked (every blockedBy todo completed), overdue ones first, then by priority (high to "
    "low), soonest deadline (none last) and age (oldest first). An umbrella todo whose sub-tasks are still "
    "pending is not next: its free sub-tasks take its place. At most limit (10) todos. Todos someone else has "
    "claimed are left out (includeClaimed to see them); the ones you hold come after the list, apart, under "
    f"`held by you` (heldByYou in structured content). {FILTER_HELP} The compact view keeps that order, one line "
    f"per todo, without indenting sub-tasks (a sub-task names its parent at the end). {CLAIMS_HELP}",
    input_schema=NEXT_INPUT,
    output_schema=NEXT_LIST_SCHEMA,
    handler=next_todos,
    read_only=True,
    idempotent=True,
)
