"""What an app registers into the MCP bridge: tools, prompts, and who is calling.

The bridge knows the protocol and nothing about pillbox or todos; each app builds a ``ToolSet`` from an
explicit list of ``Tool`` objects whose handlers are plain synchronous functions (the ORM is sync). Who is
calling is the accounts' ``Caller`` (and its ``Credential``), handed to every handler and named here too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from accounts.caller import Caller, Credential

__all__ = [
    "Caller",
    "Credential",
    "Handler",
    "Prompt",
    "PromptArgument",
    "Tool",
    "ToolFailure",
    "ToolReply",
    "ToolSet",
]


@dataclass(frozen=True)
class ToolReply:
    """A tool's answer: the text an agent reads, optional structured content, and whether it failed."""

    text: str
    is_error: bool = False
    structured: dict[str, Any] | None = None


class ToolFailure(Exception):
    """Raised by a handler to answer with an error result (``isError: true``) and exactly this text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


Handler = Callable[[Caller, dict[str, Any]], "ToolReply | str"]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: Handler
    title: str | None = None
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    output_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str
    required: bool = True


@dataclass(frozen=True)
class Prompt:
    name: str
    description: str
    arguments: tuple[PromptArgument, ...]
    # Returns (role, text) messages; raises ToolFailure for a bad argument.
    render: Callable[[Mapping[str, str]], list[tuple[Literal["user", "assistant"], str]]]
    title: str | None = None


@dataclass(frozen=True)
class ToolSet:
    """One MCP server: its identity, its tools and prompts, and how it words an unexpected failure."""

    name: str
    version: str
    instructions: str
    tools: tuple[Tool, ...]
    internal_error_text: str
    prompts: tuple[Prompt, ...] = ()
    # Called once a stdio server's setup is done (after its handshake): work to start in the background.
    warm_up: Callable[[], None] | None = None
    by_name: dict[str, Tool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {tool.name: tool for tool in self.tools})
