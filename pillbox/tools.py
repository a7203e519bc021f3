from config.mcp.tools import ToolSet

TOOLSET = ToolSet(name="pillbox", version="0.1.0", instructions="", internal_error_text="", tools=())
