"""The Todos MCP server: its tools in the order tools/list shows them, its prompt and its instructions."""

from __future__ import annotations

from mcp_bridge.tools import Tool, ToolSet
from todos.tools.claims import CLAIM_NEXT, CLAIM_TODO, RELEASE_TODO
from todos.tools.list_info import GET_LIST_URL, GET_LIST_USAGE
from todos.tools.listing import LIST_TODOS, NEXT_TODOS, SEARCH_TODOS
from todos.tools.todo import COMPLETE_TODO, DELETE_TODO, GET_TODO, PUT_TODO, REOPEN_TODO, UPDATE_TODO
from todos.tools.workspace import PROMPTS

TOOLS: tuple[Tool, ...] = (
    GET_LIST_USAGE,
    GET_LIST_URL,
    PUT_TODO,
    LIST_TODOS,
    SEARCH_TODOS,
    NEXT_TODOS,
    COMPLETE_TODO,
    UPDATE_TODO,
    CLAIM_NEXT,
    CLAIM_TODO,
    RELEASE_TODO,
    GET_TODO,
    DELETE_TODO,
    REOPEN_TODO,
)

TOOLSET = ToolSet(
    name="todos",
    version="0.1.0",
    instructions="The user's to-do list. Todos have ids you choose (kebab-case); put_todo creates or replaces "
    "one and update_todo changes some of its fields, list_todos and search_todos find them, next_todos says what "
    "to do next, complete_todo checks one off. claim_next takes the next free todo as yours while you work on "
    "it (claim_todo takes one by id; others' next_todos skip it and their writes of it are refused), "
    "release_todo hands it back. Sub-tasks list their root todo's id in links; blockedBy "
    "makes a todo wait on others. "
    "get_list_url gives the user a web page with their list.",
    internal_error_text="Internal error: the todo list could not be reached; try again",
    tools=TOOLS,
    prompts=PROMPTS,
)
