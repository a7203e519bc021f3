"""The tools about the list as a whole: how full it is (get_list_usage) and the page that shows it
(get_list_url)."""

from __future__ import annotations

from typing import Any

from mcp_bridge.tools import Caller, Credential, Tool, ToolReply
from todos import selectors
from todos.access import list_url
from todos.formatting import format_usage, to_json
from todos.tools.arguments import Arguments, fail_on, read
from todos.tools.replies import domain_errors
from todos.tools.schemas import NO_INPUT

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


GET_LIST_USAGE = Tool(
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
)

GET_LIST_URL = Tool(
    name="get_list_url",
    title="List page URL",
    description="The address of the web page where the user sees and checks off their todos; it opens "
    "without logging in. Give it to the user when they want to see the list in a browser. The text is the "
    "bare URL. The page is served by the Pillbox & Todos site at that address and opens only while that site is "
    "running (on one machine: `pillbox-todos up`); tell the user so.",
    input_schema=NO_INPUT,
    output_schema=URL_SCHEMA,
    handler=get_list_url,
    read_only=True,
    idempotent=True,
)
