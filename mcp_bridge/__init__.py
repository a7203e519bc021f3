"""The MCP bridge: apps register ToolSets; this package serves them over Streamable HTTP and stdio."""
