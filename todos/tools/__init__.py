"""The Todos MCP server: the seed's six tools, three extensions and the ``start_workspace`` prompt.

Each tool reads its arguments against its own input schema, calls one service or selector, and answers
with the JSON text the seed shows (compact) plus the same data as structured content. Lists are bare
arrays in the text and ``{"todos": [...]}`` in structured content, whose root must be an object.

The modules: ``schemas`` (the Todo answer and the ids), ``arguments`` and ``replies`` (what every tool reads
and answers through), ``fields`` and ``filters`` (the input the REST API reads the same way), the tools by theme
(``list_info``, ``todo``, ``listing``, ``claims``), the ``workspace`` prompt, and ``toolset``, the server itself.
"""

from todos.tools.toolset import TOOLSET

__all__ = ["TOOLSET"]
