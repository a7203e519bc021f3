"""Placeholder until the Todos tools land."""

from config.mcp.tools import Tool, ToolSet

TOOLSET = ToolSet(
    name="todos",
    version="0.1.0",
    instructions="A to-do list.",
    internal_error_text="Internal error",
    tools=(
        Tool(
            name="get_list_usage",
            description="How many todos exist.",
            input_schema={"type": "object", "properties": {}},
            handler=lambda caller, args: '{"count":0}',
            read_only=True,
        ),
    ),
)
