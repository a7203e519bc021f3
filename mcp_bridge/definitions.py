"""What each MCP server says about itself before it runs a tool: its name, instructions, tools and prompts, as data.

A local agent starts its stdio servers often and waits for ``initialize`` and ``tools/list`` each time; a stdio
process answers both from ``definitions.json`` and sets Django up only afterwards (``mcp_bridge/stdio.py``).
The file is rendered from the tool registries by ``manage.py docs --write``, and ``--check`` (a test) fails when
it differs from them. Nothing here imports Django.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from mcp_bridge.tools import Handler, Prompt, PromptArgument, Tool, ToolSet

FILE = Path(__file__).with_name("definitions.json")

TOOL_FIELDS = ("name", "title", "description", "input_schema", "output_schema", "read_only", "destructive",
               "idempotent")


def render(toolsets: Mapping[str, ToolSet]) -> str:
    """The file's text for these servers (by the name ``manage.py mcp`` takes)."""
    servers = {
        server: {
            "name": toolset.name,
            "version": toolset.version,
            "instructions": toolset.instructions,
            "internal_error_text": toolset.internal_error_text,
            "tools": [{field: getattr(tool, field) for field in TOOL_FIELDS} for tool in toolset.tools],
            "prompts": [
                {
                    "name": prompt.name,
                    "title": prompt.title,
                    "description": prompt.description,
                    "arguments": [
                        {"name": a.name, "description": a.description, "required": a.required}
                        for a in prompt.arguments
                    ],
                }
                for prompt in toolset.prompts
            ],
        }
        for server, toolset in toolsets.items()
    }
    return json.dumps(servers, indent=1, ensure_ascii=False) + "\n"


def servers() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(FILE.read_text(encoding="utf-8"))
    return loaded


def deferred_toolset(definition: Mapping[str, Any], real: Callable[[], ToolSet]) -> ToolSet:
    """A server's ``ToolSet`` made from its definition; every handler and prompt hands over to ``real()``'s own.

    ``real`` is only called once a tool runs or a prompt renders, by which time the caller has set Django up.
    """

    def handler(name: str) -> Handler:
        return lambda caller, arguments: real().by_name[name].handler(caller, arguments)

    def render_prompt(name: str) -> Callable[[Mapping[str, str]], list[tuple[Literal["user", "assistant"], str]]]:
        return lambda arguments: next(p for p in real().prompts if p.name == name).render(arguments)

    return ToolSet(
        name=definition["name"],
        version=definition["version"],
        instructions=definition["instructions"],
        internal_error_text=definition["internal_error_text"],
        tools=tuple(Tool(**tool, handler=handler(tool["name"])) for tool in definition["tools"]),
        prompts=tuple(
            Prompt(
                name=prompt["name"],
                title=prompt["title"],
                description=prompt["description"],
                arguments=tuple(PromptArgument(**argument) for argument in prompt["arguments"]),
                render=render_prompt(prompt["name"]),
            )
            for prompt in definition["prompts"]
        ),
    )
